// What the pins look like from outside: how much of a file or folder is on
// this machine (user.seafile.status after "synced": pinned, downloading,
// cached, partly cached, or cloud-only) and the totals `seafs status` shows.
import type { DirEntry } from '../../client/types.js';
import { ZERO_ID } from '../../client/types.js';
import { isWithin } from '../common/paths.js';
import type { ChunkCache } from '../read/chunk-cache/chunk-cache.js';
import { pinKey, splitKey, type PinState } from './state.js';

/** What `seafs status` shows of the pins. */
export interface PinStatus {
  roots: string[];
  files: number;
  bytes: number;
  /** files (and their bytes) whole on disk */
  doneFiles: number;
  doneBytes: number;
  /** bytes received for files still coming */
  partialBytes: number;
  /** files waiting for the server (offline) or failing */
  waiting: number;
  failed: { path: string; error: string }[];
  /** files under pinned folders that the cache cannot hold */
  unfit: { files: number; bytes: number };
  /** bytes downloaded for pins since the mount */
  fetchedBytes: number;
  /** pinned bytes of every library of the account, and how many may be pinned */
  accountBytes: number;
  limitBytes: number;
}

/**
 * How much of a file is on this machine, for user.seafile.status after
 * "synced": "pinned" (whole), "pinned, downloading N%", "cached" (whole,
 * not pinned), "partly cached", or "" (nothing of it: cloud-only).
 */
export async function fileAvailability(
  s: PinState,
  disk: ChunkCache | null,
  repo: string,
  path: string,
  e: DirEntry | null,
): Promise<string> {
  const pinned = s.rootOf(repo, path) !== null;
  if (!disk) return pinned ? 'pinned, not kept (no disk cache: --cache-max-size 0)' : '';
  if (!e || e.type !== 'file') return pinned ? 'pinned' : '';
  const size = e.size ?? 0;
  if (pinned && s.done.get(pinKey(repo, path)) === e.id) return 'pinned';
  if (size === 0 || !e.id || e.id === ZERO_ID) return pinned ? 'pinned' : '';
  if (!disk.known(e.id)) return pinned ? 'pinned, downloading 0%' : '';
  const { have, of } = await disk.peek(e.id, size);
  if (pinned) return have >= of ? 'pinned' : `pinned, downloading ${Math.min(99, Math.floor((have * 100) / of))}%`;
  return have >= of ? 'cached' : have > 0 ? 'partly cached' : '';
}

/** a folder's: "pinned", "pinned, downloading N of M files", or "" */
export function folderAvailability(s: PinState, repo: string, path: string): string {
  const p = s.libs.get(repo);
  if (!p || s.rootOf(repo, path) === null) {
    // a folder holding pinned ones is not pinned itself
    return '';
  }
  let total = 0;
  let whole = 0;
  for (const [fp, f] of p.files) {
    if (!isWithin(fp, path)) continue;
    total++;
    if (s.isWhole(repo, fp, f)) whole++;
  }
  return whole === total ? 'pinned' : `pinned, downloading ${total - whole} of ${total} files`;
}

/** the totals of `seafs status`; `partialBytes`: bytes received for the files still coming */
export function pinStatus(s: PinState, partialBytes: number): PinStatus {
  const out: PinStatus = {
    roots: [],
    files: 0,
    bytes: 0,
    doneFiles: 0,
    doneBytes: 0,
    partialBytes,
    waiting: 0,
    failed: [],
    unfit: { files: 0, bytes: 0 },
    fetchedBytes: s.stats.fetchedBytes,
    accountBytes: s.keptBytes,
    limitBytes: s.limitBytes,
  };
  for (const p of s.libs.values()) {
    for (const r of p.roots.keys()) out.roots.push(s.allLibraries ? `${p.repo}:${r}` : r);
    for (const [path, f] of p.files) {
      out.files++;
      out.bytes += f.size;
      if (s.isWhole(p.repo, path, f)) {
        out.doneFiles++;
        out.doneBytes += f.size;
      }
    }
  }
  for (const [k, f] of s.failed) {
    if (f.offline) out.waiting++;
    else out.failed.push({ path: splitKey(k)[1], error: f.error });
  }
  for (const m of s.unfit.values())
    for (const b of m.values()) {
      out.unfit.files++;
      out.unfit.bytes += b;
    }
  return out;
}
