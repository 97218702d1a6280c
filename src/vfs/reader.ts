// The read path for files that are not dirty: ranged GETs on a reusable
// download link, cut into fixed chunks kept in a bounded in-memory LRU, with
// readahead that grows while a reader stays sequential and fetches ranges in
// parallel. A random small read fetches one chunk, never the whole file.
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { SeafileApi, RangeDownload } from '../client/types.js';
import { ApiError } from '../client/errors.js';
import type { BlockCache } from './block-cache.js';
import { rawGet, RawUnsupported, type RawStream } from '../client/raw-get.js';
import { ChunkAssembler, type ChunkParts } from './chunk-assembler.js';
import { VfsError } from './errors.js';

export interface RemoteFile {
  repo: string;
  path: string;
  size: number;
  /** identifies the content: the file id, or a synthetic key when the id is unknown */
  version: string;
}

/** Per open handle: where the last read ended and the current readahead window. */
export interface ReadPattern {
  next: number;
  window: number;
  /** the handle has read before */
  started?: boolean;
  /** the streaming GET feeding this sequential reader, if any */
  stream?: SeqStream;
}

/**
 * One ranged GET from a chunk to the end of the file, consumed chunk by chunk
 * as far as `until` and then paused (TCP flow control holds the server back)
 * until the reader moves on: a sequential reader pays the round trip once,
 * not once per segment.
 */
interface SeqStream {
  fc: FileChunks;
  /** next chunk the stream will deliver */
  next: number;
  /** deliver up to this chunk, then pause */
  until: number;
  waits: Map<number, Deferred>;
  wake: (() => void) | null;
  dead: boolean;
}

export interface ReaderOptions {
  chunkSize?: number;
  initialWindow?: number;
  maxWindow?: number;
  segmentSize?: number;
  memoryBytes?: number;
  linkTtlMs?: number;
  maxSegmentsPerFile?: number;
  /** read plain-http streams over a bare socket (default true) */
  rawStreams?: boolean;
  /** files above this size are read ahead by one streaming GET (default 8 MiB) */
  streamMinBytes?: number;
  /** after this many random reads of a file, fetch all of it into the disk cache (default 32; fewer for files under 256 MiB: one per 8 MiB, at least 2) */
  fillAfterRandomReads?: number;
  /** largest file fetched that way (default 2 GiB; the disk cache must hold it too) */
  fillMaxBytes?: number;
  /** a stream paused this long with no reader moving on ends (default 5 s) */
  streamIdleMs?: number;
  /** a stream or ranged GET that receives nothing this long is given up and retried (default 30 s) */
  stallMs?: number;
}

/** The chunks of one file version: in memory, or being fetched. */
interface FileChunks {
  have: Map<number, Chunk>;
  inflight: Map<number, Pending>;
  segs: number;
  bytes: number;
  /** first chunk readahead has not requested yet */
  raFrontier?: number;
  /** reads that did not follow the previous one */
  randomReads: number;
  /** a background download of the whole file is running */
  filling: boolean;
}

/** A chunk's bytes: the slices of the received network buffers, or one buffer read into directly. */
type Chunk = ChunkParts;

/** A chunk on its way; `wanted` once a read waits for it (not only readahead). */
type Pending = Promise<Chunk> & { wanted?: boolean };

interface Deferred {
  promise: Pending;
  resolve(b: Chunk): void;
  reject(e: unknown): void;
}

function deferred(): Deferred {
  let resolve!: (b: Chunk) => void;
  let reject!: (e: unknown) => void;
  const promise: Pending = new Promise<Chunk>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // a readahead nobody waits for must not be an unhandled rejection
  return { promise, resolve, reject };
}

/** a failure worth another ranged GET from where the last one stopped */
function transient(e: unknown): boolean {
  if (e instanceof ApiError) return e.kind === 'network' || e.kind === 'timeout' || e.status >= 500;
  return e instanceof VfsError && e.code === 'EIO';
}

