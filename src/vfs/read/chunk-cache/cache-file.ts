// The chunk cache's file of one file version, on disk and in memory: one
// file per version (named by the sha256 of its file id), a header, a marker
// byte per chunk, then the chunks at fixed offsets. A chunk is served only
// when its marker is trusted. docs/design/chunk-cache.md describes the format.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

const MAGIC = 'SEAFSBC2';
export const HEADER = 128;
/** the header's fixed part (magic, chunk size, file size, file id); the boot id follows */
export const FIXED = 64;
export const BOOT_LEN = 36;
const ID = /^[0-9a-f]{40}$/;
const ZERO_ID = '0'.repeat(40);

/** the name of a version's file in the cache dir */
export function cacheName(version: string): string {
  return createHash('sha256').update(version).digest('hex');
}

/** a real file id: its file is kept under its name for later mounts (a synthetic key's is nameless) */
export function persistentVersion(version: string): boolean {
  return ID.test(version) && version !== ZERO_ID;
}

/** bytes a whole version of `size` takes on disk: the header and markers, then the data, in 4 KiB pages */
export function wholeBytes(size: number, chunk: number): number {
  if (size <= 0) return 0;
  return Math.ceil((HEADER + Math.ceil(size / chunk)) / 4096) * 4096 + Math.ceil(size / 4096) * 4096;
}

/** where chunk 0 starts: after the header and the markers, on a 4 KiB page */
export function dataOffset(chunks: number): number {
  return Math.ceil((HEADER + chunks) / 4096) * 4096;
}

/** this boot of the machine ('' when unknown: then every marker waits for a datasync) */
export function currentBootId(): string {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    return /^[0-9a-f-]{36}$/.test(id) ? id : '';
  } catch {
    return '';
  }
}

/** A cached version as this process holds it. */
export interface CachedVersion {
  version: string;
  name: string;
  /** a real file id: kept under its name for later mounts */
  persistent: boolean;
  size: number;
  dataOff: number;
  /**
   * per chunk: 0 absent, 1 on disk, 2 being written, 3 skipped (offer it again), 4 reserved (the
   * block reuse brings it from another version's blocks); null: not cached (too large)
   */
  present: Uint8Array | null;
  fh: Promise<FileHandle> | null;
  /** what fh resolved to, once it has */
  handle: FileHandle | null;
  /**
   * readAt's own descriptor of the same open file (opened through
   * /proc/self/fd, so it is the file `handle` has even if the name now
   * belongs to another): a read with a callback costs less than one through
   * the FileHandle's promises. -1: not opened yet; -2: none (closed, or not
   * to be had); readAt then reads through `handle`.
   */
  rfd: number;
  /** readAt's reads under way on rfd (it is closed once they are done) */
  rreads: number;
  bytes: number;
  /** last use, ms since the epoch */
  used: number;
  touched: number;
  /** chunks written whose markers are not on disk yet */
  marks: number[];
  /** the boot whose unsynced markers (2) the file's header vouches for */
  boot: string;
  /** chunks marked 2 by an earlier boot: not trusted, zeroed before the header names this boot */
  stale: number[];
  /** chunks this process marked 2: they become 1 after a datasync */
  unsynced: number[];
  /** last chunk write, ms since the epoch */
  wrote: number;
  dead: boolean;
}

/** A version as open() first holds it: nothing on disk known yet; `cached`: it has a chunk table. */
export function newCachedVersion(
  version: string,
  size: number,
  chunk: number,
  cached: boolean,
  boot: string,
): CachedVersion {
  const nChunks = Math.ceil(size / chunk);
  return {
    version,
    name: cacheName(version),
    persistent: persistentVersion(version),
    size,
    dataOff: dataOffset(nChunks),
    present: cached ? new Uint8Array(nChunks) : null,
    fh: null,
    handle: null,
    rfd: -1,
    rreads: 0,
    bytes: 0,
    used: Date.now(),
    touched: 0,
    marks: [],
    boot,
    stale: [],
    unsynced: [],
    wrote: 0,
    dead: false,
  };
}

