// The names shown in .seafile-history and .seafile-trash. A version or a
// trash entry is named by its time first, so that `ls` sorts them in time:
// "2026-11-23 10.15.00 report.docx". The time is the mount's local time (as
// `ls -l` shows the mtime column), dots instead of colons (names stay usable
// over SMB and in scp arguments). Two entries of the same second get "-2",
// "-3" after the time ("10.15.00-2 report.docx", sorted after the first).
// A trash entry names its whole former path with each "/" written as "%2F"
// (and "%" as "%25"): "2026-11-23 10.15.00 docs%2Freport.docx".

const pad = (n: number) => String(n).padStart(2, '0');

/** "YYYY-MM-DD HH.MM.SS" in the local time zone */
export function stamp(ms: number): string {
  const d = new Date(ms);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}.${pad(d.getMinutes())}.${pad(d.getSeconds())}`
  );
}

/** a library path as one name: "/docs/a%b.txt" -> "docs%2Fa%25b.txt" */
export function flatPath(path: string): string {
  return path.replace(/^\/+/, '').replace(/%/g, '%25').replace(/\//g, '%2F');
}

const MAX_NAME_BYTES = 255;

/** `name` cut from the front (after a "…") so that "<head> <name>" fits in a file name */
function fit(head: string, name: string): string {
  const whole = `${head} ${name}`;
  if (Buffer.byteLength(whole) <= MAX_NAME_BYTES) return whole;
  const chars = [...name];
  while (chars.length > 1 && Buffer.byteLength(`${head} …${chars.join('')}`) > MAX_NAME_BYTES) chars.shift();
  return `${head} …${chars.join('')}`;
}

/**
 * Unique names for items taken in time order (oldest first): "<time> <label>",
 * "<time>-2 <label>" for the second one of the same second and label. Returns
 * the names in the items' order.
 */
export function timeNames(items: { ms: number; label: string }[]): string[] {
  const used = new Set<string>();
  return items.map(({ ms, label }) => {
    const t = stamp(ms);
    let name = fit(t, label);
    for (let n = 2; used.has(name); n++) name = fit(`${t}-${n}`, label);
    used.add(name);
    return name;
  });
}
