// The name a conflict copy gets, as Seafile's own clients name them, so users
// (and Seafile's desktop client) recognise it: `report (SFConflict alice@example.com
// 2026-11-23-10-15-00).docx`, the time being the local version's modification time
// in the mount's local time zone. The extension is kept last so the copy still opens
// in the same application; a leading dot (`.bashrc`) is not an extension.

const pad = (n: number) => String(n).padStart(2, '0');

/** `YYYY-MM-DD-HH-MM-SS` in local time. */
export function conflictStamp(when: Date): string {
  return (
    `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}-` +
    `${pad(when.getHours())}-${pad(when.getMinutes())}-${pad(when.getSeconds())}`
  );
}

/** The conflict copy's name for `name`, by `author` (empty: no author part), at `when`; `n` > 1 is added after the stamp. */
export function conflictName(name: string, author: string, when: Date, n = 1): string {
  const tag = `SFConflict ${author ? `${author} ` : ''}${conflictStamp(when)}${n > 1 ? ` ${n}` : ''}`;
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return `${name} (${tag})`;
  return `${name.slice(0, dot)} (${tag})${name.slice(dot)}`;
}

/** A conflict name that `taken` does not hold (two conflicts of one file within a second get ` 2`, ` 3`...). */
export function freeConflictName(name: string, author: string, when: Date, taken: (n: string) => boolean): string {
  for (let n = 1; ; n++) {
    const c = conflictName(name, author, when, n);
    if (!taken(c)) return c;
  }
}
