// The read path for files that are not dirty: ranged GETs on a reusable
// download link, cut into fixed chunks kept in a bounded in-memory LRU, with
// readahead that grows while a reader stays sequential and fetches ranges in
// parallel. A random small read fetches one chunk, never the whole file.
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { LRUCache } from 'lru-cache';
import type { SeafileApi, RangeDownload } from '../client/types.js';
import { ApiError } from '../client/errors.js';
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
}

export interface ReaderOptions {
  chunkSize?: number;
  initialWindow?: number;
  maxWindow?: number;
  segmentSize?: number;
  memoryBytes?: number;
  linkTtlMs?: number;
  maxSegmentsPerFile?: number;
}

interface Deferred {
  promise: Promise<Buffer>;
  resolve(b: Buffer): void;
  reject(e: unknown): void;
}

function deferred(): Deferred {
  let resolve!: (b: Buffer) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<Buffer>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {}); // a readahead nobody waits for must not be an unhandled rejection
  return { promise, resolve, reject };
}

export class RemoteReader {
  readonly stats = { linkRequests: 0, rangeRequests: 0, bytesFetched: 0 };
  private readonly chunk: number;
  private readonly initialWindow: number;
  private readonly maxWindow: number;
  private readonly segChunks: number;
  private readonly maxSegs: number;
  private readonly linkTtl: number;
  private readonly chunks: LRUCache<string, Buffer>;
  private readonly inflight = new Map<string, Promise<Buffer>>();
  private readonly segsPerFile = new Map<string, number>();
  private readonly links = new Map<string, { url: string; at: number; p?: Promise<string> }>();

  constructor(
    private readonly api: SeafileApi,
    opts: ReaderOptions = {},
  ) {
    this.chunk = opts.chunkSize ?? 128 * 1024;
    this.initialWindow = opts.initialWindow ?? 512 * 1024;
    this.maxWindow = opts.maxWindow ?? 32 * 1024 * 1024;
    this.segChunks = Math.max(1, Math.floor((opts.segmentSize ?? 4 * 1024 * 1024) / this.chunk));
    this.maxSegs = opts.maxSegmentsPerFile ?? 4;
    this.linkTtl = opts.linkTtlMs ?? 50 * 60 * 1000;
    this.chunks = new LRUCache<string, Buffer>({
      maxSize: opts.memoryBytes ?? 96 * 1024 * 1024,
      sizeCalculation: (b) => Math.max(1, b.length),
    });
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

  private key(f: RemoteFile, idx: number): string {
    return `${f.version}\u0000${idx}`;
  }

  /** Reads into `target`; returns the number of bytes (short only at end of file). */
  async read(f: RemoteFile, target: Buffer, len: number, offset: number, pat: ReadPattern): Promise<number> {
    if (offset >= f.size || len <= 0) return 0;
    const end = Math.min(f.size, offset + len);
    if (offset === pat.next || (offset === 0 && pat.window === 0)) {
      pat.window = pat.window ? Math.min(this.maxWindow, pat.window * 2) : this.initialWindow;
    } else if (Math.abs(offset - pat.next) > this.chunk * 2) {
      pat.window = 0;
    }
    pat.next = end;
    const C = this.chunk;
    const first = Math.floor(offset / C);
    const last = Math.floor((end - 1) / C);
    this.ensure(f, first, last, false);
    if (pat.window > 0) {
      const lastChunk = Math.floor((f.size - 1) / C);
      const raEnd = Math.min(lastChunk, Math.floor((end - 1 + pat.window) / C));
      if (raEnd > last) this.ensure(f, last + 1, raEnd, true);
    }
    let written = 0;
    for (let i = first; i <= last; i++) {
      const buf = await this.chunkAt(f, i);
      const cStart = i * C;
      const from = Math.max(offset, cStart) - cStart;
      const to = Math.min(end, cStart + buf.length) - cStart;
      if (to <= from) break;
      buf.copy(target, written, from, to);
      written += to - from;
    }
    return written;
  }

  private async chunkAt(f: RemoteFile, i: number): Promise<Buffer> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const k = this.key(f, i);
      const have = this.chunks.get(k) ?? this.inflight.get(k);
      if (have) return have;
      this.ensure(f, i, i, false); // evicted between ensure and use
    }
    const k = this.key(f, i);
    const have = this.chunks.get(k) ?? this.inflight.get(k);
    if (!have) throw new VfsError('EIO', 'chunk lost');
    return have;
  }

  /** Start fetches for the chunks in [a, b] that are neither cached nor in flight. */
  private ensure(f: RemoteFile, a: number, b: number, readahead: boolean): void {
    let runStart = -1;
    const flush = (endIdx: number) => {
      for (let s = runStart; s <= endIdx; s += this.segChunks) {
        if (readahead && (this.segsPerFile.get(f.version) ?? 0) >= this.maxSegs) return false;
        this.fetchSegment(f, s, Math.min(endIdx, s + this.segChunks - 1));
      }
      return true;
    };
    for (let i = a; i <= b; i++) {
      const k = this.key(f, i);
      const missing = !this.inflight.has(k) && !this.chunks.has(k);
      if (missing && runStart < 0) runStart = i;
      if (!missing && runStart >= 0) {
        if (!flush(i - 1)) return;
        runStart = -1;
      }
    }
    if (runStart >= 0) flush(b);
  }

  private fetchSegment(f: RemoteFile, c0: number, c1: number): void {
    const C = this.chunk;
    const start = c0 * C;
    const end = Math.min(f.size, (c1 + 1) * C) - 1;
    const waits: Deferred[] = [];
    for (let i = c0; i <= c1; i++) {
      const d = deferred();
      waits.push(d);
      this.inflight.set(this.key(f, i), d.promise);
    }
    this.segsPerFile.set(f.version, (this.segsPerFile.get(f.version) ?? 0) + 1);
    let cur = c0;
    const run = async () => {
      const res = await this.get(f, { start, end });
      // a server may ignore Range (encrypted libraries) and send the whole file: skip to `start`
      let pos = res.status === 206 ? res.start : 0;
      let buf = Buffer.allocUnsafe(Math.min(C, f.size - cur * C));
      let fill = 0;
      try {
        for await (const piece of res.body) {
          let p = piece as Buffer;
          if (pos < start) {
            const skip = Math.min(p.length, start - pos);
            pos += skip;
            p = p.subarray(skip);
          }
          while (p.length > 0 && cur <= c1) {
            const n = Math.min(p.length, buf.length - fill);
            p.copy(buf, fill, 0, n);
            fill += n;
            pos += n;
            p = p.subarray(n);
            if (fill === buf.length) {
              this.stats.bytesFetched += buf.length;
              const k = this.key(f, cur);
              this.chunks.set(k, buf);
              this.inflight.delete(k);
              waits[cur - c0].resolve(buf);
              cur++;
              if (cur <= c1) {
                buf = Buffer.allocUnsafe(Math.min(C, f.size - cur * C));
                fill = 0;
              }
            }
          }
          if (cur > c1) break;
        }
      } finally {
        res.body.destroy();
      }
      if (cur <= c1) throw new VfsError('EIO', `short download of ${f.path}`);
    };
    run()
      .catch((e) => {
        for (let i = cur; i <= c1; i++) {
          this.inflight.delete(this.key(f, i));
          waits[i - c0].reject(e);
        }
      })
      .finally(() => {
        const n = (this.segsPerFile.get(f.version) ?? 1) - 1;
        if (n <= 0) this.segsPerFile.delete(f.version);
        else this.segsPerFile.set(f.version, n);
      });
  }
}
