// The read engine's memory: each file version's chunks (held, or on their
// way), kept within one byte budget across all files by evicting the oldest
// chunks first, and a pool of chunk buffers for the streams to read into.
import type { Chunk, Deferred, FileChunks, Pending, RemoteFile } from './types.js';

/** A chunk on its way, settled by whoever fetches it. */
export function deferred(): Deferred {
  let resolve!: (b: Chunk) => void;
  let reject!: (e: unknown) => void;
  const promise: Pending = new Promise<Chunk>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // a readahead nobody waits for must not be an unhandled rejection
  return { promise, resolve, reject };
}

export class ChunkStore {
  private used = 0;
  /** chunks in the order they were fetched: the oldest leave first when memory is short */
  private order: { version: string; fc: FileChunks; idx: number; buf: Chunk; size: number; pooled: boolean }[] = [];
  private orderHead = 0;
  /**
   * Chunk buffers of evicted stream chunks, reused for new ones: streaming a
   * GiB through fresh buffers makes the garbage collector the main cost.
   * An evicted buffer is `retired` first and enters the pool only on a later
   * turn of the event loop: a reader copies a chunk out synchronously or in
   * the microtasks right after the promise that delivered it, so by then no
   * one can still be about to read it, however small the memory budget.
   */
  private pool: Buffer[] = [];
  private retired: Buffer[] = [];
  private recycleQueued = false;
  private readonly files = new Map<string, FileChunks>();

  constructor(
    private readonly chunk: number,
    private readonly budget: number,
    /** a chunk leaves memory (its buffer is still intact during the call) */
    private readonly onEvict?: (version: string, idx: number, buf: Chunk, size: number) => void,
  ) {}

  /** every chunk held now, with its file version */
  *held(): Generator<{ version: string; idx: number; buf: Chunk; size: number }> {
    for (const [version, fc] of this.files)
      for (const [idx, buf] of fc.have) {
        let size = 0;
        for (const p of buf) size += p.length;
        yield { version, idx, buf, size };
      }
  }

  /** The chunk table of this file version (created empty). */
  fileChunks(f: RemoteFile): FileChunks {
    let fc = this.files.get(f.version);
    if (!fc) {
      fc = { have: new Map(), inflight: new Map(), segs: 0, bytes: 0, randomReads: 0, filling: false };
      this.files.set(f.version, fc);
    }
    return fc;
  }

  /**
   * Keep a fetched chunk within the memory budget: the oldest chunks go
   * first, never the one being stored (its reader has not copied it yet).
   * `pooled`: its buffer came from buffer() and returns to the pool on eviction.
   */
  put(f: RemoteFile, fc: FileChunks, idx: number, buf: Chunk, size: number, pooled = false): void {
    fc.have.set(idx, buf);
    fc.bytes += size;
    this.used += size;
    this.order.push({ version: f.version, fc, idx, buf, size, pooled });
    const newest = this.order.length - 1;
    while (this.used > this.budget && this.orderHead < newest) {
      const old = this.order[this.orderHead];
      this.order[this.orderHead++] = undefined as never;
      if (old.fc.have.get(old.idx) === old.buf) {
        old.fc.have.delete(old.idx);
        old.fc.bytes -= old.size;
        this.used -= old.size;
        this.onEvict?.(old.version, old.idx, old.buf, old.size);
        if (old.pooled) this.retire(old.buf[0]);
        if (old.fc.bytes === 0 && old.fc.inflight.size === 0 && this.files.get(old.version) === old.fc)
          this.files.delete(old.version);
      }
    }
    if (this.orderHead > 4096 && this.orderHead * 2 > this.order.length) {
      this.order = this.order.slice(this.orderHead);
      this.orderHead = 0;
    }
  }

  /** A chunk buffer nothing refers to any more: reusable from the next turn of the event loop on. */
  retire(buf: Buffer): void {
    if (buf.length !== this.chunk || this.pool.length + this.retired.length >= 64) return;
    this.retired.push(buf);
    if (this.recycleQueued) return;
    this.recycleQueued = true;
    setImmediate(() => {
      this.recycleQueued = false;
      for (const b of this.retired) this.pool.push(b);
      this.retired = [];
    });
  }

  /** A buffer for a chunk of `size` bytes: from the pool when it is a whole chunk. */
  buffer(size: number): Buffer {
    return size === this.chunk ? (this.pool.pop() ?? Buffer.allocUnsafe(size)) : Buffer.allocUnsafe(size);
  }

  /** bytes of chunks held in memory, the budget, and the pooled buffers */
  memory(): { used: number; budget: number; pooled: number } {
    return { used: this.used, budget: this.budget, pooled: (this.pool.length + this.retired.length) * this.chunk };
  }
}
