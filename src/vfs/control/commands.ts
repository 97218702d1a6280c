// What commands sent to the mount process ask of the vfs beyond the FUSE
// operations: `seafs unlock` (a library's password in all-libraries mode),
// `seafs lock` / `seafs unlock-file` (also the user.seafile.lock attribute),
// `seafs restore FILE --at TIME`.
import type { Library } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { setServerLock } from '../common/file-locks.js';
import { writable } from '../libraries/library-paths.js';
import { refuseLocked } from '../copies/editable-copy.js';
import type { VfsComponents } from '../components.js';
import { parentOf } from '../common/paths.js';

/**
 * All-libraries mode: unlock the library shown as `name` at the root (or
 * with that id) with its password, held in memory from then on; uploads
 * waiting for it go now. Returns the library.
 */
export async function unlockByName(
  c: Pick<VfsComponents, 'libraries' | 'locks' | 'listingCache' | 'writeBack'>,
  name: string,
  password: string,
): Promise<Library> {
  const libs = await c.libraries.byName();
  const lib = libs.get(name) ?? [...libs.values()].find((l) => l.id === name || l.name === name);
  if (!lib) throw new VfsError('ENOENT', `no library "${name}" at the root of this mount`);
  if (!lib.encrypted) throw new VfsError('EINVAL', `the library "${lib.name}" is not encrypted`);
  await c.locks.unlock(lib, password);
  c.listingCache.invalidateTree(lib.id, '/');
  c.writeBack.retryNow();
  return lib;
}

/** Lock (or unlock) a file on the server for this account. */
export async function setFileLock(
  c: Pick<VfsComponents, 'libraries' | 'api' | 'listingCache' | 'host'>,
  p: string,
  on: boolean,
): Promise<void> {
  const loc = await c.libraries.repoOf(p);
  const e = await c.host.lookup(loc.repo, loc.path);
  if (!e) throw new VfsError('ENOENT', p);
  if (e.type !== 'file') throw new VfsError('EISDIR', p);
  await setServerLock(c.api, loc.repo, loc.path, on);
  c.listingCache.invalidate(loc.repo, parentOf(loc.path));
}

/** The file's version current at `atMs` becomes current again (hidden/history.ts). */
export async function restoreFileVersion(
  c: Pick<VfsComponents, 'libraries' | 'writeBack' | 'hiddenDirs' | 'host'>,
  p: string,
  atMs: number,
) {
  const loc = await c.libraries.repoOf(p);
  writable(loc);
  const e = await c.host.lookup(loc.repo, loc.path);
  if (!e) throw new VfsError('ENOENT', p);
  if (e.type !== 'file') throw new VfsError('EISDIR', p);
  refuseLocked(p, e);
  // local data would be uploaded over the restored version (or read instead of it)
  if (c.writeBack.get(loc.repo, loc.path)) throw new VfsError('EAGAIN', `${p} is open or not uploaded yet; try again`);
  return c.hiddenDirs.history.restore(loc.repo, loc.path, atMs);
}