/** How many chunks of the version the file at `path` holds (trusted markers), without keeping it open. */
export async function chunksOnDisk(
  path: string,
  version: string,
  size: number,
  chunk: number,
  boot: string,
): Promise<number> {
  const fh = await open(path, 'r').catch(() => null);
  if (!fh) return 0;
  const e = {
    version,
    size,
    present: new Uint8Array(Math.max(1, Math.ceil(size / chunk))),
    stale: [],
    bytes: 0,
    boot: '',
  };
  try {
    if (!(await readMarkers(fh, e, chunk, boot).catch(() => false))) return 0;
    let have = 0;
    for (const m of e.present) if (m === 1) have++;
    return have;
  } finally {
    await fh.close().catch(() => {});
  }
}

/** the bytes of chunk `i` of the version (the last one may be short) */
export function chunkLen(e: Pick<CachedVersion, 'size'>, chunk: number, i: number): number {
  return Math.min(chunk, e.size - i * chunk);
}

export function headerOf(e: Pick<CachedVersion, 'size' | 'version'>, chunk: number, boot: string): Buffer {
  const h = Buffer.alloc(HEADER);
  h.write(MAGIC, 0, 'latin1');
  h.writeUInt32LE(chunk, 8);
  h.writeDoubleLE(e.size, 12);
  h.write(e.version, 20, 40, 'latin1');
  h.write(boot, FIXED, BOOT_LEN, 'latin1');
  return h;
}

/**
 * The header must say this version, size and chunk size; then the markers
 * are read into `present`: 1s, and 2s when the header names this boot.
 */
export async function readMarkers(
  fh: FileHandle,
  e: Pick<CachedVersion, 'size' | 'version' | 'present' | 'boot' | 'stale' | 'bytes'>,
  chunk: number,
  boot: string,
): Promise<boolean> {
  const n = e.present!.length;
  const buf = Buffer.alloc(HEADER + n);
  const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
  if (bytesRead < HEADER) return false;
  const h = headerOf(e, chunk, boot);
  if (!buf.subarray(0, FIXED).equals(h.subarray(0, FIXED))) return false;
  e.boot = buf.toString('latin1', FIXED, FIXED + BOOT_LEN).replace(/\0+$/, '');
  const sameBoot = boot !== '' && e.boot === boot;
  for (let i = 0; i < n && HEADER + i < bytesRead; i++) {
    const m = buf[HEADER + i];
    if (m === 2 && !sameBoot) e.stale.push(i);
    if (m !== 1 && !(m === 2 && sameBoot)) continue;
    e.present![i] = 1;
    e.bytes += chunkLen(e, chunk, i);
  }
  return true;
}

/** Sets the markers of chunks `marks` (sorted) to `value`: one write per run of consecutive chunks. */
export async function setMarkers(fh: FileHandle, marks: number[], value: number): Promise<void> {
  for (let k = 0; k < marks.length;) {
    let j = k;
    while (j + 1 < marks.length && marks[j + 1] === marks[j] + 1) j++;
    await fh.write(Buffer.alloc(j - k + 1, value), 0, j - k + 1, HEADER + marks[k]);
    k = j + 1;
  }
}

/**
 * A writable file for the version: created under a temp name with its
 * header, then linked into place. When another mount created it first, its
 * file is used (same content, so its chunks are ours too): its markers are
 * read into `e` (`adopted`: the caller counts their bytes) and the chunks this
 * process was writing stay marked as being written.
 */
export async function createCacheFile(
  dir: string,
  e: CachedVersion,
  chunk: number,
  boot: string,
): Promise<{ fh: FileHandle; adopted: boolean }> {
  const tmp = join(dir, `${e.name}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fh = await open(tmp, 'w+', 0o600);
  if (!e.persistent) {
    await unlink(tmp); // nameless: gone with the process
    return { fh, adopted: false };
  }
  try {
    await fh.write(headerOf(e, chunk, boot), 0, HEADER, 0);
    await link(tmp, join(dir, e.name));
    return { fh, adopted: false };
  } catch (err) {
    await fh.close().catch(() => {});
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const theirs = await open(join(dir, e.name), 'r+');
    const mine = e.present!.slice();
    e.present!.fill(0);
    e.bytes = 0;
    if (!(await readMarkers(theirs, e, chunk, boot))) {
      await theirs.close();
      throw new Error('cache file of another process does not match');
    }
    for (let i = 0; i < mine.length; i++) if (mine[i] >= 2 && e.present![i] === 0) e.present![i] = mine[i];
    return { fh: theirs, adopted: true };
  } finally {
    if (e.persistent) await unlink(tmp).catch(() => {});
  }
}