export class RemoteReader {
  readonly stats = { linkRequests: 0, rangeRequests: 0, bytesFetched: 0, diskChunks: 0, fills: 0, streams: 0, activeStreams: 0 };
  private readonly fillAfter: number;
  private readonly streamMin: number;
  private readonly rawStreams: boolean;
  private readonly jumpAhead: number;
  private readonly fillMax: number;
  private readonly chunk: number;
  private readonly initialWindow: number;
  private readonly maxWindow: number;
  private readonly segChunks: number;
  private readonly maxSegs: number;
  private readonly linkTtl: number;
  private readonly memBudget: number;
  private memUsed = 0;
  /** chunks in the order they were fetched: the oldest leave first when memory is short */
  private order: { version: string; fc: FileChunks; idx: number; buf: Chunk; size: number; pooled: boolean }[] = [];
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
  private readonly streamIdle: number;
  private readonly stall: number;
  private orderHead = 0;
  private readonly files = new Map<string, FileChunks>();
  private readonly links = new Map<string, { url: string; at: number; p?: Promise<string> }>();

  constructor(
    private readonly api: SeafileApi,
    opts: ReaderOptions = {},
    private readonly disk: BlockCache | null = null,
    /** a file turned out to have changed on the server */
    private readonly onStale?: (f: RemoteFile) => void,
  ) {
    this.chunk = opts.chunkSize ?? 128 * 1024;
    this.initialWindow = opts.initialWindow ?? 512 * 1024;
    this.maxWindow = opts.maxWindow ?? 16 * 1024 * 1024;
    this.segChunks = Math.max(1, Math.floor((opts.segmentSize ?? 4 * 1024 * 1024) / this.chunk));
    this.maxSegs = opts.maxSegmentsPerFile ?? 4;
    this.linkTtl = opts.linkTtlMs ?? 50 * 60 * 1000;
    this.memBudget = opts.memoryBytes ?? 32 * 1024 * 1024;
    this.fillAfter = opts.fillAfterRandomReads ?? 32;
    this.streamMin = opts.streamMinBytes ?? 8 * 1024 * 1024;
    this.rawStreams = opts.rawStreams ?? true;
    // skipping this much of a stream costs about what a new request costs
    this.jumpAhead = 8 * 1024 * 1024;
    this.fillMax = opts.fillMaxBytes ?? 2 * 1024 ** 3;
    this.streamIdle = opts.streamIdleMs ?? 5_000;
    this.stall = opts.stallMs ?? 30_000;
  }

  /** A reusable download link for this version of the file, renewed before it expires. */
  async link(f: RemoteFile, renew = false): Promise<string> {
    const k = `${f.repo}\u0000${f.path}\u0000${f.version}`;
    const hit = this.links.get(k);
    if (hit && !renew) {
      if (hit.p) return hit.p;
      if (Date.now() - hit.at < this.linkTtl) return hit.url;
    }
    this.stats.linkRequests++;
    const p = this.api.downloadLink(f.repo, f.path, { reuse: true }).then(
      (l) => {
        this.links.set(k, { url: l.url, at: Date.now() });
        // the path holds another version than the listing said (changed on the server since):
        // key what comes by the version it is, and let the listing be refreshed
        if (l.oid && /^[0-9a-f]{40}$/.test(f.version) && l.oid !== f.version) {
          f.version = l.oid;
          this.onStale?.(f);
        }
        return l.url;
      },
      (e) => {
        this.links.delete(k);
        throw e;
      },
    );
    this.links.set(k, { url: '', at: 0, p });
    if (this.links.size > 10_000) this.links.delete(this.links.keys().next().value as string);
    return p;
  }

  forget(f: RemoteFile): void {
    this.links.delete(`${f.repo}\u0000${f.path}\u0000${f.version}`);
  }

  private async get(f: RemoteFile, range?: { start: number; end?: number }): Promise<RangeDownload> {
    const url = await this.link(f);
    this.stats.rangeRequests++;
    try {
      return await this.api.download(url, range);
    } catch (e) {
      // an expired or spent link: ask for a new one once
      if (e instanceof ApiError && (e.status === 403 || e.status === 404 || e.kind === 'forbidden' || e.kind === 'unauthorized')) {
        const fresh = await this.link(f, true);
        this.stats.rangeRequests++;
        return this.api.download(fresh, range);
      }
      throw e;
    }
  }

  /** Download the whole file into `dest` (to open an existing file for writing). */
  async downloadWhole(f: RemoteFile, dest: string): Promise<void> {
    if (f.size === 0) {
      await writeFile(dest, '');
      return;
    }
    const res = await this.get(f);
    await pipeline(res.body, createWriteStream(dest));
  }

