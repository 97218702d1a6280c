// Office programs' lock files, turned into server locks as SeaDrive does:
// while LibreOffice has NAME open it keeps `.~lock.NAME#` beside it, and Word
// keeps `~$NAME` (with one or two of NAME's first characters dropped when the
// name is long: `~$cument.docx` for `Document.docx`). When such a file is
// created through the mount, NAME is locked on the server, so that others see
// it read-only; when it is deleted (or renamed away), the lock this mount took
// is released. A file someone else has locked, or this account had locked
// already, is left as it is. Servers without locks: nothing happens. Failures
// are logged once per file, never returned to the program that made the lock
// file (its own locking works as before).
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { locksSupported, setServerLock } from '../common/file-locks.js';
import { baseOf, joinPath, parentOf } from '../common/paths.js';

/** The name a lock file stands for, as a test on a sibling's name; null: not an Office lock file. */
export function lockFileTarget(name: string): ((sibling: string) => boolean) | null {
  const libre = /^\.~lock\.(.+)#$/s.exec(name);
  if (libre) return (s) => s === libre[1];
  const word = /^~\$(.+)$/s.exec(name);
  if (word) {
    const rest = word[1];
    return (s) =>
      s === rest ||
      (s.length === rest.length + 1 && s.slice(1) === rest) ||
      (s.length === rest.length + 2 && s.slice(2) === rest);
  }
  return null;
}

export interface OfficeLockDeps {
  api: SeafileApi;
  /** the server's entries of a folder */
  entries(repo: string, dir: string): Promise<Iterable<DirEntry>>;
  log(line: string): void;
}

export class OfficeLockFiles {
  /** `${repo}\0${lock file path}` -> the path this mount locked for it */
  private readonly held = new Map<string, string>();

  constructor(private readonly d: OfficeLockDeps) {}

  /** A file was created at (repo, path): when it is an Office lock file, its document is locked. */
  async created(repo: string, path: string): Promise<void> {
    const matches = lockFileTarget(baseOf(path));
    if (!matches) return;
    const key = `${repo}\u0000${path}`;
    if (this.held.has(key)) return;
    try {
      const dir = parentOf(path);
      const docs = [...(await this.d.entries(repo, dir))].filter((e) => e.type === 'file' && matches(e.name));
      // the exact name first (LibreOffice, short Word names)
      const doc = docs.sort((a, b) => b.name.length - a.name.length).pop();
      if (!doc || doc.is_locked || !(await locksSupported(this.d.api))) return;
      const target = joinPath(dir, doc.name);
      await setServerLock(this.d.api, repo, target, true);
      this.held.set(key, target);
      this.d.log(`${target}: locked on the server while ${baseOf(path)} exists (an Office program has it open)`);
    } catch (e) {
      this.d.log(`${path}: the document it stands for could not be locked: ${(e as Error).message}`);
    }
  }

  /** A file at (repo, path) was deleted or renamed away: a lock taken for it is released. */
  async removed(repo: string, path: string): Promise<void> {
    const key = `${repo}\u0000${path}`;
    const target = this.held.get(key);
    if (target === undefined) return;
    this.held.delete(key);
    try {
      await setServerLock(this.d.api, repo, target, false);
      this.d.log(`${target}: unlocked (${baseOf(path)} is gone)`);
    } catch (e) {
      this.d.log(`${target}: could not be unlocked: ${(e as Error).message}`);
    }
  }

  /** how many documents this mount holds locked for lock files */
  get count(): number {
    return this.held.size;
  }
}
