// Reserved chunks (read/block-reuse.ts): chunks of a version that another
// version's cached blocks hold too (same Seafile block id) are reserved: the
// read engine counts them as on disk (has), and before it reads them it has
// block reuse copy them in (the cache's fillReserved: data, then markers, as
// for any chunk) or give them up (fetched as usual). A read of the cache
// that meets one still reserved is a miss. A reservation is never written to
// the file; a chunk fetched meanwhile simply replaces it. Reserved is marker
// 4 in the version's `present` table, being brought 5: such a chunk is still
// counted as on disk (a read of it waits for the copy, see block-reuse.ts
// `bring`), so a read beside the copy does not download it.
import type { FileHandle } from 'node:fs/promises';
import type { CachedVersion } from './cache-file.js';

const RESERVED = 4;
export const BRINGING = 5;

/** Reserves the absent chunks first..last; returns how many. */
export function reserveChunks(present: Uint8Array, first: number, last: number): number {
  let n = 0;
  for (let i = first; i <= last && i < present.length; i++)
    if (present[i] === 0) {
      present[i] = RESERVED;
      n++;
    }
  return n;
}

/** Gives up reservations among chunks first..last (a read fetches them as usual). */
export function unreserveChunks(present: Uint8Array, first: number, last: number): void {
  for (let i = first; i <= last && i < present.length; i++) if (present[i] === RESERVED) present[i] = 0;
}

/** The chunks among first..first+count-1 still reserved, now marked as being brought (5). */
export function takeReserved(present: Uint8Array, first: number, count: number): number[] {
  const mine: number[] = [];
  for (let i = first; i < first + count && i < present.length; i++)
    if (present[i] === RESERVED) {
      present[i] = BRINGING;
      mine.push(i);
    }
  return mine;
}

/** The chunks among first..last still reserved or being brought (none: null). */
export function reservedAmong(present: Uint8Array, first: number, last: number): number[] | null {
  let out: number[] | null = null;
  for (let i = first; i <= last && i < present.length; i++)
    if (present[i] === RESERVED || present[i] === BRINGING) (out ??= []).push(i);
  return out;
}

/**
 * Writes the bytes of chunks first, first+1, ... (`data`: whole chunks, the
 * last may be the file's short one) into chunks `mine` (taken by
 * takeReserved), one write per run of consecutive chunks. Resolves with the
 * bytes written, or -1 when it could not.
 */
export async function writeReserved(
  e: CachedVersion,
  first: number,
  mine: number[],
  data: Buffer,
  chunk: number,
  create: () => Promise<FileHandle>,
): Promise<number> {
  let bytes = 0;
  try {
    e.fh ??= create();
    const fh = await e.fh;
    e.handle ??= fh;
    for (let k = 0; k < mine.length && !e.dead;) {
      let j = k;
      while (j + 1 < mine.length && mine[j + 1] === mine[j] + 1) j++;
      const from = (mine[k] - first) * chunk;
      const to = Math.min(data.length, (mine[j] - first + 1) * chunk);
      const { bytesWritten } = await fh.write(data, from, to - from, e.dataOff + mine[k] * chunk);
      if (bytesWritten !== to - from) throw new Error('short write');
      bytes += bytesWritten;
      k = j + 1;
    }
    return e.dead ? -1 : bytes;
  } catch {
    if (e.fh && !e.dead) e.fh = null;
    return -1;
  }
}
