// A file's local copy made from the server's for a change that does not
// start with an open for writing (truncate(2); a new modification time in
// mtimes/set-mtime.ts), and the files locked on the server by another account,
// which this mount shows read-only and refuses to change.
import { ZERO_ID, type DirEntry } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { writable } from '../libraries/library-paths.js';
import type { VfsComponents } from '../components.js';
import { checkChangeAt } from '../common/paths.js';
import type { RemoteFile } from '../read/reader.js';
import type { FileState } from '../write/write-back.js';

/** A file locked on the server by another account: this mount shows it read-only and refuses to write it. */
export function lockedByOther(e: DirEntry): boolean {
  return e.type === 'file' && e.is_locked === true && e.locked_by_me !== true;
}

export function refuseLocked(p: string, e: DirEntry): void {
  if (lockedByOther(e)) throw new VfsError('EACCES', `${p} is locked by ${e.lock_owner || 'another user'}`);
}

/** The server's file at `path` as the reader knows it (by its id, or its time and size when it has none). */
export function remoteFileOf(repo: string, path: string, e: DirEntry): RemoteFile {
  const size = e.size ?? 0;
  const version = e.id && e.id !== ZERO_ID ? e.id : `${repo}:${path}@${e.mtime}:${size}`;
  return { repo, path, size, version };
}

/** The local data of the clean file `e`, downloaded first unless `empty` (it is about to be cut to nothing). */
export function localCopy(
  c: Pick<VfsComponents, 'writeBack' | 'reader'>,
  repo: string,
  path: string,
  e: DirEntry,
  empty: boolean,
): Promise<FileState> {
  const remote = remoteFileOf(repo, path, e);
  return c.writeBack.openExisting(repo, path, { size: remote.size, mtimeMs: e.mtime * 1000, id: e.id }, empty, (dest) =>
    c.reader.downloadWhole(remote, dest),
  );
}

/** truncate(2) of a path (not of an open handle). */
export async function truncatePath(
  c: Pick<VfsComponents, 'libraries' | 'hiddenDirs' | 'writeBack' | 'reader' | 'host'>,
  p: string,
  size: number,
): Promise<void> {
  const loc = await c.libraries.repoOf(p);
  writable(loc);
  checkChangeAt(loc.path);
  await c.hiddenDirs.refuse(loc);
  let s = c.writeBack.get(loc.repo, loc.path);
  if (!s) {
    const e = await c.host.lookup(loc.repo, loc.path);
    if (!e) throw new VfsError('ENOENT', p);
    if (e.type === 'dir') throw new VfsError('EISDIR', p);
    refuseLocked(p, e);
    if ((e.size ?? 0) === size) return;
    s = await localCopy(c, loc.repo, loc.path, e, size === 0);
  }
  if (s.size !== size || size === 0) await c.writeBack.truncate(s, size);
  // `> file` truncates and then opens: give the open a moment before uploading
  if (s.writers === 0) c.writeBack.scheduleSoon(s, 1000);
}
