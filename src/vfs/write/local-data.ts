// The bytes of a file with local data: in memory for a small new file, in
// its temp file otherwise. A new file starts in memory while the files held
// there stay under a shared budget: its writes and reads are copies, with no
// temp file to open, write, close and delete (untar and cp -r of small files
// go at the pace of the FUSE round trips), and its upload sends the buffer.
// It moves to its temp file ("spills") once it outgrows `fileMax` or the
// budget, or when a call needs it on disk (an update of its server copy, an
// upload without the multi-file capability). What a crash must not lose is
// the journal's: the entry of a file in memory carries its bytes (journal.ts).
import { open, rename, unlink } from 'node:fs/promises';
import { VfsError } from '../errors.js';
import type { FileState } from './file-state.js';

export interface MemoryLimits {
  /** a file larger than this lives in its temp file (0: every file does) */
  fileMax: number;
  /** bytes of buffers all files in memory may hold together (with a near server; see noteRoundTrip) */
  budget: number;
}

const EMPTY = Buffer.alloc(0);
/** the first buffer of a file: most small files fit in it */
const FIRST = 16 * 1024;
/** the server's round trip (ms) above which the budget grows with it, up to FAR_FACTOR times */
const NEAR_MS = 20;
const FAR_FACTOR = 4;
/** round trips remembered; the least of them is the server's distance (the rest is its load), once there are 3 */
const RTT_SAMPLES = 8;
const RTT_MIN_SAMPLES = 3;

export class LocalData {
  /** bytes of the buffers held by files in memory */
  held = 0;
  /** the budget now: `limits.budget`, more for a far server */
  budget: number;
  private readonly rtts: number[] = [];

  constructor(
    private readonly limits: MemoryLimits,
    /** a file moved from memory to its temp file (its journal entry is rewritten; not awaited) */
    private readonly spilled: (s: FileState) => Promise<void>,
  ) {
    this.budget = limits.budget;
  }

  /**
   * A round trip to the server took `ms` (a listing). Files wait in memory
   * until their upload is done, and on a far server each upload takes
   * longer, so a burst of small files (untar) filled the budget and the rest
   * went through temp files: at 80 ms an untar's extract took 3.3 s with 8
   * MiB, 2.2-2.6 s with 32. The budget grows with the least of the recent
   * round trips above NEAR_MS (80 ms: 4x); a near server keeps it as it is.
   */
  noteRoundTrip(ms: number): void {
    this.rtts.push(ms);
    if (this.rtts.length > RTT_SAMPLES) this.rtts.shift();
    if (this.rtts.length < RTT_MIN_SAMPLES) return;
    const factor = Math.min(FAR_FACTOR, Math.max(1, Math.min(...this.rtts) / NEAR_MS));
    this.budget = Math.round(this.limits.budget * factor);
  }

  /** A new file starts in memory when the budget has room; returns whether it did. */
  start(s: FileState): boolean {
    if (this.limits.fileMax <= 0 || this.held + FIRST > this.budget) return false;
    s.mem = EMPTY;
    return true;
  }

  /** in memory and not moving to its temp file: reads and writes are copies */
  private here(s: FileState): s is FileState & { mem: Buffer } {
    return s.mem !== null && s.spilling === null;
  }

  /** the content of a file in memory (a view: valid until the next write), else null */
  bytes(s: FileState): Buffer | null {
    return this.here(s) ? s.mem.subarray(0, s.size) : null;
  }

  /** Synchronous (a number) when the file is in memory. */
  read(s: FileState, buf: Buffer, len: number, pos: number): number | Promise<number> {
    if (!this.here(s)) return this.readFile(s, buf, len, pos);
    const want = Math.max(0, Math.min(len, s.size - pos));
    if (want > 0) s.mem.copy(buf, 0, pos, pos + want);
    return want;
  }

  private async readFile(s: FileState, buf: Buffer, len: number, pos: number): Promise<number> {
    await s.ready;
    if (this.here(s)) return this.read(s, buf, len, pos);
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    const want = Math.max(0, Math.min(len, s.size - pos));
    if (want === 0) return 0;
    const { bytesRead } = await s.fh.read(buf, 0, want, pos);
    return bytesRead;
  }

