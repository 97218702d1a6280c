// The read path for files that are not dirty: ranged GETs on a reusable
// download link, cut into fixed chunks kept in a bounded in-memory store,
// with readahead that grows while a reader stays sequential (a streaming GET
// for large files, ranged segments for small ones). A random small read
// fetches one chunk, never the whole file; a read wholly on disk goes from
// the disk cache's file straight into the caller's buffer. This file composes the engine:
// pattern.ts classifies each read, chunk-store.ts holds the chunks,
// seq-stream.ts and segments.ts fetch them, chunk-cache/ keeps them on disk.
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';
import type { ChunkCache } from './chunk-cache/chunk-cache.js';
import { blockReuse, type BlockReuse } from './block-reuse.js';
import { ChunkStore } from './chunk-store.js';
import { DownloadLinks } from './download-links.js';
import { classifyRead } from './pattern.js';
import { Segments } from './segments.js';
import { SeqStreams } from './seq-stream.js';
import type {
  Chunk,
  FileChunks,
  Pending,
  ReadConfig,
  ReaderMemory,
  ReaderOptions,
  ReaderStats,
  ReadPattern,
  RemoteFile,
} from './types.js';
import { newReaderStats } from './types.js';

export type { ReaderOptions, ReadPattern, RemoteFile } from './types.js';

/** The reader's options with their defaults. */
export function readConfig(opts: ReaderOptions = {}): ReadConfig {
  const chunk = opts.chunkSize ?? 128 * 1024;
  return {
    chunk,
    initialWindow: opts.initialWindow ?? 512 * 1024,
    maxWindow: opts.maxWindow ?? 16 * 1024 * 1024,
    segChunks: Math.max(1, Math.floor((opts.segmentSize ?? 4 * 1024 * 1024) / chunk)),
    maxSegs: opts.maxSegmentsPerFile ?? 4,
    linkTtl: opts.linkTtlMs ?? 50 * 60 * 1000,
    memBudget: opts.memoryBytes ?? 32 * 1024 * 1024,
    fillAfter: opts.fillAfterRandomReads ?? 32,
    streamMin: opts.streamMinBytes ?? 8 * 1024 * 1024,
    jumpAhead: 8 * 1024 * 1024,
    // the kernel's readahead (512 KiB) sends reads up to about 1 MiB out of order
    keepBehind: Math.ceil((2 * 1024 * 1024) / chunk),
    fillMax: opts.fillMaxBytes ?? 2 * 1024 ** 3,
    streamIdle: opts.streamIdleMs ?? 5_000,
    stall: opts.stallMs,
    cacheStreamsUpTo: opts.cacheStreamsUpTo ?? 256 * 1024 * 1024,
  };
}

export class RemoteReader {
  readonly stats: ReaderStats = newReaderStats();
  /** blocks of other cached versions taken instead of downloaded (block-reuse.ts); null: off */
  readonly reuse: BlockReuse | null;
  private readonly cfg: ReadConfig;
  private readonly store: ChunkStore;
  private readonly links: DownloadLinks;
  private readonly segments: Segments;
  private readonly streams: SeqStreams;

  constructor(
    api: SeafileApi,
    opts: ReaderOptions = {},
    private readonly disk: ChunkCache | null = null,
    /** a file turned out to have changed on the server */
    onStale?: (f: RemoteFile) => void,
    /** whether a library is unencrypted: block reuse is for those only (absent: off) */
    plain?: (repo: string) => Promise<boolean>,
  ) {
    this.cfg = readConfig(opts);
    this.reuse = blockReuse(api, disk, plain, { blockBytes: opts.blockBytes, minBytes: opts.blockReuseMinBytes });
    // a chunk the disk skipped (it was behind) is offered again as memory lets it go
    this.store = new ChunkStore(this.cfg.chunk, this.cfg.memBudget, (version, idx, buf, size) => {
      if (disk?.wasSkipped(version, idx)) disk.put(version, idx, buf, size, true);
    });
    this.links = new DownloadLinks(api, this.cfg.linkTtl, this.stats, onStale);
    this.segments = new Segments(this.cfg, this.stats, this.store, this.links, disk, this.bring);
    this.streams = new SeqStreams(api, this.cfg, this.stats, this.store, this.links, this.segments, disk);
  }

  /** chunks first..last of a version reserved for other versions' blocks are brought (block-reuse.ts); false: none */
  private readonly bring = (version: string, first: number, last: number): Promise<void> | false =>
    this.reuse?.bring(version, first, last) ?? false;

