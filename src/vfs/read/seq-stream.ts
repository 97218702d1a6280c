// The sequential stream: one GET per sequential reader from its position to
// the end of the file (or to the next chunk the disk cache holds), delivered
// chunk by chunk into the chunk store and paused whenever it is far enough
// ahead of the reader. Through the API's streaming GET capability when it has
// one (no copy: the socket reads into the chunk buffers), else through its
// ordinary download(). What a stream that ends or fails leaves unread is
// handed to ranged segments. What it delivers is also handed to the disk
// cache (cacheStreamsUpTo), which gathers it into large writes off this path,
// so that a later mount reads it locally; while the disk is behind, the
// stream waits for it.
import { ApiError, StreamUnsupported } from '../../client/errors.js';
import type { SeafileApi, StreamControl } from '../../client/types.js';
import type { ChunkCache } from './chunk-cache/chunk-cache.js';
import { ChunkAssembler } from './chunk-assembler.js';
import { deferred, type ChunkStore } from './chunk-store.js';
import type { DownloadLinks } from './download-links.js';
import type { Segments } from './segments.js';
import { VfsError } from '../errors.js';
import type {
  Chunk,
  Deferred,
  FileChunks,
  ReadConfig,
  ReaderStats,
  ReadPattern,
  RemoteFile,
  SeqStream,
} from './types.js';

export class SeqStreams {
  constructor(
    private readonly api: SeafileApi,
    private readonly cfg: ReadConfig,
    private readonly stats: ReaderStats,
    private readonly store: ChunkStore,
    private readonly links: DownloadLinks,
    private readonly segments: Segments,
    private readonly disk: ChunkCache | null,
  ) {}

  /**
   * Make chunks [from, to] come: from memory, the disk cache, or the reader's
   * stream (started, or restarted past a long stretch it would only re-send).
   * A chunk the stream has already gone past (delivered, then evicted) is
   * left to the read that wants it: the stream will not bring it again.
   * `diskDirect`: chunks on disk are left where they are (the reader reads
   * them from the cache file itself).
   */
  ahead(f: RemoteFile, fc: FileChunks, pat: ReadPattern, from: number, to: number, diskDirect = false): void {
    const C = this.cfg.chunk;
    let st = pat.stream;
    // a stream far behind the reader (it jumped ahead) is replaced; one ahead of it just waits
    if (st && (st.dead || st.fc !== fc || st.next < from - this.cfg.jumpAhead / C)) {
      this.stop(f, st);
      st = pat.stream = undefined;
    }
    const lastChunk = Math.floor((f.size - 1) / C);
    // the last chunk the stream is set to deliver so far
    let tail = st ? Math.max(st.until, st.next - 1) : -1;
    for (let i = st ? Math.max(from, st.next, st.until + 1) : from; i <= to; i++) {
      if (fc.have.has(i) || fc.inflight.has(i)) continue;
      if (this.disk?.has(f.version, i)) {
        // read straight from the cache file when the reader gets there
        if (diskDirect) continue;
        // a whole segment at once, past the window if need be: the window's edge moves a chunk per read,
        // and a read from disk per chunk would cost a syscall and a thread hop for each
        i = this.segments.fromDisk(f, fc, i, Math.min(lastChunk, Math.max(to, i + this.cfg.segChunks - 1)));
        continue;
      }
      // a short hole among chunks on disk (chunks skipped when they were written): a ranged GET,
      // not a stream that would download the chunks after it again (looked at past `to`: a hole
      // at the end of the readahead window is no reason for a stream either)
      if (this.disk && !(st && i === tail + 1)) {
        let j = i;
        const gap = (k: number) => !fc.have.has(k) && !fc.inflight.has(k) && !this.disk!.has(f.version, k);
        while (j < lastChunk && j - i + 1 < this.cfg.segChunks && gap(j + 1)) j++;
        if (j < lastChunk && j - i + 1 < this.cfg.segChunks && this.disk.has(f.version, j + 1)) {
          this.segments.ensure(f, fc, i, j, false);
          i = j;
          continue;
        }
      }
      // past a long stretch held or on its way (on disk, say), or past what the stream asked for: it
      // delivers what it was given and ends (a read may wait for those), and a new one starts here
      if (st && (i > tail + 1 + this.cfg.segChunks || i > st.last)) {
        st.last = Math.min(st.last, Math.max(st.until, tail));
        st.until = st.last;
        const w = st.wake;
        st.wake = null;
        w?.();
        st = pat.stream = undefined;
      }
      if (!st) {
        st = { fc, next: i, last: this.lastMissing(f, i), until: i - 1, waits: new Map(), wake: null, dead: false };
        pat.stream = st;
        this.run(f, st);
      }
      const d = deferred();
      st.waits.set(i, d);
      fc.inflight.set(i, d.promise);
      tail = i;
    }
    if (!st) return;
    // with a disk cache the stream goes no further than the chunks it was given: past them may lie chunks
    // on disk (an earlier mount's), which it would download again
    const until = this.disk ? tail : to;
    if (until > st.until) st.until = until;
    const w = st.wake;
    st.wake = null;
    w?.();
  }