  /** Writes `len` bytes of `buf` at `pos` and grows the size; synchronous when it stays in memory. */
  write(s: FileState, buf: Buffer, len: number, pos: number): number | Promise<number> {
    if (this.here(s) && this.room(s, pos + len)) {
      // a hole between the old end and `pos` reads as zeros
      if (pos > s.size) s.mem.fill(0, s.size, pos);
      buf.copy(s.mem, pos, 0, len);
      s.size = Math.max(s.size, pos + len);
      return len;
    }
    return this.writeFile(s, buf, len, pos);
  }

  private async writeFile(s: FileState, buf: Buffer, len: number, pos: number): Promise<number> {
    await s.ready;
    if (s.mem !== null) await this.toDisk(s);
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    const { bytesWritten } = await s.fh.write(buf, 0, len, pos);
    s.size = Math.max(s.size, pos + bytesWritten);
    return bytesWritten;
  }

  truncate(s: FileState, size: number): void | Promise<void> {
    if (this.here(s) && this.room(s, size)) {
      if (size > s.size) s.mem.fill(0, s.size, size);
      s.size = size;
      return;
    }
    return this.truncateFile(s, size);
  }

  private async truncateFile(s: FileState, size: number): Promise<void> {
    await s.ready;
    if (s.mem !== null) await this.toDisk(s);
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    await s.fh.truncate(size);
    s.size = size;
  }

  /** Makes the buffer of `s` hold `end` bytes, within the limits; false: the file must spill. */
  private room(s: FileState & { mem: Buffer }, end: number): boolean {
    const cap = s.mem.length;
    if (end <= cap) return true;
    if (end > this.limits.fileMax) return false;
    const next = Math.min(this.limits.fileMax, Math.max(end, FIRST, cap * 2));
    if (this.held - cap + next > this.budget) return false;
    const grown = Buffer.allocUnsafeSlow(next);
    s.mem.copy(grown, 0, 0, s.size);
    this.held += next - cap;
    s.mem = grown;
    return true;
  }

  /**
   * Moves a file in memory to its temp file (written whole under another
   * name, then renamed: a temp file that exists is complete). Later reads and
   * writes wait for it. A failure leaves the file in memory.
   */
  toDisk(s: FileState): Promise<void> {
    if (s.spilling) return s.spilling;
    if (s.mem === null) return Promise.resolve();
    const before = s.ready;
    const run = (async () => {
      await before;
      const mem = s.mem;
      if (mem === null) return; // disposed meanwhile
      const part = `${s.tmp}.part`;
      const fh = await open(part, 'w+');
      try {
        if (s.size > 0) await fh.write(mem, 0, s.size, 0);
        await rename(part, s.tmp);
      } catch (e) {
        await fh.close().catch(() => {});
        await unlink(part).catch(() => {});
        throw e;
      }
      this.drop(s);
      if (s.disposed) {
        // nobody needs it any more (deleted meanwhile)
        await fh.close().catch(() => {});
        await unlink(s.tmp).catch(() => {});
        return;
      }
      s.fh = fh;
    })();
    const done = run.finally(() => {
      s.spilling = null;
    });
    s.spilling = done;
    s.ready = done.catch(() => {});
    // the journal entry is rewritten to name the temp file (until then, recovery prefers a temp file that exists)
    done.then(
      () => void this.spilled(s).catch(() => {}),
      () => {},
    );
    return done;
  }

  /** A file recovered from the journal with its content: in memory, whatever the budget (it was within it). */
  adopt(s: FileState, data: Buffer): void {
    s.mem = Buffer.from(data);
    s.size = data.length;
    this.held += s.mem.length;
  }

  /** Lets go of the buffer of `s` (it is disposed, or now lives in its temp file). */
  drop(s: FileState): void {
    if (s.mem === null) return;
    this.held -= s.mem.length;
    s.mem = null;
  }
}
