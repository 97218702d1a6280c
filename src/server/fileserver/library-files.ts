// Whether an id names a file of a library: a file entry of the tree of its
// head or of a commit of its history. Real servers look the id up in the
// library's own object store (access-file.c access_blks_cb), which holds what
// the library ever had; this store is shared by every library, so the
// library's trees are walked instead, each folder once (commits share most).
import { LRUCache } from 'lru-cache';
import type { Ctx } from '../context.js';
import { ZERO_ID, type ObjectStore } from '../store/objects.js';
import { readDir } from '../store/tree.js';

/** commits walked at most per question, as the history views do */
const MAX_COMMITS = 10_000;

/** per store, `repo\nfile` found already (a library never loses a file of its history) */
const found = new WeakMap<ObjectStore, LRUCache<string, true>>();

export async function isFileOfLibrary(ctx: Ctx, repoId: string, fileId: string): Promise<boolean> {
  let hits = found.get(ctx.store);
  if (!hits) found.set(ctx.store, (hits = new LRUCache<string, true>({ max: 4096 })));
  const key = `${repoId}\n${fileId}`;
  if (hits.has(key)) return true;
  const seen = new Set<string>();
  const inDir = async (dirId: string): Promise<boolean> => {
    if (dirId === ZERO_ID || seen.has(dirId)) return false;
    seen.add(dirId);
    for (const e of await readDir(ctx.store, dirId)) {
      if (e.type === 'file' ? e.id === fileId : await inDir(e.id)) return true;
    }
    return false;
  };
  try {
    let commit: string | null = (await ctx.heads.get(repoId)).commit_id;
    for (let n = 0; commit && n < MAX_COMMITS; n++) {
      const c = await ctx.heads.readCommit(commit);
      if (await inDir(c.root_id)) {
        hits.set(key, true);
        return true;
      }
      commit = c.parent_id;
    }
  } catch {
    // a library deleted meanwhile, or an object missing from the store: not found
  }
  return false;
}
