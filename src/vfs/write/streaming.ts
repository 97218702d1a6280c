// Uploads that run while a file is written. UploadFeed is the streaming
// upload of one file: a pump reads the temp file from offset 0 in bounded
// pieces, behind the writes, and hands them to a chunked upload, two reused
// buffers at a time (memory stays flat whatever the file's size). It only
// works while the file grows by appends: a write below what the pump has
// read, a truncate, a rename or an unlink aborts it, and the file is
// uploaded whole after its last close instead. Streams decides when a file
// starts streaming, and turns the capability off for good when the server
// refuses chunked bodies.
import type { FileHandle } from 'node:fs/promises';
import { ApiError, refusesChunked } from '../../client/errors.js';
import type { FileUploadStream, StartUploadStream } from '../../client/types.js';
import type { TransferLinks } from './transfer-links.js';
import { mayHaveLanded } from '../errors.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { FileState } from './file-state.js';
import { setTimeOf, uploadsUnderTempName, type UploadResult, type WriteStats } from './types.js';

const PIECE = 1024 * 1024;

/** What the feed needs of the file being written. */
export interface FeedSource {
  readonly fh: FileHandle | null;
  readonly size: number;
}

export class UploadFeed {
  /** bytes of the file the pump has taken (read or being read); a write below this breaks the stream */
  claimed = 0;
  /** why the stream can no longer be used (aborted, failed); null while it is alive */
  dead: unknown = null;
  private up: FileUploadStream | null = null;
  private wake: (() => void) | null = null;
  private finishing = false;
  private pumped: Promise<void>;
  private end!: () => void;
  /** when the request began (the server may store it from then on) */
  readonly began = Date.now();
  /** resolves once the request is over (finished, failed or aborted) */
  readonly ended = new Promise<void>((r) => (this.end = r));

  constructor(
    private readonly src: FeedSource,
    /** where the stream goes; a file that moved must not finish it */
    readonly repo: string,
    readonly path: string,
    readonly kind: 'upload' | 'update',
    opening: Promise<FileUploadStream>,
  ) {
    this.pumped = this.pump(opening);
    this.pumped.catch(() => {});
  }

  /** the file grew: the pump may go on */
  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  abort(why: unknown): void {
    this.dead ??= why;
    this.up?.abort();
    this.notify();
  }

  private async pump(opening: Promise<FileUploadStream>): Promise<void> {
    try {
      const up = await opening;
      this.up = up;
      if (this.dead) {
        up.abort();
        return;
      }
      const bufs = [Buffer.allocUnsafe(PIECE), Buffer.allocUnsafe(PIECE)];
      let which = 0;
      let inFlight: Promise<void> = Promise.resolve();
      while (!this.dead) {
        const end = this.src.size;
        // whole pieces while the file grows: fewer, larger reads and sends
        if (end - this.claimed >= PIECE || (this.finishing && this.claimed < end)) {
          const fh = this.src.fh;
          if (!fh) throw new Error('temp file closed during a stream');
          const n = Math.min(PIECE, end - this.claimed);
          const pos = this.claimed;
          this.claimed += n;
          const buf = bufs[which];
          which ^= 1;
          const { bytesRead } = await fh.read(buf, 0, n, pos);
          if (bytesRead !== n) throw new Error('temp file shrank during a stream');
          // the other buffer's send must be done before it is reused next round
          await inFlight;
          if (this.dead) break;
          inFlight = up.write(buf.subarray(0, n));
          inFlight.catch(() => {});
        } else if (this.finishing) {
          break;
        } else {
          await inFlight;
          if (this.src.size - this.claimed < PIECE && !this.finishing && !this.dead)
            await new Promise<void>((r) => (this.wake = r));
        }
      }
      await inFlight;
    } catch (e) {
      this.dead ??= e;
      this.up?.abort();
    } finally {
      if (this.dead) this.end();
    }
  }

  /**
   * Sends what is left of the file (up to its size now), then `trailing`, and
   * ends the body. Resolves with the new file id and the bytes sent.
   */
  async finish(trailing: [string, string][]): Promise<{ id: string; size: number }> {
    this.finishing = true;
    this.notify();
    try {
      await this.pumped;
      if (this.dead || !this.up) throw this.dead ?? new Error('stream never opened');
      const size = this.claimed;
      return { id: await this.up.finish(trailing), size };
    } finally {
      this.end();
    }
  }
}

/**
 * The streams of the write path: at most `max` at once (each holds a
 * connection and two 1 MiB buffers), one per emptying of a file.
 */
export class Streams {
  private start: StartUploadStream | undefined;
  private live = 0;
  private readonly feeds = new WeakMap<FileState, UploadFeed>();
  /** files written from offset 0 since they were created or emptied: a stream may start */
  private readonly fresh = new WeakSet<FileState>();

