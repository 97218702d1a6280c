// The chunk cache's writes, off the read path and fire-and-forget:
// contiguous chunks are gathered into one write of up to 4 MiB (copied when
// their owner reuses their buffers and does not lend them until written), with a bounded amount of data
// waiting for the disk. A writer that must not lose chunks holds back while
// the disk is behind (whenRoom); for the others a chunk beyond the bound is
// refused and the cache remembers it as skipped.
import type { CachedVersion } from './cache-file.js';

const BATCH = 4 * 1024 * 1024;

/** Consecutive chunks first..first+count-1 of one version, gathered for one write. */
export interface Batch {
  e: CachedVersion;
  first: number;
  count: number;
  len: number;
  bufs: Buffer[];
  arena: Buffer | null;
  /** called once the write is over (the lent buffers are free again) */
  releases: (() => void)[];
  timer: NodeJS.Timeout;
}

export class WriteBatcher {
  /** writes started and not finished yet (the cache's other writes count themselves here too) */
  inFlight = 0;
  private batch: Batch | null = null;
  private queuedBytes = 0;
  private readonly arenas: Buffer[] = [];
  /** callers holding back until the disk catches up (whenRoom) */
  private roomWaiters: (() => void)[] = [];

  constructor(
    /** bytes of chunk writes allowed to wait for the disk at once */
    private readonly maxQueuedBytes: number,
    /** writes a batch to its version's file; true when it went well */
    private readonly writeOut: (b: Batch) => Promise<boolean>,
    /** after the write: the chunks are on disk (ok) or absent again */
    private readonly done: (b: Batch, ok: boolean) => void,
  ) {}

  /** the version has chunks gathering, not yet written */
  gathering(e: CachedVersion): boolean {
    return this.batch?.e === e;
  }

  /**
   * Gathers chunk `idx` of `e`; false when the disk is behind (unless
   * `force`: the caller waits for whenRoom() before it offers more).
   * `copy`: the buffers are their owner's to reuse, so they are copied now.
   * `release`: the buffers are lent until the write is over (not copied);
   * called then, or at once when the chunk is refused.
   */
  add(
    e: CachedVersion,
    idx: number,
    parts: Buffer[],
    size: number,
    copy: boolean,
    force: boolean,
    release?: () => void,
  ): boolean {
    let b = this.batch;
    if (b && (b.e !== e || idx !== b.first + b.count || b.len + size > BATCH)) {
      this.flush();
      b = null;
    }
    // each queued write holds its chunks' bytes: when the disk falls behind, skip caching
    // (a later miss costs a fetch) rather than let memory grow with the backlog; `force`:
    // the caller holds back (whenRoom) instead, so the backlog passes the cap by a chunk or so
    if (!force && this.queuedBytes + size > this.maxQueuedBytes) {
      release?.();
      return false;
    }
    if (!b) {
      b = this.batch = {
        e,
        first: idx,
        count: 0,
        len: 0,
        bufs: [],
        arena: null,
        releases: [],
        timer: setTimeout(() => this.flush(), 20),
      };
      b.timer.unref();
      this.inFlight++;
    }
    if (release) {
      b.bufs.push(...parts);
      b.releases.push(release);
    } else if (copy) {
      b.arena ??= this.arenas.pop() ?? Buffer.allocUnsafe(BATCH);
      let at = b.len;
      for (const p of parts) at += p.copy(b.arena, at);
      b.bufs.push(b.arena.subarray(b.len, at));
    } else b.bufs.push(...parts);
    b.len += size;
    b.count++;
    this.queuedBytes += size;
    return true;
  }

  /** A full batch goes now rather than after its timer. */
  flushIfFull(): void {
    if (this.batch && this.batch.len >= BATCH) this.flush();
  }

  /** bytes of chunk writes waiting for the disk */
  get queued(): number {
    return this.queuedBytes;
  }

  /** as many bytes wait for the disk as may: an add() now would be refused */
  behind(): boolean {
    return this.queuedBytes >= this.maxQueuedBytes;
  }

  /** Calls `fn` once the disk is no longer behind (now, if it is not). */
  whenRoom(fn: () => void): void {
    if (!this.behind()) return fn();
    this.roomWaiters.push(fn);
    this.flush(); // what still gathers is written now rather than after its timer
  }

  /** The batch gathering is written now. */
  flush(): void {
    const b = this.batch;
    if (!b) return;
    this.batch = null;
    clearTimeout(b.timer);
    void (async () => {
      let ok = false;
      try {
        ok = await this.writeOut(b);
      } finally {
        this.inFlight--;
        this.queuedBytes -= b.len;
        if (b.arena && this.arenas.length < 2) this.arenas.push(b.arena);
        for (const r of b.releases) r();
        if (this.roomWaiters.length && !this.behind()) {
          const ws = this.roomWaiters;
          this.roomWaiters = [];
          for (const w of ws) w();
        }
      }
      this.done(b, ok);
    })();
  }
}
