// Reading a cached version's chunks: a run of chunks in one read (getRun), a
// byte range straight into the caller's buffer (readAt, the chunks of a
// range being one range of the file), or the same without leaving the event
// loop (readAtNow: a copy from the page cache costs less than the thread
// pool's hand-off). A chunk that is not on disk (absent, or still reserved:
// the reader has block reuse bring those first) makes the read a miss, never
// an error.
import { close as closeFd, openSync, read as readFd, readSync } from 'node:fs';
import type { CachedVersion } from './cache-file.js';

type Entry = CachedVersion;

export class ChunkReads {
  constructor(
    private readonly entries: Map<string, Entry>,
    private readonly chunk: number,
    /** `n` chunks of `e` were served from disk */
    private readonly hit: (e: Entry, n: number) => void,
  ) {}

  /** the chunk's bytes from disk, or null when it is not (or no longer) there */
  async get(version: string, idx: number, size: number): Promise<Buffer | null> {
    const buf = Buffer.allocUnsafe(size);
    return (await this.getRun(version, idx, [buf])) ? buf : null;
  }

  /**
   * Chunks first, first+1, ... into `bufs` (one per chunk, each its chunk's
   * size) in one read; false unless every one of them is there.
   */
  async getRun(version: string, first: number, bufs: Buffer[]): Promise<boolean> {
    const e = this.entries.get(version);
    if (!e?.present || !e.fh) return false;
    for (let i = first; i < first + bufs.length; i++) if (e.present[i] !== 1) return false;
    e.used = Date.now();
    try {
      const fh = await e.fh;
      let bytes = 0;
      for (const b of bufs) bytes += b.length;
      const { bytesRead } = await fh.readv(bufs, e.dataOff + first * this.chunk);
      if (bytesRead !== bytes || e.dead) return false;
      this.hit(e, bufs.length);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Bytes [offset, offset + len) of a version straight into `target` (a
   * chunk's data sits at its fixed place, so a range of chunks is one range
   * of the file); false unless every chunk they touch is there.
   */
  readAt(version: string, offset: number, target: Buffer, len: number): Promise<boolean> {
    const e = this.entries.get(version);
    if (!e?.present) return Promise.resolve(false);
    const last = Math.floor((offset + len - 1) / this.chunk);
    if (!e.fh) return Promise.resolve(false);
    for (let i = Math.floor(offset / this.chunk); i <= last; i++) if (e.present[i] !== 1) return Promise.resolve(false);
    e.used = Date.now();
    const fd = this.readFdOf(e);
    if (fd < 0) return this.readAtHandle(e, offset, target, len);
    e.rreads++;
    return new Promise((resolve) =>
      readFd(fd, target, 0, len, e.dataOff + offset, (err, bytesRead) => {
        if (--e.rreads === 0 && e.rfd === -2) closeFd(fd, () => {});
        const ok = !err && bytesRead === len;
        if (ok) {
          this.hit(e, 1);
        }
        resolve(ok);
      }),
    );
  }

  /**
   * readAt without leaving the event loop: a read of the cache file is a copy
   * from the page cache (or a disk read the kernel's readahead has started),
   * cheaper than the thread pool's hand-off and the promise it resolves.
   * null when it cannot say synchronously (the file not open yet): ask readAt.
   */
  readAtNow(version: string, offset: number, target: Buffer, len: number): boolean | null {
    const e = this.entries.get(version);
    if (!e?.present) return false;
    const last = Math.floor((offset + len - 1) / this.chunk);
    for (let i = Math.floor(offset / this.chunk); i <= last; i++) {
      if (e.present[i] !== 1) return false;
    }
    if (!e.fh) return false;
    const fd = this.readFdOf(e);
    if (fd < 0) return null;
    e.used = Date.now();
    let n = -1;
    try {
      n = readSync(fd, target, 0, len, e.dataOff + offset);
    } catch {
      // a failing cache is a miss: the network has the data
    }
    if (n !== len) return false;
    this.hit(e, 1);
    return true;
  }

  private async readAtHandle(e: Entry, offset: number, target: Buffer, len: number): Promise<boolean> {
    try {
      const fh = await e.fh!;
      const { bytesRead } = await fh.read(target, 0, len, e.dataOff + offset);
      if (bytesRead !== len) return false;
      this.hit(e, 1);
      return true;
    } catch {
      return false;
    }
  }

  /** readAt's descriptor for `e`, opened on first use; < 0 when there is none */
  private readFdOf(e: Entry): number {
    if (e.rfd !== -1) return e.rfd;
    const fd = e.handle?.fd ?? -1;
    if (fd < 0 || e.dead) return -1; // not open yet: read through the handle for now
    try {
      e.rfd = openSync(`/proc/self/fd/${fd}`, 'r');
    } catch {
      e.rfd = -2;
    }
    return e.rfd;
  }
}

/** `e` leaves: its read descriptor is closed (after the reads under way on it) */
export function closeReadFd(e: CachedVersion): void {
  const fd = e.rfd;
  e.rfd = -2;
  if (fd >= 0 && e.rreads === 0) closeFd(fd, () => {});
}
