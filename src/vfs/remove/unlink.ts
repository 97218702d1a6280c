// Deleting files: unlink(2), and the libfuse rename of a file unlinked while
// still open to .fuse_hiddenNNN, which deletes it on the server at once
// (never shown under the hidden name, never uploaded again) while open
// handles keep using the local data (remove/unlinked-open.ts).
import type { DirEntry } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { writable } from '../libraries/library-paths.js';
import type { VfsComponents } from '../components.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { FileState } from '../write/write-back.js';

type Deps = Pick<VfsComponents, 'api' | 'writeBack' | 'mtimes' | 'listingCache' | 'hiddenDirs'>;

/** Delete a file (remote and local state) at a location known to hold one. */
export async function removeFile(
  c: Deps,
  repo: string,
  path: string,
  s: FileState | undefined,
  e: DirEntry | null,
): Promise<void> {
  let remote: string | null = e ? path : null;
  if (s) remote = (await c.writeBack.discard(s)) ?? remote;
  if (remote) await c.api.deleteFile(repo, remote);
  c.mtimes.removed(repo, path);
  c.listingCache.remove(repo, parentOf(path), baseOf(path));
  c.hiddenDirs.changed(repo);
}

export async function unlinkFile(
  c: Deps & Pick<VfsComponents, 'quota' | 'libraries' | 'unlinked' | 'deleteGuard' | 'host'>,
  p: string,
): Promise<void> {
  c.quota.forget(); // space is freed: the next quota check asks afresh
  const loc = await c.libraries.repoOf(p, true);
  if (loc.path === '/') throw new VfsError('EPERM');
  writable(loc);
  await c.hiddenDirs.refuse(loc);
  if (c.unlinked.delete(loc.repo, loc.path)) return;
  const s = c.writeBack.get(loc.repo, loc.path);
  const e = await c.host.lookup(loc.repo, loc.path);
  if (!s && !e) throw new VfsError('ENOENT', p);
  if (!s && e?.type === 'dir') throw new VfsError('EISDIR', p);
  c.deleteGuard.admit(e || s?.remotePath ? 1 : 0, p);
  await removeFile(c, loc.repo, loc.path, s, e);
}

/** The file at `src`, unlinked while open, goes away here and on the server; `hiddenPath` shows it until closed. */
export async function hideOpenFile(
  c: Deps & Pick<VfsComponents, 'unlinked' | 'deleteGuard' | 'host'>,
  repo: string,
  src: string,
  hiddenPath: string,
): Promise<void> {
  const s = c.writeBack.get(repo, src);
  const e = await c.host.lookup(repo, src);
  if (!s && !e) throw new VfsError('ENOENT', src);
  const size = s ? s.size : (e!.size ?? 0);
  const mtimeMs = s ? s.mtime : e!.mtime * 1000;
  c.deleteGuard.admit(e || s?.remotePath ? 1 : 0, src);
  c.unlinked.set(repo, hiddenPath, { size, mtimeMs });
  await removeFile(c, repo, src, s, e);
}
