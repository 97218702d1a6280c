// mkdir(2) and rmdir(2). A new folder is answered at once and made on the
// server in the background (write/pending-folders.ts); a folder is removed
// only when empty on the server (asked afresh) and here.
import { ZERO_ID } from '../../client/types.js';
import { knownFilesUnder } from '../remove/mass-delete-guard.js';
import { VfsError } from '../errors.js';
import { writable } from '../libraries/library-paths.js';
import type { VfsComponents } from '../components.js';
import { baseOf, checkFolderName, checkName, parentOf, serverMayRefuseName } from '../common/paths.js';
import { strictNameProblem } from '../common/server-rules.js';

export async function makeFolder(
  c: Pick<VfsComponents, 'libraries' | 'hiddenDirs' | 'writeBack' | 'listingCache' | 'host'> &
    Partial<Pick<VfsComponents, 'rules'>>,
  p: string,
): Promise<void> {
  const loc = await c.libraries.repoOf(p, true);
  if (loc.path === '/') throw new VfsError('EEXIST');
  writable(loc);
  await c.hiddenDirs.refuse(loc);
  const name = baseOf(loc.path);
  checkName(name);
  checkFolderName(name);
  c.rules?.checkName(name);
  const dir = parentOf(loc.path);
  const l = await c.host.dir(loc.repo, dir);
  if (l.entries.has(name) || c.writeBack.get(loc.repo, loc.path)) throw new VfsError('EEXIST', p);
  // answered now, created on the server in the background (write/pending-folders.ts)
  // a name a newer server refuses is created before mkdir answers, so a refusal is an EINVAL, never a retry
  const mayBeRefused = serverMayRefuseName(name) || strictNameProblem(name) !== null;
  if (!(mayBeRefused && (await c.writeBack.folders.createNow(loc.repo, loc.path))))
    c.writeBack.folders.add(loc.repo, loc.path);
  c.listingCache.upsert(loc.repo, dir, { type: 'dir', name, id: ZERO_ID, mtime: Math.floor(Date.now() / 1000) });
  c.listingCache.setEmpty(loc.repo, loc.path);
}

export async function removeFolder(
  c: Pick<
    VfsComponents,
    'libraries' | 'hiddenDirs' | 'writeBack' | 'listingCache' | 'api' | 'mtimes' | 'deleteGuard' | 'host'
  >,
  p: string,
): Promise<void> {
  const loc = await c.libraries.repoOf(p, true);
  if (loc.path === '/') throw new VfsError('EPERM', 'a library is removed on the server, not here');
  writable(loc);
  await c.hiddenDirs.refuse(loc);
  const e = await c.host.lookup(loc.repo, loc.path);
  if (!e) {
    if (c.writeBack.get(loc.repo, loc.path)) throw new VfsError('ENOTDIR', p);
    throw new VfsError('ENOENT', p);
  }
  if (e.type !== 'dir') throw new VfsError('ENOTDIR', p);
  const folders = c.writeBack.folders;
  // a folder made here: its creation is waited for; one the server never took is removed here only
  if (folders.pendingAt(loc.repo, loc.path)) await folders.ready(loc.repo, loc.path).catch(() => {});
  await ensureEmpty(c, loc.repo, loc.path);
  c.deleteGuard.admit(knownFilesUnder(c.listingCache, loc.repo, loc.path), p);
  if (folders.has(loc.repo, loc.path)) await folders.drop(loc.repo, loc.path);
  else await c.api.deleteDir(loc.repo, loc.path);
  c.mtimes.removed(loc.repo, loc.path);
  c.listingCache.remove(loc.repo, parentOf(loc.path), baseOf(loc.path));
  c.listingCache.invalidateTree(loc.repo, loc.path);
  c.hiddenDirs.changed(loc.repo);
}

/** ENOTEMPTY unless the folder is empty on the server (checked afresh) and locally. */
export async function ensureEmpty(
  c: Pick<VfsComponents, 'writeBack' | 'listingCache'>,
  repo: string,
  path: string,
): Promise<void> {
  if (c.writeBack.childrenOf(repo, path).length > 0) throw new VfsError('ENOTEMPTY', path);
  if (c.writeBack.folders.childrenOf(repo, path).length > 0) throw new VfsError('ENOTEMPTY', path);
  const l = await c.listingCache.list(repo, path, true);
  if (l.entries.size > 0) throw new VfsError('ENOTEMPTY', path);
}
