// Ranged segments: chunks fetched by ranged GETs of up to `segmentSize`
// (what a random read, small-file readahead and the chunks a stream left
// behind use), or read back from the on-disk cache, and the background fill
// of a whole file into that cache once it is read at random often enough.
import type { ChunkCache } from './chunk-cache/chunk-cache.js';
import { ChunkAssembler } from './chunk-assembler.js';
import { deferred, type ChunkStore } from './chunk-store.js';
import type { DownloadLinks } from './download-links.js';
import { retryable, VfsError } from '../errors.js';
import type { Chunk, Deferred, FileChunks, Pending, ReadConfig, ReaderStats, RemoteFile } from './types.js';

export class Segments {
  constructor(
    private readonly cfg: ReadConfig,
    private readonly stats: ReaderStats,
    private readonly store: ChunkStore,
    private readonly links: DownloadLinks,
    private readonly disk: ChunkCache | null,
    /** before the disk is read for chunks first..last: those reserved for blocks of other versions are brought
     * (block-reuse.ts `bring`; false: none was reserved). The reader gives it. */
    private readonly bring: (version: string, first: number, last: number) => Promise<void> | false = () => false,
  ) {}

  /**
   * Start fetches for the chunks in [a, b] that are neither cached nor in
   * flight: from the disk cache, or by ranged GETs of one segment each.
   * Readahead stops at the per-file limit of GETs at once.
   */
  ensure(f: RemoteFile, fc: FileChunks, a: number, b: number, readahead: boolean): void {
    const segChunks = this.cfg.segChunks;
    let runStart = -1;
    const flush = (endIdx: number): boolean => {
      for (let s = runStart; s <= endIdx; s += segChunks) {
        if (readahead && fc.segs >= this.cfg.maxSegs) return false;
        const e = Math.min(endIdx, s + segChunks - 1);
        this.fetchSegment(f, fc, s, e);
      }
      return true;
    };
    for (let i = a; i <= b; i++) {
      const missing = !fc.inflight.has(i) && !fc.have.has(i);
      if (missing && this.disk?.has(f.version, i)) {
        // the run of missing chunks before it ends here (else its GET would take these too)
        if (runStart >= 0 && !flush(i - 1)) return;
        runStart = -1;
        i = this.fromDisk(f, fc, i, b);
        continue;
      }
      if (missing && runStart < 0) runStart = i;
      if (!missing && runStart >= 0) {
        if (!flush(i - 1)) return;
        runStart = -1;
      }
    }
    if (runStart >= 0) flush(b);
  }

  /**
   * Chunk a, and those after it up to b that are on disk too and not held or
   * on their way (at most a segment), from the on-disk cache in one read; a
   * miss there (evicted meanwhile, or a reserved block that could not be
   * brought) falls back to the network for the chunks the disk lacks, and to
   * one more disk read each for those it has. Returns the last chunk taken.
   * `again`: such a read of one chunk (its failure goes to the network).
   */
  fromDisk(f: RemoteFile, fc: FileChunks, a: number, b = a, again = false): number {
    const C = this.cfg.chunk;
    let e = a;
    while (
      e < b &&
      e + 1 - a < this.cfg.segChunks &&
      !fc.have.has(e + 1) &&
      !fc.inflight.has(e + 1) &&
      this.disk!.has(f.version, e + 1)
    )
      e++;
    // whole chunks are read into the pool's buffers, which go back to it once memory lets them go
    const bufs: Buffer[] = [];
    for (let i = a; i <= e; i++) bufs.push(this.store.buffer(Math.min(C, f.size - i * C)));
    const brought = this.bring(f.version, a, e);
    const run = brought
      ? brought.then(() => this.disk!.getRun(f.version, a, bufs))
      : this.disk!.getRun(f.version, a, bufs);
    const mine: Pending[] = [];
    for (let i = a; i <= e; i++) {
      const buf = bufs[i - a];
      const size = buf.length;
      const p: Pending = run.then((ok): Chunk | Promise<Chunk> => {
        if (fc.inflight.get(i) === p) fc.inflight.delete(i);
        if (ok) {
          this.stats.diskChunks++;
          const have = fc.have.get(i);
          if (have) {
            if (size === C) this.store.retire(buf);
            return have;
          }
          const parts = [buf];
          this.store.put(f, fc, i, parts, size, size === C);
          return parts;
        }
        const have = fc.have.get(i);
        if (have) return have;
        const other = fc.inflight.get(i);
        if (other) return other;
        if (size === C) this.store.retire(buf);
        if (!again && this.disk!.stored(f.version, i)) this.fromDisk(f, fc, i, i, true);
        else {
          // with the chunks after it that fail as well and are not on disk either: one GET
          let j = i;
          while (j < e && fc.inflight.get(j + 1) === mine[j + 1 - a] && !this.disk!.stored(f.version, j + 1)) j++;
          this.fetchSegment(f, fc, i, j);
        }
        return fc.inflight.get(i)!;
      });
      p.catch(() => {});
      fc.inflight.set(i, p);
      mine.push(p);
    }
    return e;
  }

  /**
   * A random read of the file (pattern.ts said so). Many of them: fetch all
   * of it in the background, if the disk cache can hold it.
   */
  noteRandomRead(f: RemoteFile, fc: FileChunks): void {
    // a small file is fetched sooner: all of it costs about what a few round trips do
    const after = Math.min(this.cfg.fillAfter, Math.max(2, Math.ceil(f.size / (8 * 1024 * 1024))));
    if (++fc.randomReads >= after && !fc.filling && this.disk?.worthCaching(f.size) && f.size <= this.cfg.fillMax) {
      this.startFill(f, fc);
    }
  }

  /**
   * Many random reads of one file: fetch all of it in the background (three
   * large ranges at a time) into the on-disk cache, so the rest of them are
   * local instead of a round trip each. Only for files the disk cache holds.
   */
  private startFill(f: RemoteFile, fc: FileChunks): void {
    fc.filling = true;
    this.stats.fills++;
    const lastChunk = Math.floor((f.size - 1) / this.cfg.chunk);
    let next = 0;
    let active = 0;
    const pump = () => {
      while (active < 3 && next <= lastChunk) {
        while (next <= lastChunk && (fc.have.has(next) || fc.inflight.has(next) || this.disk!.has(f.version, next)))
          next++;
        if (next > lastChunk) break;
        let end = next;
        while (
          end < lastChunk &&
          end - next + 1 < this.cfg.segChunks &&
          !fc.have.has(end + 1) &&
          !fc.inflight.has(end + 1)
        )
          end++;
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
  fetchSegment(f: RemoteFile, fc: FileChunks, c0: number, c1: number, onDone?: () => void): void {
    const C = this.cfg.chunk;
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
        this.store.put(f, fc, i, parts, size);
        if (cacheOnDisk) this.disk!.put(f.version, i, parts, size);
      }
      cur = i + 1;
      d.resolve(parts);
      return true;
    };
    const once = async () => {
      const start = cur * C;
      const end = Math.min(f.size, (c1 + 1) * C) - 1;
      const res = await this.links.get(f, { start, end });
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
      for (let stuck = 0; ;) {
        const before = cur;
        try {
          return await once();
        } catch (e) {
          stuck = cur === before ? stuck + 1 : 0;
          if (!retryable(e) || stuck > 2) throw e;
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
      })
      .finally(() => {
        fc.segs--;
        onDone?.();
      });
  }
}
