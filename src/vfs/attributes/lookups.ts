// Path lookups of the vfs: a folder's listing (every ancestor checked to be a
// folder) and the remote entry at a path, from its parent's listing.
import type { DirEntry } from '../../client/types.js';
import type { VfsComponents } from '../components.js';
import { VfsError } from '../errors.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { Listing } from '../listings/listing-cache.js';

/** The listing of a folder, checking that every ancestor is a folder. */
export async function folderListing(parts: VfsComponents, repo: string, dir: string): Promise<Listing> {
  const cache = parts.listingCache;
  const cached = cache.peek(repo, dir);
  if (cached && cache.fresh(cached)) {
    cache.noteUse(repo, dir, cached);
    return cached;
  }
  if (dir !== '/') {
    const e = await lookupEntry(parts, repo, dir);
    if (!e) throw new VfsError('ENOENT', dir);
    if (e.type !== 'dir') throw new VfsError('ENOTDIR', dir);
  }
  return cache.list(repo, dir);
}

/** The remote entry at a path, from its parent's listing; null when absent. */
export async function lookupEntry(parts: VfsComponents, repo: string, path: string): Promise<DirEntry | null> {
  if (path === '/') return { type: 'dir', name: '', id: '', mtime: 0 };
  const l = await folderListing(parts, repo, parentOf(path));
  return l.entries.get(baseOf(path)) ?? null;
}