  /** reads unencrypted files through the file server's direct URL when `url` gives one (download-links.ts) */
  useDirectUrls(url: DownloadLinks['direct'], log: (line: string) => void): void {
    this.links.direct = url;
    this.links.directLog = log;
  }

  /** whether files are read through direct URLs (not turned off by a server that lacks them) */
  get directDownloads(): boolean {
    return this.links.direct !== null;
  }

  /** Download the whole file into `dest` (to open an existing file for writing). */
  async downloadWhole(f: RemoteFile, dest: string): Promise<void> {
    if (f.size === 0) {
      await writeFile(dest, '');
      return;
    }
    const res = await this.links.get(f);
    await pipeline(res.body, createWriteStream(dest));
  }

  /** bytes of chunks held in memory, and the budget (for `status` and tests) */
  memory(): ReaderMemory {
    return this.store.memory();
  }

  /**
   * Reads into `target` and returns the byte count (short only at end of
   * file). When every chunk is in memory the answer is synchronous: a number,
   * not a promise, which keeps the hot sequential path free of microtasks.
   */
  read(f: RemoteFile, target: Buffer, len: number, offset: number, pat: ReadPattern): number | Promise<number> {
    if (offset >= f.size || len <= 0) return 0;
    // the first read of a version learns which of its chunks the disk holds (an earlier mount's too),
    // and which blocks other versions hold (block-reuse.ts)
    if (this.disk && !(this.disk.ready(f.version) && (this.reuse?.ready(f) ?? true))) {
      const again = () => this.read(f, target, len, offset, pat);
      const opened = this.reuse ? this.reuse.prepare(f, () => this.links.link(f)) : this.disk.open(f.version, f.size);
      return opened.then(again, again);
    }
    const end = Math.min(f.size, offset + len);
    const step = classifyRead(pat, offset, end, f.size, this.cfg);
    pat.window = step.window;
    pat.next = step.next;
    pat.started = true;
    if (step.random) this.segments.noteRandomRead(f, this.store.fileChunks(f));
    const C = this.cfg.chunk;
    const first = Math.floor(offset / C);
    const last = Math.floor((end - 1) / C);
    const fc = this.store.fileChunks(f);
    if (this.disk && this.onDiskOnly(f, fc, first, last)) return this.readDisk(f, fc, target, offset, end, pat);
    if (pat.window > 0) {
      const lastChunk = Math.floor((f.size - 1) / C);
      const raEnd = Math.min(lastChunk, Math.floor((end - 1 + pat.window) / C));
      // a stream pays off for large files; small ones take a ranged GET or two.
      // The stream is asked first, for the read's own chunks too: a chunk it is
      // about to deliver anyway is not fetched twice.
      if (f.size > this.cfg.streamMin) this.streams.ahead(f, fc, pat, first, raEnd);
      if (pat.stream) this.releaseBehind(f, fc, pat, first);
      this.segments.ensure(f, fc, first, last, false);
      if (f.size <= this.cfg.streamMin && raEnd > last) this.segments.ensure(f, fc, last + 1, raEnd, true);
    } else {
      this.segments.ensure(f, fc, first, last, false);
      if (pat.stream) {
        this.streams.stop(f, pat.stream);
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

  /** every chunk of [first, last] is on disk, and none is in memory or on its way there */
  private onDiskOnly(f: RemoteFile, fc: FileChunks, first: number, last: number): boolean {
    for (let i = first; i <= last; i++)
      if (fc.have.has(i) || fc.inflight.has(i) || !this.disk!.has(f.version, i)) return false;
    return true;
  }

  /**
   * A read whose chunks are all on disk: from the cache file straight into
   * the kernel's buffer, read synchronously once the file is open; the kernel's readahead
   * of the cache file runs ahead of a sequential reader as the stream does on
   * the network. Readahead here only starts what the disk lacks further on (a
   * stream for a hole). Should the disk fail it (evicted meanwhile), the
   * ordinary path fetches it.
   */
  private readDisk(
    f: RemoteFile,
    fc: FileChunks,
    target: Buffer,
    offset: number,
    end: number,
    pat: ReadPattern,
  ): number | Promise<number> {
    const C = this.cfg.chunk;
    if (pat.window > 0 && f.size > this.cfg.streamMin) {
      const lastChunk = Math.floor((f.size - 1) / C);
      const raEnd = Math.min(lastChunk, Math.floor((end - 1 + pat.window) / C));
      this.streams.ahead(f, fc, pat, Math.floor(end / C), raEnd, true);
    } else if (pat.window === 0 && pat.stream) {
      this.streams.stop(f, pat.stream);
      pat.stream = undefined;
    }
    // chunks reserved for blocks another version holds are brought first (block-reuse.ts)
    const brought = this.bring(f.version, Math.floor(offset / C), Math.floor((end - 1) / C));
    if (!brought) {
      const now = this.disk!.readAtNow(f.version, offset, target, end - offset);
      if (now !== null) return this.afterDisk(f, fc, target, offset, end, now);
    }
    const read = () =>
      this.disk!.readAt(f.version, offset, target, end - offset).then((ok) =>
        this.afterDisk(f, fc, target, offset, end, ok),
      );
    return brought ? brought.then(read) : read();
  }

  /** a disk read done: its count, or (the disk failed it: evicted meanwhile) the ordinary path */
  private afterDisk(
    f: RemoteFile,
    fc: FileChunks,
    target: Buffer,
    offset: number,
    end: number,
    ok: boolean,
  ): number | Promise<number> {
    const C = this.cfg.chunk;
    if (ok) {
      // a chunk counts once, when a read reaches its end
      this.stats.diskChunks += Math.floor(end / C) - Math.floor(offset / C) + (end === f.size && end % C ? 1 : 0);
      return end - offset;
    }
    const first = Math.floor(offset / C);
    const last = Math.floor((end - 1) / C);
    this.segments.ensure(f, fc, first, last, false);
    return this.readSlow(f, fc, target, offset, end, first, last, 0);
  }

  /**
   * A streaming reader lets go of the chunks it has gone past (all but the
   * last few, for reads that arrive late): what it read is in the kernel's
   * page cache, so they would only hold memory until the budget pushed them
   * out. A cold 1 GiB read then holds its window ahead, not the whole budget
   * (measured: peak RSS of the mount 20 MiB lower). Another handle reading
   * the same file far behind this one fetches its chunks again.
   */
  private releaseBehind(f: RemoteFile, fc: FileChunks, pat: ReadPattern, first: number): void {
    const upTo = first - this.cfg.keepBehind; // exclusive
    const from = pat.released ?? upTo;
    // a chunk the disk cache skipped (it was behind) stays, to be offered to it again as memory lets it go
    if (upTo > from) this.store.release(fc, from, upTo - 1, (i) => this.disk?.wasSkipped(f.version, i) === true);
    // what the stream has yet to bring below that point (the reader skipped ahead of it, within the
    // jump it follows) is let go by a later read, once it has come
    const done = Math.min(upTo, pat.stream?.next ?? upTo);
    if (pat.released === undefined || done > pat.released) pat.released = done;
  }

  /** The handle is closed: its stream, if any, ends (it must not hold a connection). */
  closePattern(f: RemoteFile, pat: ReadPattern): void {
    if (pat.stream) this.streams.stop(f, pat.stream);
    pat.stream = undefined;
  }

  /** resolves once the disk cache has no chunk writes in flight (for tests and shutdown) */
  async diskIdle(): Promise<void> {
    await this.disk?.flush();
    await this.reuse?.idle();
  }

  /**
   * At unmount: the chunks still in memory that the disk skipped are written
   * now (waiting for the disk when it is behind), then the disk cache closes.
   */
  async closeDisk(): Promise<void> {
    const disk = this.disk;
    if (!disk) return;
    for (const c of this.store.held()) {
      if (!disk.wasSkipped(c.version, c.idx)) continue;
      if (!disk.put(c.version, c.idx, c.buf, c.size, true) && disk.wasSkipped(c.version, c.idx)) {
        await disk.flush();
        disk.put(c.version, c.idx, c.buf, c.size, true);
      }
    }
    if (this.reuse) {
      // the blocks just written are indexed for the next mount (a few seconds at most)
      await disk.flush();
      await Promise.race([this.reuse.idle(), new Promise((r) => setTimeout(r, 3000).unref())]);
      await this.reuse.close();
    }
    await disk.close();
  }

  private copyOut(parts: Chunk, i: number, target: Buffer, at: number, offset: number, end: number): number {
    const C = this.cfg.chunk;
    const cStart = i * C;
    const from = Math.max(offset, cStart) - cStart;
    const to = Math.min(end, cStart + C) - cStart;
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

  /** the rest of a read, from chunk i on, once a chunk is not in memory */
  private async readSlow(
    f: RemoteFile,
    fc: FileChunks,
    target: Buffer,
    offset: number,
    end: number,
    i: number,
    last: number,
    written: number,
  ): Promise<number> {
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
      this.segments.ensure(f, fc, i, i, false); // evicted between ensure and use
    }
    throw new VfsError('EIO', 'chunk lost');
  }
}
