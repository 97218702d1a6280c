// A pinned folder's recursive listing: the files it holds (what the pin
// keeps), and its folders, given to the listing cache so the tree reads
// offline.
import type { DirEntry } from '../../client/types.js';
import { ZERO_ID } from '../../client/types.js';
import { isWithin, joinPath } from '../common/paths.js';

/** the listing cache's side that takes listings fetched elsewhere (listings/listing-cache.ts seed) */
export interface ListingSeeds {
  seed(repo: string, dir: string, oid: string | null, entries: DirEntry[], sinceSeq: number): void;
  readonly changeSeq: number;
}

/** files of a recursive listing: path -> entry, and the folders' entries by folder */
export function treeOf(
  root: string,
  entries: DirEntry[],
): { files: Map<string, DirEntry>; dirs: Map<string, DirEntry[]> } {
  const files = new Map<string, DirEntry>();
  const dirs = new Map<string, DirEntry[]>([[root, []]]);
  for (const e of entries) {
    const parent = e.parent_dir ?? root;
    const path = joinPath(parent, e.name);
    if (!isWithin(path, root)) continue;
    let list = dirs.get(parent);
    if (!list) dirs.set(parent, (list = []));
    list.push(e);
    if (e.type === 'file') files.set(path, e);
    else if (!dirs.has(path)) dirs.set(path, []);
  }
  return { files, dirs };
}

/** Puts the folders of a tree listed at `root` (folder id `oid`) into the listing cache. */
export function seedTree(
  meta: ListingSeeds,
  repo: string,
  root: string,
  oid: string | null,
  dirs: Map<string, DirEntry[]>,
  since: number,
): void {
  const oids = new Map<string, string | null>([[root, oid]]);
  for (const [dir, list] of dirs)
    for (const e of list) if (e.type === 'dir') oids.set(joinPath(dir, e.name), e.id === ZERO_ID ? ZERO_ID : e.id);
  for (const [dir, list] of dirs) meta.seed(repo, dir, oids.get(dir) ?? null, list, since);
}