  /**
   * The last chunk a stream from chunk i asks for: the one before the next
   * chunk on disk (the disk serves from there), else the file's last.
   */
  private lastMissing(f: RemoteFile, i: number): number {
    const lastChunk = Math.floor((f.size - 1) / this.cfg.chunk);
    if (this.disk) for (let k = i + 1; k <= lastChunk; k++) if (this.disk.has(f.version, k)) return k - 1;
    return lastChunk;
  }

  /**
   * End a stream. Chunks a read waits for are fetched with ranged GETs instead
   * (contiguous ones together); readahead nobody waits for yet is dropped.
   */
  stop(f: RemoteFile, st: SeqStream): void {
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
    for (let k = 0; k < wanted.length;) {
      let e = k;
      while (e + 1 < wanted.length && wanted[e + 1][0] === wanted[e][0] + 1) e++;
      this.segments.ensure(f, fc, wanted[k][0], wanted[e][0], false);
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

  private run(f: RemoteFile, st: SeqStream): void {
    st.fc.segs++;
    this.stats.streams++;
    this.stats.activeStreams++;
    const go = async () => {
      if (this.api.streamGet) {
        let r = await this.runDirect(f, st, await this.links.link(f));
        if (r === 'renew') r = await this.runDirect(f, st, await this.links.link(f, true));
        if (r !== 'unsupported') return;
      }
      await this.runClient(f, st);
    };
    go()
      .catch(() => {})
      .finally(() => {
        st.fc.segs--;
        this.stats.activeStreams--;
        // whatever a reader still waits for comes through ranged GETs
        st.dead = false;
        this.stop(f, st);
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
    if (!fc.have.has(i)) {
      this.store.put(f, fc, i, parts, size, pooled);
      // a pooled buffer is lent to the write (it returns to the pool once written and let go of by
      // memory, not copied); queued even when the disk is behind: the stream then holds back (keepsOnDisk)
      if (this.keepsOnDisk(f)) {
        if (pooled) {
          const buf = parts[0];
          this.store.lend(buf);
          this.disk!.put(f.version, i, parts, size, false, true, () => this.store.giveBack(buf));
        } else this.disk!.put(f.version, i, parts, size, false, true);
      }
    } else if (pooled && !d) this.store.retire(parts[0]);
    d?.resolve(parts);
  }

  /** what the stream brings of this file goes to the disk cache too (cacheStreamsUpTo) */
  private keepsOnDisk(f: RemoteFile): boolean {
    return f.size <= this.cfg.cacheStreamsUpTo && !!this.disk?.worthCaching(f.size);
  }

  /**
   * The stream through the API's streamGet, read straight into the chunk
   * buffers. Resolves 'unsupported' or 'renew' (link refused) when nothing
   * was delivered yet and the caller should try otherwise; 'done' in every
   * other case.
   */
  private runDirect(f: RemoteFile, st: SeqStream, url: string): Promise<'done' | 'unsupported' | 'renew'> {
    const C = this.cfg.chunk;
    const lastChunk = st.last;
    const first = st.next;
    const end = Math.min(f.size, (lastChunk + 1) * C) - 1;
    return new Promise((resolve) => {
      let asm: ChunkAssembler | null = null;
      let idle: NodeJS.Timeout | null = null;
      let stream: StreamControl;
      const clearIdle = () => {
        if (idle) clearTimeout(idle);
        idle = null;
      };
      // the disk cache is behind: consumption waits for it (memory stays bounded, every chunk reaches the disk)
      const disk = this.keepsOnDisk(f) ? this.disk : null;
      let diskWait = false;
      const pauseIfAhead = () => {
        if (st.dead || asm!.done || st.next > st.last) return stream.destroy();
        if (diskWait) return;
        if (disk?.behind()) {
          stream.pause();
          clearIdle();
          diskWait = true;
          disk.whenRoom(() => {
            diskWait = false;
            if (st.dead) return stream.destroy();
            stream.resume();
            pauseIfAhead();
          });
          return;
        }
        if (st.next <= st.until) return;
        stream.pause();
        clearIdle();
        idle = setTimeout(() => {
          st.dead = true; // the reader went away
          stream.destroy();
        }, this.cfg.streamIdle);
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
        stream = this.api.streamGet!(
          url,
          first * C,
          {
            head: (status, start, _length, etag) => {
              // a direct URL answered with another version than this file's: read it through a link
              if (this.links.otherVersion(f, url, etag)) throw new StreamUnsupported('another version');
              asm = new ChunkAssembler(C, f.size, first, lastChunk, status === 206 ? start : 0, sink, (n) =>
                this.store.buffer(n),
              );
            },
            space: () => asm!.space(),
            wrote: (n) => {
              asm!.wrote(n);
              pauseIfAhead();
            },
            end: (err) => {
              clearIdle();
              st.wake = null;
              if (err) this.links.noteFailure(url, err);
              if (err && st.next === first) {
                if (err instanceof StreamUnsupported && err.message === 'another version') return resolve('renew');
                if (err instanceof StreamUnsupported) return resolve('unsupported');
                if (err instanceof ApiError && (err.status === 403 || err.status === 404)) return resolve('renew');
              }
              resolve('done');
            },
          },
          this.cfg.stall !== undefined ? { idleMs: this.cfg.stall, end, repoId: f.repo } : { end, repoId: f.repo },
        );
      } catch {
        resolve('unsupported');
      }
    });
  }

  /** The stream through the API's download() (https, or what streamGet cannot read). */
  private async runClient(f: RemoteFile, st: SeqStream): Promise<void> {
    const C = this.cfg.chunk;
    const lastChunk = st.last;
    const res = await this.links.get(f, { start: st.next * C, end: Math.min(f.size, (lastChunk + 1) * C) - 1 });
    const asm = new ChunkAssembler(
      C,
      f.size,
      st.next,
      lastChunk,
      res.status === 206 ? res.start : 0,
      (i, parts, size) => {
        this.deliver(f, st, i, parts, size);
        return !st.dead;
      },
    );
    const disk = this.keepsOnDisk(f) ? this.disk : null;
    try {
      for await (const piece of res.body) {
        if (st.dead || !asm.push(piece as Buffer) || st.next > st.last) break;
        // the disk cache is behind: wait for it (see runDirect)
        while (disk?.behind() && !st.dead) await new Promise<void>((r) => disk.whenRoom(r));
        // far enough ahead of the reader: pause (unread data stays in the socket)
        while (st.next > st.until && st.next <= st.last && !st.dead) {
          const moved = await new Promise<boolean>((r) => {
            const t = setTimeout(() => r(false), this.cfg.streamIdle);
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
}
