// How long what the mount shows of the server may lag it, split between the
// two caches that hold it: the mount's folder listings and the kernel's
// attributes and names (--attr-timeout). A listing answers for
// dir-cache-time minus the kernel's share, so nothing shown is older than
// --dir-cache-time. By default the kernel gets half: a tree walked again
// within that time (ls -lR, find) is answered by the kernel alone instead of
// one call into the mount per file (at 80 ms a cold ls -lR of 10,000 files
// outlasted the kernel's former 2 s, and the warm pass cost 10,500 lookups).

export interface CacheTimes {
  /** seconds the kernel keeps attributes and names */
  kernelSec: number;
  /** ms a folder listing answers before it is revalidated */
  listingMs: number;
}

export const DEFAULT_DIR_CACHE_TIME = 10;

/**
 * The kernel's timeout and the listings' lifetime for the options given.
 * An --attr-timeout above half the dir-cache-time is kept as given; the
 * listings then keep half (the sum is then the bound, above dir-cache-time).
 */
export function cacheTimes(dirCacheTime?: number, attrTimeout?: number): CacheTimes {
  const total = dirCacheTime ?? DEFAULT_DIR_CACHE_TIME;
  const kernelSec = attrTimeout ?? total / 2;
  const listingSec = Math.max(total - kernelSec, total / 2);
  return { kernelSec, listingMs: Math.round(listingSec * 1000) };
}