  constructor(
    start: StartUploadStream | undefined,
    private readonly links: TransferLinks,
    private readonly stats: WriteStats,
    private readonly log: (msg: string) => void,
    private readonly threshold: number,
    private readonly max: number,
    /** resolves once a folder made in the mount is on the server */
    private readonly folderReady: (repo: string, dir: string) => Promise<void> = async () => {},
    /** files that go by blocks instead (blocks/block-uploads.ts) */
    private readonly byBlocks: (s: FileState, threshold: number) => boolean = () => false,
  ) {
    this.start = start;
  }

  /** The file was created or emptied (true), or changed so that it cannot stream (false). */
  setStreamable(s: FileState, yes: boolean): void {
    if (yes) this.fresh.add(s);
    else this.fresh.delete(s);
  }

  /** After a write landed at `pos`: feed, abort or start the file's stream. */
  wrote(s: FileState, pos: number): void {
    const st = this.feeds.get(s);
    if (st) {
      if (st.dead) this.drop(s, st);
      // the pump may already have sent the old bytes there
      else if (pos < st.claimed) this.stop(s, 'write below the streamed offset');
      else st.notify();
      return;
    }
    if (!this.fresh.has(s) || !this.start || s.size < this.threshold || s.deleted || s.hold || s.running) return;
    if (s.mem !== null) return; // held in memory: it streams (if still appended to) once it lives in its temp file
    if (this.live >= this.max || this.byBlocks(s, this.threshold)) return;
    const name = baseOf(s.path);
    if (uploadsUnderTempName(name)) return;
    this.fresh.delete(s); // one stream per emptying of the file
    const { repo, path } = s;
    const dir = parentOf(path);
    const kind = s.uploadKind(path);
    const start = this.start;
    const opening = (async () => {
      await this.folderReady(repo, dir);
      const link = await this.links.get(kind, repo, dir);
      const leading: [string, string][] =
        kind === 'update'
          ? [['target_file', path]]
          : [
              ['parent_dir', dir],
              ['replace', '1'],
            ];
      return start(link, leading, name);
    })();
    const feed = new UploadFeed(s, repo, path, kind, opening);
    this.feeds.set(s, feed);
    this.stats.streams++;
    this.live++;
    void feed.ended.then(() => this.live--);
  }

  /** bytes of `s` its running stream has handed to the connection (null: not streaming) */
  sent(s: FileState): number | null {
    const st = this.feeds.get(s);
    return st && !st.dead ? st.claimed : null;
  }

  /** Abort the file's stream (the pure-append assumption broke, or the file moved). */
  stop(s: FileState, why: string): void {
    const st = this.feeds.get(s);
    if (!st) return;
    this.feeds.delete(s);
    if (!st.dead) {
      this.stats.streamAborts++;
      this.log(`streaming upload of ${s.path} stopped (${why}); it is uploaded after close`);
    }
    st.abort(new Error(why));
  }

  /** A stream that failed on its own: note why, and whether the server takes chunked bodies at all. */
  private drop(s: FileState, st: UploadFeed): void {
    if (this.feeds.get(s) === st) this.feeds.delete(s);
    this.stats.streamFailures++;
    // a refusal of chunked bodies comes at once: a reset after megabytes is an ordinary failure
    if (
      refusesChunked(st.dead) &&
      !(st.dead instanceof ApiError && st.dead.status === 0 && st.claimed > 2 * 1024 * 1024)
    ) {
      const why = (st.dead as Error).message;
      if (this.start)
        this.log(`the server does not take chunked uploads (${why}): uploads start after close from now on`);
      this.start = undefined;
    } else {
      this.log(`streaming upload of ${s.path} failed (${(st.dead as Error)?.message}); it is uploaded after close`);
    }
  }

  /** The running stream of `s` as the upload of its current version to (repo, path), when it is still usable. */
  async finish(s: FileState, repo: string, path: string): Promise<UploadResult | null> {
    const st = this.feeds.get(s);
    if (!st) return null;
    this.feeds.delete(s);
    const kind = s.uploadKind(path);
    if (st.dead || st.repo !== repo || st.path !== path || st.kind !== kind) {
      if (st.dead) this.drop(s, st);
      else st.abort(new Error('moved'));
      return null;
    }
    try {
      const mtime = new Date(Math.floor(s.mtime / 1000) * 1000).toISOString();
      // an update keeps the server's time unless the file has one of its own (utimens while it was written)
      const trailing: [string, string][] = kind === 'upload' || s.timeSet ? [['last_modify', mtime]] : [];
      const time = setTimeOf(s, trailing.length > 0);
      const res = { ...(await st.finish(trailing)), ...time };
      this.stats.streamed++;
      this.log(`${path}: uploaded while it was written (${res.size} bytes, one streamed request)`);
      return res;
    } catch (e) {
      st.dead ??= e;
      // the whole body went out: the server may have stored it although its answer was
      // lost, and the next attempt's conflict check must take that file for ours
      if (mayHaveLanded(e)) s.unsure({ since: st.began, size: st.claimed, mtime: s.mtime });
      this.drop(s, st);
      return null;
    }
  }
}
