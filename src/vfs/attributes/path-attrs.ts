// The attributes of a path as stat(2) shows them (getattr, and its synchronous
// forms for a tree walk), a folder's names (readdir) and access(2). Local data
// and links shadow the server's entries; hidden folders answer for themselves.
import { constants as C } from 'node:fs';
import type { Attr } from '../common/stat-attrs.js';
import { baseOf, parentOf } from '../common/paths.js';
import { lockedByOther } from '../copies/editable-copy.js';
import type { VfsCore } from '../core.js';
import { VfsError } from '../errors.js';
import { folderListing, lookupEntry } from './lookups.js';

/**
 * getattr answered at once from what the mount holds (a fresh listing of the parent, or a file being
 * written), or null when it needs to wait (then getattr). A tree walk asks this for every file, and the
 * promise chain of getattr cost as much as the binding's own work per call.
 */
export function getattrNow({ parts, links }: VfsCore, p: string): Attr | null {
  const loc = parts.libraries.resolveNow(p);
  if (!loc || loc.path === '/') return null;
  const attrs = parts.attrs;
  if (links) {
    const link = links.now(loc.repo, loc.path);
    if (link === undefined) return null;
    if (link) return attrs.link(link.size, link.mtimeMs);
  }
  const s = parts.writeBack.get(loc.repo, loc.path);
  if (s) return attrs.file(s.size, Math.floor(s.mtime / 1000) * 1000, loc.readOnly);
  if (parts.unlinked.has(loc.repo, loc.path)) return null;
  const dir = parentOf(loc.path);
  const l = parts.listingCache.peek(loc.repo, dir);
  if (!l || !parts.listingCache.fresh(l)) return null;
  parts.listingCache.noteUse(loc.repo, dir, l);
  const e = l.entries.get(baseOf(loc.path));
  if (!e) return null;
  if (e.type === 'dir') return attrs.dir(e.mtime, loc.readOnly);
  return attrs.file(e.size ?? 0, (e.mtime || 0) * 1000, loc.readOnly || lockedByOther(e));
}

/**
 * Whether the mount knows that nothing is at `p` without asking: a fresh
 * listing of the parent that lacks it, and no local file or hidden folder
 * there (the lookup of every new file's name, before its create).
 */
export function absentNow({ parts, links }: VfsCore, p: string): boolean {
  const loc = parts.libraries.resolveNow(p);
  if (!loc || loc.path === '/' || loc.path.startsWith('/.seafile-')) return false;
  if (parts.writeBack.get(loc.repo, loc.path) || parts.unlinked.has(loc.repo, loc.path)) return false;
  if (links && links.now(loc.repo, loc.path) !== null) return false;
  const l = parts.listingCache.peek(loc.repo, parentOf(loc.path));
  return !!l && parts.listingCache.fresh(l) && !l.entries.has(baseOf(loc.path));
}

export async function getattr({ parts, links }: VfsCore, p: string): Promise<Attr> {
  const attrs = parts.attrs;
  const loc = await parts.libraries.resolve(p);
  if (loc.repo === null) return attrs.dir(0, true);
  if (loc.path === '/') {
    const lib = await parts.libraries.byId(loc.repo);
    return attrs.dir(lib?.mtime ?? 0, loc.readOnly);
  }
  const hid = await parts.hiddenDirs.at(loc);
  if (hid) return hid.attr;
  // a link shadows a file or folder of its name without the suffix, as in rclone's mount
  const link = await links?.at(loc.repo, loc.path);
  if (link) return attrs.link(link.size, link.mtimeMs);
  const s = parts.writeBack.get(loc.repo, loc.path);
  // whole seconds, as the server keeps them: no change of mtime once the file is uploaded
  if (s) return attrs.file(s.size, Math.floor(s.mtime / 1000) * 1000, loc.readOnly);
  const gone = parts.unlinked.get(loc.repo, loc.path);
  if (gone) return attrs.file(gone.size, gone.mtimeMs, loc.readOnly);
  const e = await lookupEntry(parts, loc.repo, loc.path);
  if (!e) throw new VfsError('ENOENT', p);
  if (e.type === 'dir') return attrs.dir(e.mtime, loc.readOnly);
  return attrs.file(e.size ?? 0, (e.mtime || 0) * 1000, loc.readOnly || lockedByOther(e));
}

export async function readdir({ parts, links }: VfsCore, p: string): Promise<string[]> {
  const loc = await parts.libraries.resolve(p);
  if (loc.repo === null) return [...(await parts.libraries.byName()).keys()];
  if (loc.path === '/') await parts.libraries.guardRoot(p);
  const hid = await parts.hiddenDirs.at(loc);
  if (hid?.kind === 'dir') return hid.list();
  if (hid) throw new VfsError('ENOTDIR', p);
  const l = await folderListing(parts, loc.repo, loc.path);
  parts.thumbnails?.listed(p, loc.repo, loc.path, l.entries);
  const names = new Set(l.entries.keys());
  for (const n of parts.writeBack.childrenOf(loc.repo, loc.path)) names.add(n);
  return links ? links.shown(names, l) : [...names];
}

export async function access(core: VfsCore, p: string, mode: number): Promise<void> {
  const loc = await core.parts.libraries.resolve(p);
  const attr = await getattr(core, p);
  if (mode & C.W_OK && loc.readOnly) throw new VfsError('EROFS');
  if (mode & C.W_OK) await core.parts.hiddenDirs.refuse(loc);
  // a file locked by someone else shows without write bits
  if (mode & C.W_OK && (attr.mode & 0o222) === 0) throw new VfsError('EACCES', `${p} is locked`);
}
