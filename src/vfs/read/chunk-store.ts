// The read engine's memory: each file version's chunks (held, or on their
// way), kept within one byte budget across all files by evicting the oldest
// chunks first, and a pool of chunk buffers for the streams to read into.
import type { Chunk, Deferred, FileChunks, Pending, ReaderMemory, RemoteFile } from './types.js';

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

/** a chunk in memory, in fetch order; `buf` null once it left memory out of turn (released) */
interface Held {
  version: string;
  fc: FileChunks;
  idx: number;
  buf: Chunk | null;
  size: number;
  pooled: boolean;
}

export class ChunkStore {
  private used = 0;
  /** chunks in the order they were fetched: the oldest leave first when memory is short */
  private order: Held[] = [];
  private orderHead = 0;
  /** each chunk in memory's entry in `order`, to let one go before its turn (release) */
  private readonly entries = new Map<Chunk, Held>();
  /**
   * Chunk buffers of evicted stream chunks, reused for new ones: streaming a
   * GiB through fresh buffers makes the garbage collector the main cost.
   * An evicted buffer is `retired` first and enters the pool only on a later
   * turn of the event loop: a reader copies a chunk out synchronously or in
   * the microtasks right after the promise that delivered it, so by then no
   * one can still be about to read it, however small the memory budget.
   * The pool keeps every buffer while chunks held and pooled stay within the
   * budget: a buffer dropped is a buffer allocated again when a stream refills
   * its window, and the allocator rarely gives such memory back to the system.
   */
  private pool: Buffer[] = [];
  private retired: Buffer[] = [];
  private recycleQueued = false;
  /** buffers lent to the disk cache's writes: reused only once given back */
  private readonly lent = new Set<Buffer>();
  /** lent buffers retired meanwhile */
  private readonly retireOnReturn = new Set<Buffer>();
  /** bytes of chunk buffers allocated because the pool had none */
  private allocated = 0;
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
    const held: Held = { version: f.version, fc, idx, buf, size, pooled };
    this.order.push(held);
    this.entries.set(buf, held);
    const newest = this.order.length - 1;
    while (this.orderHead < newest && (this.used > this.budget || this.order[this.orderHead].buf === null)) {
      const old = this.order[this.orderHead];
      this.order[this.orderHead++] = undefined as never;
      if (old.buf) this.drop(old);
    }
    if (this.orderHead > 4096 && this.orderHead * 2 > this.order.length) {
      this.order = this.order.slice(this.orderHead);
      this.orderHead = 0;
    }
  }

  /**
   * Chunks `from`..`to` of a file leave memory now, out of their turn (all
   * but those `keep` holds on to): a sequential reader has gone past them.
   * A later read of one fetches it again.
   */
  release(fc: FileChunks, from: number, to: number, keep: (idx: number) => boolean): void {
    const one = (i: number, buf: Chunk | undefined) => {
      const held = buf && this.entries.get(buf);
      if (held && !keep(i)) this.drop(held);
    };
    // a long jump: walk the chunks held, not the range
    if (to - from > fc.have.size) {
      for (const [i, buf] of [...fc.have]) if (i >= from && i <= to) one(i, buf);
    } else for (let i = from; i <= to; i++) one(i, fc.have.get(i));
  }

  /** `held` leaves memory: out of the file's table, its buffer back to the pool when it came from there. */
  private drop(held: Held): void {
    const buf = held.buf!;
    held.buf = null;
    this.entries.delete(buf);
    const fc = held.fc;
    if (fc.have.get(held.idx) !== buf) return;
    fc.have.delete(held.idx);
    fc.bytes -= held.size;
    this.used -= held.size;
    this.onEvict?.(held.version, held.idx, buf, held.size);
    if (held.pooled) this.retire(buf[0]);
    if (fc.bytes === 0 && fc.inflight.size === 0 && this.files.get(held.version) === fc)
      this.files.delete(held.version);
  }

  /** The buffer is being written elsewhere (the disk cache): it goes back to the pool only after giveBack(). */
  lend(buf: Buffer): void {
    this.lent.add(buf);
  }

  /** A lent buffer is free again (retired now if it was meanwhile). */
  giveBack(buf: Buffer): void {
    this.lent.delete(buf);
    if (this.retireOnReturn.delete(buf)) this.retire(buf);
  }

  /** A chunk buffer nothing refers to any more: reusable from the next turn of the event loop on. */
  retire(buf: Buffer): void {
    if (this.lent.has(buf)) {
      this.retireOnReturn.add(buf);
      return;
    }
    if (
      buf.length !== this.chunk ||
      this.used + (this.pool.length + this.retired.length + 1) * this.chunk > this.budget
    )
      return;
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
    const b = size === this.chunk ? this.pool.pop() : undefined;
    if (b) return b;
    this.allocated += size;
    return Buffer.allocUnsafe(size);
  }

  /** bytes of chunks held in memory, the budget, the pooled buffers, and the buffers allocated so far */
  memory(): ReaderMemory {
    return {
      used: this.used,
      budget: this.budget,
      pooled: (this.pool.length + this.retired.length) * this.chunk,
      allocated: this.allocated,
    };
  }
}