  private fileChunks(f: RemoteFile): FileChunks {
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
   */
  private store(f: RemoteFile, fc: FileChunks, idx: number, buf: Chunk, size: number, pooled = false): void {
    fc.have.set(idx, buf);
    fc.bytes += size;
    this.memUsed += size;
    this.order.push({ version: f.version, fc, idx, buf, size, pooled });
    const newest = this.order.length - 1;
    while (this.memUsed > this.memBudget && this.orderHead < newest) {
      const old = this.order[this.orderHead];
      this.order[this.orderHead++] = undefined as never;
      if (old.fc.have.get(old.idx) === old.buf) {
        old.fc.have.delete(old.idx);
        old.fc.bytes -= old.size;
        this.memUsed -= old.size;
        if (old.pooled) this.retire(old.buf[0]);
        if (old.fc.bytes === 0 && old.fc.inflight.size === 0 && this.files.get(old.version) === old.fc) this.files.delete(old.version);
      }
    }
    if (this.orderHead > 4096 && this.orderHead * 2 > this.order.length) {
      this.order = this.order.slice(this.orderHead);
      this.orderHead = 0;
    }
  }

  /** A chunk buffer nothing refers to any more: reusable from the next turn of the event loop on. */
  private retire(buf: Buffer): void {
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

  private chunkBuffer(size: number): Buffer {
    return size === this.chunk ? (this.pool.pop() ?? Buffer.allocUnsafe(size)) : Buffer.allocUnsafe(size);
  }

  /** bytes of chunks held in memory, and the budget (for `status` and tests) */
  memory(): { used: number; budget: number; pooled: number } {
    return { used: this.memUsed, budget: this.memBudget, pooled: (this.pool.length + this.retired.length) * this.chunk };
  }

  /**
   * Reads into `target` and returns the byte count (short only at end of
   * file). When every chunk is in memory the answer is synchronous: a number,
   * not a promise, which keeps the hot sequential path free of microtasks.
   */
  read(f: RemoteFile, target: Buffer, len: number, offset: number, pat: ReadPattern): number | Promise<number> {
    if (offset >= f.size || len <= 0) return 0;
    const end = Math.min(f.size, offset + len);
    // the kernel's readahead sends several reads at once, and they may arrive out of
    // order: a read near where the last ones ended still counts as sequential
    // and a reader skipping ahead (the kernel asking only for what its page cache lost) too
    const prevNext = pat.next;
    // forward: past where the last read ended, by a reader already sequential, or by a short
    // step from one that was not (a handle re-reading a file from somewhere in the middle: its
    // reads are the holes of the page cache, in order; random reads seldom step forward this little:
    // under 1/64 of the file)
    const forward = offset > pat.next && (pat.window > 0 || (pat.started === true && offset - pat.next <= Math.min(this.jumpAhead, f.size / 64)));
    // (with the mount's 512 KiB kernel readahead, requests arrive up to about 1 MiB out of order)
    const near = Math.abs(offset - pat.next) <= Math.max(this.chunk * 8, pat.window) || (forward && offset - pat.next <= this.jumpAhead);
    if (offset === pat.next || (offset === 0 && pat.window === 0) || (near && pat.window > 0)) {
      pat.window = pat.window ? Math.min(this.maxWindow, pat.window * 2) : this.initialWindow;
    } else if (forward) {
      // a long jump ahead by a sequential reader: the kernel asks only for what its page cache
      // lost (on some VMs idle page cache is paged out within seconds). Still sequential, so no
      // whole-file fill, but the window starts small again at the new place.
      pat.window = this.initialWindow;
    } else if (!near) {
      pat.window = 0;
    }
    // what counts toward fetching the whole file: a jump back by a handle that has read before.
    // Not a handle's first read (many handles each reading their own part of a file), not a
    // jump forward (a sequential reader skipping what the page cache still has)
    const jumpedBack = pat.started === true && offset < prevNext;
    pat.started = true;
    if (pat.window === 0 && jumpedBack && !near) {
      const fc0 = this.fileChunks(f);
      // a small file is fetched sooner: all of it costs about what a few round trips do
      const after = Math.min(this.fillAfter, Math.max(2, Math.ceil(f.size / (8 * 1024 * 1024))));
      if (++fc0.randomReads >= after && !fc0.filling && this.disk?.worthCaching(f.size) && f.size <= this.fillMax) {
        this.startFill(f, fc0);
      }
    }
    pat.next = pat.window > 0 ? Math.max(pat.next, end) : end;
    const C = this.chunk;
    const first = Math.floor(offset / C);
    const last = Math.floor((end - 1) / C);
    const fc = this.fileChunks(f);
    if (pat.window > 0) {
      const lastChunk = Math.floor((f.size - 1) / C);
      const raEnd = Math.min(lastChunk, Math.floor((end - 1 + pat.window) / C));
      // a stream pays off for large files; small ones take a ranged GET or two.
      // The stream is asked first, for the read's own chunks too: a chunk it is
      // about to deliver anyway is not fetched twice.
      if (f.size > this.streamMin) this.streamAhead(f, fc, pat, first, raEnd);
      this.ensure(f, fc, first, last, false);
      if (f.size <= this.streamMin && raEnd > last) this.ensure(f, fc, last + 1, raEnd, true);
    } else {
      this.ensure(f, fc, first, last, false);
      if (pat.stream) {
        this.stopStream(f, pat.stream);
        pat.stream = undefined;
      }
    }
    // fast path: all in memory
    let written = 0;
    let i = first;
    for (; i <= last; i++) {
      const buf = fc.have.get(i);
      if (!buf) break;
      written += this.copyOut(buf, i, target, written, offset, end);
    }
    if (i > last) return written;
    return this.readSlow(f, fc, target, offset, end, i, last, written);
  }

  private copyOut(parts: Chunk, i: number, target: Buffer, at: number, offset: number, end: number): number {
    const cStart = i * this.chunk;
    const from = Math.max(offset, cStart) - cStart;
    const to = Math.min(end, cStart + this.chunk) - cStart;
    let pos = 0; // offset of the current part within the chunk
    let n = 0;
    for (const part of parts) {
      const pEnd = pos + part.length;
      if (pEnd > from && pos < to) {
        const a = Math.max(from, pos) - pos;
        const b = Math.min(to, pEnd) - pos;
        part.copy(target, at + n, a, b);
        n += b - a;
      }
      pos = pEnd;
      if (pos >= to) break;
    }
    return n;
  }

  private async readSlow(f: RemoteFile, fc: FileChunks, target: Buffer, offset: number, end: number, i: number, last: number, written: number): Promise<number> {
    for (; i <= last; i++) {
      const buf = await this.chunkAt(f, fc, i);
      written += this.copyOut(buf, i, target, written, offset, end);
    }
    return written;
  }

  private chunkAt(f: RemoteFile, fc: FileChunks, i: number): Chunk | Pending {
    for (let attempt = 0; attempt < 3; attempt++) {
      const have = fc.have.get(i);
      if (have) return have;
      const p = fc.inflight.get(i);
      if (p) {
        p.wanted = true;
        return p;
      }
      this.ensure(f, fc, i, i, false); // evicted between ensure and use
    }
    throw new VfsError('EIO', 'chunk lost');
  }

  /**
   * Start fetches for the chunks in [a, b] that are neither cached nor in
   * flight. Readahead waits until a missing run is worth a large request
   * (or reaches the end of the file), so a window sliding one chunk per read
   * does not turn into one small request per read.
   */
  private ensure(f: RemoteFile, fc: FileChunks, a: number, b: number, readahead: boolean, minRun = 1): void {
    const lastChunk = Math.floor((f.size - 1) / this.chunk);
    let runStart = -1;
    const flush = (endIdx: number): boolean => {
      if (readahead && endIdx - runStart + 1 < minRun && endIdx < lastChunk) return false;
      for (let s = runStart; s <= endIdx; s += this.segChunks) {
        if (readahead && fc.segs >= this.maxSegs) return false;
        const e = Math.min(endIdx, s + this.segChunks - 1);
        this.fetchSegment(f, fc, s, e);
        if (readahead) fc.raFrontier = e + 1;
      }
      return true;
    };
    for (let i = a; i <= b; i++) {
      let missing = !fc.inflight.has(i) && !fc.have.has(i);
      if (missing && this.disk?.has(f.version, i)) {
        this.fromDisk(f, fc, i);
        missing = false;
      }
      if (missing && runStart < 0) runStart = i;
      if (!missing && runStart >= 0) {
        if (!flush(i - 1)) return;
        runStart = -1;
      }
    }
    if (runStart >= 0) flush(b);
  }

  /** resolves once the disk cache has no chunk writes in flight (for tests and shutdown) */
  async diskIdle(): Promise<void> {
    while (this.disk && this.disk.pendingWrites > 0) await new Promise((r) => setTimeout(r, 10));
  }

  /** A chunk from the on-disk cache; a miss there (evicted meanwhile) falls back to the network. */
  private fromDisk(f: RemoteFile, fc: FileChunks, i: number): void {
    const size = Math.min(this.chunk, f.size - i * this.chunk);
    const p: Pending = this.disk!.get(f.version, i, size).then((buf): Chunk | Promise<Chunk> => {
      if (fc.inflight.get(i) === p) fc.inflight.delete(i);
      if (buf) {
        this.stats.diskChunks++;
        const parts = [buf];
        if (!fc.have.has(i)) this.store(f, fc, i, parts, size);
        return parts;
      }
      const have = fc.have.get(i);
      if (have) return have;
      const other = fc.inflight.get(i);
      if (other) return other;
      this.fetchSegment(f, fc, i, i);
      return fc.inflight.get(i)!;
    });
    p.catch(() => {});
    fc.inflight.set(i, p);
  }

  /**
   * Make chunks [from, to] come: from memory, the disk cache, or the reader's
   * stream (started, or restarted past a long stretch it would only re-send).
   * A chunk the stream has already gone past (delivered, then evicted) is
   * left to the read that wants it: the stream will not bring it again.
   */
  private streamAhead(f: RemoteFile, fc: FileChunks, pat: ReadPattern, from: number, to: number): void {
    let st = pat.stream;
    // a stream far behind the reader (it jumped ahead) is replaced; one ahead of it just waits
    if (st && (st.dead || st.fc !== fc || st.next < from - this.jumpAhead / this.chunk)) {
      this.stopStream(f, st);
      st = pat.stream = undefined;
    }
    // the last chunk the stream is set to deliver so far
    let tail = st ? Math.max(st.until, st.next - 1) : -1;
    for (let i = st ? Math.max(from, st.next, st.until + 1) : from; i <= to; i++) {
      if (fc.have.has(i) || fc.inflight.has(i)) continue;
      if (this.disk?.has(f.version, i)) {
        this.fromDisk(f, fc, i);
        continue;
      }
      if (st && i > tail + 1 + this.segChunks) {
        this.stopStream(f, st);
        st = pat.stream = undefined;
      }
      if (!st) {
        st = { fc, next: i, until: i - 1, waits: new Map(), wake: null, dead: false };
        pat.stream = st;
        this.runStream(f, st);
      }
      const d = deferred();
      st.waits.set(i, d);
      fc.inflight.set(i, d.promise);
      tail = i;
    }
    if (!st) return;
    if (to > st.until) st.until = to;
    const w = st.wake;
    st.wake = null;
    w?.();
  }

  /** The handle is closed: its stream, if any, ends (it must not hold a connection). */
  closePattern(f: RemoteFile, pat: ReadPattern): void {
    if (pat.stream) this.stopStream(f, pat.stream);
    pat.stream = undefined;
  }

  /**
   * End a stream. Chunks a read waits for are fetched with ranged GETs instead
   * (contiguous ones together); readahead nobody waits for yet is dropped.
   */
  private stopStream(f: RemoteFile, st: SeqStream): void {
    if (st.dead) return;
    st.dead = true;
    const w = st.wake;
    st.wake = null;
    w?.();
    const fc = st.fc;
    const wanted: [number, Deferred][] = [];
    for (const [i, d] of st.waits) {
      if (fc.inflight.get(i) === d.promise) fc.inflight.delete(i);
      if (d.promise.wanted) wanted.push([i, d]);
      else d.reject(new VfsError('EIO', 'readahead stream ended'));
    }
    st.waits.clear();
    wanted.sort((a, b) => a[0] - b[0]);
    for (let k = 0; k < wanted.length; ) {
      let e = k;
      while (e + 1 < wanted.length && wanted[e + 1][0] === wanted[e][0] + 1) e++;
      this.ensure(f, fc, wanted[k][0], wanted[e][0], false);
      for (; k <= e; k++) {
        const [i, d] = wanted[k];
        const have = fc.have.get(i);
        const p = fc.inflight.get(i);
        if (have) d.resolve(have);
        else if (p) {
          p.wanted = true;
          p.then(d.resolve, d.reject);
        } else d.reject(new VfsError('EIO', 'chunk lost'));
      }
    }
  }

  private runStream(f: RemoteFile, st: SeqStream): void {
    st.fc.segs++;
    this.stats.streams++;
    this.stats.activeStreams++;
    const go = async () => {
      const url = await this.link(f);
      if (this.rawStreams && url.startsWith('http:')) {
        let r = await this.runStreamRaw(f, st, url);
        if (r === 'renew') r = await this.runStreamRaw(f, st, await this.link(f, true));
        if (r !== 'unsupported') return;
      }
      await this.runStreamClient(f, st);
    };
    go()
      .catch(() => {})
      .finally(() => {
        st.fc.segs--;
        this.stats.activeStreams--;
        // whatever a reader still waits for comes through ranged GETs
        st.dead = false;
        this.stopStream(f, st);
      });
  }

  /** Deliver chunk i of a stream to whoever waits for it, and keep it in memory. */
  private deliver(f: RemoteFile, st: SeqStream, i: number, parts: Chunk, size: number, pooled = false): void {
    const fc = st.fc;
    this.stats.bytesFetched += size;
    st.next = i + 1;
    const d = st.waits.get(i);
    if (d) st.waits.delete(i);
    if (d && fc.inflight.get(i) === d.promise) fc.inflight.delete(i);
    if (!fc.have.has(i)) this.store(f, fc, i, parts, size, pooled);
    else if (pooled && !d) this.retire(parts[0]);
    d?.resolve(parts);
  }

  /**
   * The stream over a bare socket (see src/client/raw-get.ts), read straight
   * into the chunk buffers. Resolves 'unsupported' or 'renew' (link refused)
   * when nothing was delivered yet and the caller should try otherwise;
   * 'done' in every other case.
   */
  private runStreamRaw(f: RemoteFile, st: SeqStream, url: string): Promise<'done' | 'unsupported' | 'renew'> {
    const C = this.chunk;
    const lastChunk = Math.floor((f.size - 1) / C);
    const first = st.next;
    return new Promise((resolve) => {
      let asm: ChunkAssembler | null = null;
      let idle: NodeJS.Timeout | null = null;
      let stream: RawStream;
      const clearIdle = () => {
        if (idle) clearTimeout(idle);
        idle = null;
      };
      const pauseIfAhead = () => {
        if (st.dead || asm!.done) return stream.destroy();
        if (st.next <= st.until) return;
        stream.pause();
        clearIdle();
        idle = setTimeout(() => {
          st.dead = true; // the reader went away
          stream.destroy();
        }, this.streamIdle);
        idle.unref();
        st.wake = () => {
          clearIdle();
          if (st.dead) stream.destroy();
          else {
            stream.resume();
            pauseIfAhead();
          }
        };
      };
      const sink = (i: number, parts: Chunk, size: number): boolean => {
        this.deliver(f, st, i, parts, size, size === C);
        return !st.dead;
      };
      try {
        stream = rawGet(
          url,
          first * C,
          {
            head: (status, start) => {
              asm = new ChunkAssembler(C, f.size, first, lastChunk, status === 206 ? start : 0, sink, (n) => this.chunkBuffer(n));
            },
            space: () => asm!.space(),
            wrote: (n) => {
              asm!.wrote(n);
              pauseIfAhead();
            },
            end: (err) => {
              clearIdle();
              st.wake = null;
              if (err && st.next === first) {
                if (err instanceof RawUnsupported) return resolve('unsupported');
                if (err instanceof ApiError && (err.status === 403 || err.status === 404)) return resolve('renew');
              }
              resolve('done');
            },
          },
          this.stall,
        );
      } catch {
        resolve('unsupported');
      }
    });
  }

  /** The stream through the API client (https, or what the bare socket cannot handle). */
  private async runStreamClient(f: RemoteFile, st: SeqStream): Promise<void> {
    const C = this.chunk;
    const lastChunk = Math.floor((f.size - 1) / C);
    const res = await this.get(f, { start: st.next * C });
    // a sequential pass is not written to the disk cache: it would cost more CPU than the
    // network read itself, and a re-read is served by the kernel's page cache
    const asm = new ChunkAssembler(C, f.size, st.next, lastChunk, res.status === 206 ? res.start : 0, (i, parts, size) => {
      this.deliver(f, st, i, parts, size);
      return !st.dead;
    });
    try {
      for await (const piece of res.body) {
        if (st.dead || !asm.push(piece as Buffer)) break;
        // far enough ahead of the reader: pause (unread data stays in the socket)
        while (st.next > st.until && !st.dead) {
          const moved = await new Promise<boolean>((r) => {
            const t = setTimeout(() => r(false), this.streamIdle);
            t.unref();
            st.wake = () => {
              clearTimeout(t);
              r(true);
            };
          });
          if (!moved) st.dead = true; // the reader went away
        }
        if (st.dead) break;
      }
    } finally {
      res.body.destroy();
    }
  }

  /**
   * Many random reads of one file: fetch all of it in the background (two
   * large ranges at a time) into the on-disk cache, so the rest of them are
   * local instead of a round trip each. Only for files the disk cache holds.
   */
  private startFill(f: RemoteFile, fc: FileChunks): void {
    fc.filling = true;
    this.stats.fills++;
    const lastChunk = Math.floor((f.size - 1) / this.chunk);
    let next = 0;
    let active = 0;
    const pump = () => {
      while (active < 3 && next <= lastChunk) {
        while (next <= lastChunk && (fc.have.has(next) || fc.inflight.has(next) || this.disk!.has(f.version, next))) next++;
        if (next > lastChunk) break;
        let end = next;
        while (end < lastChunk && end - next + 1 < this.segChunks && !fc.have.has(end + 1) && !fc.inflight.has(end + 1)) end++;
        active++;
        this.fetchSegment(f, fc, next, end, () => {
          active--;
          pump();
        });
        next = end + 1;
      }
    };
    pump();
  }

  /**
   * Chunks [c0, c1] by ranged GETs: a body that breaks off is asked again from
   * the first chunk it did not complete, as long as the attempts make progress.
   */
  private fetchSegment(f: RemoteFile, fc: FileChunks, c0: number, c1: number, onDone?: () => void): void {
    const C = this.chunk;
    const waits: Deferred[] = [];
    for (let i = c0; i <= c1; i++) {
      const d = deferred();
      waits.push(d);
      fc.inflight.set(i, d.promise);
    }
    fc.segs++;
    let cur = c0;
    const cacheOnDisk = !!this.disk?.worthCaching(f.size);
    const sink = (i: number, parts: Chunk, size: number): boolean => {
      this.stats.bytesFetched += size;
      const d = waits[i - c0];
      if (fc.inflight.get(i) === d.promise) fc.inflight.delete(i);
      // the sequential stream may have delivered this chunk meanwhile: storing it
      // twice would count its bytes twice against the memory budget
      if (!fc.have.has(i)) {
        this.store(f, fc, i, parts, size);
        if (cacheOnDisk) this.disk!.put(f.version, i, parts, size);
      }
      cur = i + 1;
      d.resolve(parts);
      return true;
    };
    const once = async () => {
      const start = cur * C;
      const end = Math.min(f.size, (c1 + 1) * C) - 1;
      const res = await this.get(f, { start, end });
      // a server may ignore Range (encrypted libraries) and send the whole file: skipped to `start`
      const asm = new ChunkAssembler(C, f.size, cur, c1, res.status === 206 ? res.start : 0, sink);
      try {
        for await (const piece of res.body) if (!asm.push(piece as Buffer)) break;
      } finally {
        res.body.destroy();
      }
      if (cur <= c1) throw new VfsError('EIO', `short download of ${f.path}`);
    };
    const run = async () => {
      // another try after a broken body, from where it stopped: as long as each try gets
      // at least one chunk further, and twice more when one does not
      for (let stuck = 0; ; ) {
        const before = cur;
        try {
          return await once();
        } catch (e) {
          stuck = cur === before ? stuck + 1 : 0;
          if (!transient(e) || stuck > 2) throw e;
        }
      }
    };
    run()
      .catch((e) => {
        for (let i = cur; i <= c1; i++) {
          const d = waits[i - c0];
          if (fc.inflight.get(i) === d.promise) fc.inflight.delete(i);
          d.reject(e);
        }
        // readahead may retry this range later
        if (fc.raFrontier !== undefined && fc.raFrontier > cur) fc.raFrontier = cur;
      })
      .finally(() => {
        fc.segs--;
        onDone?.();
      });
  }
}
