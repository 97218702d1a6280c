// Fetches a whole file version into the disk cache for a pin: only the
// chunks the cache lacks (so a download cut short by a kill, an unmount or an
// outage goes on where it stopped: the cache's markers say what it has), one
// ranged GET per missing run, written with the cache's back-pressure (the body
// waits while the disk is behind, so memory stays at the cache's write queue).
// Blocks another cached version holds (the same Seafile block id) are copied
// in first (block-reuse.ts), so a pinned file another client changed in one
// block downloads about that block.
import type { ChunkCache } from '../read/chunk-cache/chunk-cache.js';
import type { BlockReuse } from '../read/block-reuse.js';
import { ChunkAssembler } from '../read/chunk-assembler.js';
import type { DownloadLinks } from '../read/download-links.js';
import type { RemoteFile } from '../read/types.js';
import { unreachable } from '../common/connectivity.js';
import { retryable, VfsError } from '../errors.js';

const MARK_EVERY = 2 * 1024 * 1024;

/** runs of chunks [a, b] the cache does not hold */
function missingRuns(disk: ChunkCache, version: string, chunks: number): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < chunks; i++) {
    if (disk.stored(version, i)) continue;
    const a = i;
    while (i + 1 < chunks && !disk.stored(version, i + 1)) i++;
    runs.push([a, i]);
  }
  return runs;
}

export interface FetchControl {
  /** the cache holds part of the file already (a download cut short before): `have` of `of` chunks */
  onResume?(have: number, of: number): void;
  /** true once the fetch should stop (unpinned, a newer version, closing) */
  stopped(): boolean;
  /** bytes received, as they come */
  onBytes(n: number): void;
}

/**
 * Brings every chunk of `f` into the disk cache; resolves once they are all
 * written and marked (true), or false when told to stop. Throws what the
 * network threw (an unreachable server, an error answer), or EIO when the
 * cache could not write them.
 */
export async function fetchWhole(
  disk: ChunkCache,
  links: DownloadLinks,
  f: RemoteFile,
  ctl: FetchControl,
  reuse: BlockReuse | null = null,
): Promise<boolean> {
  const version = f.version;
  disk.reconsider(version);
  await disk.open(version, f.size);
  if (f.size === 0) return true;
  const C = disk.chunkBytes;
  const chunks = Math.ceil(f.size / C);
  if (reuse) {
    // reserves what other versions hold of it, and copies that in (what fails is fetched below)
    await reuse.prepare(f, () => links.link(f));
    await (reuse.bring(version, 0, chunks - 1) || undefined);
  }
  const held = disk.held(version);
  if (held.have > 0 && held.have < held.of) ctl.onResume?.(held.have, held.of);
  // the markers of what came are written every MARK_EVERY bytes (the cache would wait a second): a kill
  // or a crash then costs at most that much of a large file
  let unmarked = 0;
  const runs = missingRuns(disk, version, chunks);
  if (runs.length === 0) return true;
  for (const [a, b] of runs) {
    if (ctl.stopped()) return false;
    // the chunks are fetched from wherever the previous try stopped: each try must get further
    let cur = a;
    for (let stuck = 0; cur <= b;) {
      const before = cur;
      try {
        const res = await links.get(f, { start: cur * C, end: Math.min(f.size, (b + 1) * C) - 1 });
        // the server named another version: the listing is out of date, the pin is refreshed
        if (f.version !== version) throw new VfsError('EAGAIN', `${f.path} changed on the server`);
        const asm = new ChunkAssembler(C, f.size, cur, b, res.status === 206 ? res.start : 0, (i, parts, size) => {
          disk.put(version, i, parts, size, false, true);
          ctl.onBytes(size);
          cur = i + 1;
          return true;
        });
        try {
          for await (const piece of res.body) {
            if (!asm.push(piece as Buffer) || ctl.stopped()) break;
            unmarked += (piece as Buffer).length;
            if (unmarked >= MARK_EVERY) {
              unmarked = 0;
              await disk.flush();
            } else if (disk.behind()) await new Promise<void>((r) => disk.whenRoom(r));
          }
        } finally {
          res.body.destroy();
        }
        if (ctl.stopped()) return false;
        if (cur <= b) throw new VfsError('EIO', `short download of ${f.path}`);
      } catch (e) {
        stuck = cur === before ? stuck + 1 : 0;
        // a broken body is asked again from where it stopped; a server that is gone is waited for by the caller
        if (stuck > 2 || unreachable(e) || !retryable(e)) throw e;
      }
    }
  }
  // written and marked before the file counts as kept (a kill -9 after this loses none of it)
  await disk.flush();
  const { have, of } = disk.held(version);
  if (have < of) throw new VfsError('EIO', `the disk cache could not keep all of ${f.path} (${have} of ${of} chunks)`);
  return true;
}
