// The commit of a file uploaded by blocks, after its last close: the blocks
// without an id are hashed a group at a time (all but the last group asked
// about and sent as they come: a recovery or a big rewrite), then the server
// is asked about every block of the file, sent those it lacks, and the file
// is committed from its list of ids with replace=1. A block gone missing
// between the ask and the commit (446; 443 from the C fileserver) is asked
// about once more; a second 446 turns blocks off for this server.
import { ApiError } from '../../../client/errors.js';
import type { BlockPiece, SeafileApi } from '../../../client/types.js';
import type { FileState } from '../file-state.js';
import type { BlockMap } from './block-map.js';
import type { BlockProgress, BlockSender, BlockStats } from './block-sender.js';
import { NoBlocks, type BlockSupport } from './block-support.js';
import type { Hasher } from '../../common/block-hasher.js';

export interface CommitDeps {
  api: SeafileApi;
  hasher: Hasher;
  sender: BlockSender;
  support: BlockSupport;
  stats: BlockStats;
  blockSize: number;
}

/** Sends what the server lacks of `s` and commits it as `name` in `dir`; the new file id and its block ids. */
export async function commitBlocks(
  d: CommitDeps,
  s: FileState,
  m: BlockMap,
  repo: string,
  dir: string,
  name: string,
  size: number,
  progress: BlockProgress,
): Promise<{ id: string; ids: string[] }> {
  const { hasher, sender, stats } = d;
  const ids: (string | null)[] = m.ids.slice(0, m.count(size));
  const unknown = m.unknown().filter((i) => i < ids.length);
  // blocks without an id: hashed a group at a time; all but the last group asked about and
  // sent as they come (a recovery or a big rewrite), the last group's bytes kept for the commit's ask
  const held = new Map<string, Buffer>();
  const g = sender.group();
  let prev: Promise<void> = Promise.resolve();
  for (let k = 0; k < unknown.length; k += g) {
    const idx = unknown.slice(k, k + g);
    const gens = idx.map((i) => m.gen[i]);
    const hashed = await sender.hashKept(s.tmp, m, idx, size);
    const pieces: BlockPiece[] = [];
    idx.forEach((i, j) => {
      ids[i] = hashed[j].id;
      if (m.gen[i] === gens[j]) m.ids[i] = hashed[j].id;
      pieces.push({ id: hashed[j].id, offset: 0, length: hashed[j].data!.length, data: hashed[j].data });
    });
    await prev;
    if (k + g >= unknown.length) {
      for (const p of pieces) held.set(p.id, p.data!);
      break;
    }
    prev = (async () => {
      const want: BlockPiece[] = [];
      for (const p of pieces)
        if (m.onServer.has(p.id)) hasher.release(p.data);
        else want.push(p);
      if (want.length === 0) return;
      await sender.askAndSend(repo, dir, want, m, progress);
    })();
    prev.catch(() => {}); // awaited before the next group, and after the loop
  }
  await prev;
  const all = ids as string[];
  for (let attempt = 0; ; attempt++) {
    const link = await sender.ask(repo, dir, all);
    const lacking = new Set(link.missing);
    progress.onServer = all.filter((id) => !lacking.has(id)).length;
    for (const id of all) if (!lacking.has(id)) m.onServer.add(id);
    const pieces: BlockPiece[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < all.length; i++) {
      const id = all[i];
      if (!lacking.has(id) || seen.has(id)) continue;
      seen.add(id);
      const data = held.get(id);
      pieces.push(
        data
          ? { id, offset: 0, length: data.length, data }
          : { id, offset: i * d.blockSize, length: m.lengthOf(i, size), path: s.tmp },
      );
    }
    progress.toSend = pieces.reduce((n, p) => n + p.length, 0);
    stats.blocksSkipped += new Set(all.filter((id) => !lacking.has(id) && !m.sent.has(id))).size;
    await sender.send(link, pieces, repo, m, progress);
    // the held bytes not sent go back to the hasher (send gave back those it sent)
    const sentData = new Set(pieces.map((p) => p.data));
    for (const data of held.values()) if (!sentData.has(data)) hasher.release(data);
    held.clear();
    try {
      const id = await d.api.commitBlocks!(link.commitUrl, {
        parentDir: dir,
        name,
        size,
        ids: all,
        replace: true,
        lastModify: s.mtime,
        repoId: repo,
      });
      return { id, ids: all };
    } catch (e) {
      // a block went missing since the ask (garbage collection, a cut request): ask again, once;
      // the C fileserver answers a missing block with 443 (its quota check stats each block first)
      if (!(e instanceof ApiError) || (e.status !== 446 && e.status !== 443)) throw e;
      if (attempt > 0) {
        if (e.status === 446) {
          d.support.turnOff(
            `the commit of ${dir === '/' ? '' : dir}/${name} found blocks missing after they were sent`,
          );
          throw new NoBlocks();
        }
        throw e;
      }
      m.onServer.clear();
    }
  }
}
