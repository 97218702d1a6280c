// The write path: every file being written lives in a temp file in the cache
// dir (never in memory). Once its last writer closes, it is uploaded in the
// background, a bounded number at a time, with retries. A per-file lock keeps
// an upload, a rename and an unlink of the same file from interleaving, so a
// pending upload never lands at a path the file has left.
import { randomBytes } from 'node:crypto';
import { open, stat, unlink, mkdir, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import pLimit from 'p-limit';
import type { SeafileApi } from '../client/types.js';
import { ApiError } from '../client/errors.js';
import { errnoOf, VfsError } from './errors.js';
import type { Journal } from './journal.js';
import { baseOf, isWithin, parentOf } from './paths.js';
import type { UploadMany } from '../client/upload-batch.js';
import { refusesChunked, type StartUploadStream } from '../client/stream-upload.js';
import { UploadFeed } from './upload-feed.js';

export class FileState {
  repo: string;
  path: string;
  fh: FileHandle | null = null;
  size = 0;
  mtime = Date.now();
  /** where a server copy of this file lives (null: nowhere yet) */
  remotePath: string | null = null;
  dirty = false;
  version = 0;
  uploadedVersion = 0;
  openCount = 0;
  writers = 0;
  journaled: string | null = null;
  ready: Promise<void> = Promise.resolve();
  deleted = false;
  /** temp file closed and removed: the state must not come back into the map */
  disposed = false;
  /** uploads paused while a folder above is renamed */
  hold = false;
  running: Promise<void> | null = null;
  rerun = false;
  lastError: unknown = null;
  failures = 0;
  /** the upload running while the file is written (see upload-feed.ts) */
  stream: UploadFeed | null = null;
  /** written from offset 0 since it was created or emptied: a stream may start */
  streamable = false;
  /** journal writes/removals of this file, in order */
  jchain: Promise<void> = Promise.resolve();
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly tmp: string,
    repo: string,
    path: string,
  ) {
    this.repo = repo;
    this.path = path;
  }

  /** Runs fn after every earlier locked section of this file has finished. */
  lock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => {});
    return run;
  }

  markDirty(): void {
    this.dirty = true;
    this.version++;
    this.mtime = Date.now();
  }
}

export interface UploadResult {
  id: string;
  size: number;
}

export interface WriteBackHooks {
  /** a version of `s` is now on the server at (repo, path) */
  onUploaded(s: FileState, res: UploadResult, repo: string, path: string): void;
  log(msg: string): void;
}

export interface WriteBackOptions {
  concurrency?: number;
  /** several new small files of a folder in one POST, when the API offers it */
  uploadMany?: UploadMany;
  batchMaxFiles?: number;
  batchMaxBytes?: number;
  /** larger files are uploaded on their own */
  batchFileMax?: number;
  /**
   * a new file waits this long after its last close before its upload starts,
   * so that a write-temp-then-rename lands in one upload at the final name
   * (default 0: uploads start at close, which keeps the server closest to the mount)
   */
  newFileDelayMs?: number;
  maxAttempts?: number;
  linkTtlMs?: number;
  retryBaseMs?: number;
  /** starts chunked uploads that run while a file is written (absent: uploads start after close) */
  streamUpload?: StartUploadStream;
  /** a file written from offset 0 starts streaming once it is this large (default 8 MiB) */
  streamThresholdBytes?: number;
  /** at most this many files stream at once; others upload after close (default 4) */
  maxStreams?: number;
}

const key = (repo: string, path: string) => `${repo}\u0000${path}`;
/** characters a multipart filename="..." cannot carry faithfully */
const NEEDS_QUOTING = /["\r\n]/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Failures an upload retry cannot fix: the data is kept and the error surfaced. */
function permanent(e: unknown): boolean {
  if (e instanceof ApiError) {
    return ['quota', 'forbidden', 'unauthorized', 'invalid_name', 'too_large', 'password_required', 'otp_required'].includes(e.kind);
  }
  if (e instanceof VfsError) return e.code === 'ENOSPC' || e.code === 'EINVAL';
  return false;
}

export class WriteBack {
  readonly stats = { uploads: 0, uploadedBytes: 0, failures: 0, linkRequests: 0, batches: 0, streams: 0, streamed: 0, streamAborts: 0, streamFailures: 0 };
  private readonly states = new Map<string, FileState>();
  private readonly limit: ReturnType<typeof pLimit>;
  private readonly links = new Map<string, { url: string; at: number }>();
  private readonly maxAttempts: number;
  private readonly linkTtl: number;
  private readonly retryBase: number;
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly uploadMany: UploadMany | undefined;
  private readonly batchMaxFiles: number;
  private readonly batchMaxBytes: number;
  private readonly batchFileMax: number;
  private readonly newFileDelay: number;
  private streamUpload: StartUploadStream | undefined;
  private readonly streamThreshold: number;
  private readonly maxStreams: number;
  /** streams open now (each holds a connection and two 1 MiB buffers) */
  private liveStreams = 0;
  /** new small files waiting for an upload slot, per folder */
  private readonly batches = new Map<string, { items: { s: FileState; done: () => void }[]; queued: boolean }>();

  constructor(
    private readonly api: SeafileApi,
    private readonly journal: Journal,
    private readonly dirtyDir: string,
    private readonly hooks: WriteBackHooks,
    opts: WriteBackOptions = {},
  ) {
    this.limit = pLimit(opts.concurrency ?? 8);
    this.maxAttempts = opts.maxAttempts ?? 6;
    this.linkTtl = opts.linkTtlMs ?? 50 * 60 * 1000;
    this.retryBase = opts.retryBaseMs ?? 1000;
    this.uploadMany = opts.uploadMany;
    this.batchMaxFiles = opts.batchMaxFiles ?? 32;
    this.batchMaxBytes = opts.batchMaxBytes ?? 8 * 1024 * 1024;
    this.batchFileMax = opts.batchFileMax ?? 1024 * 1024;
    this.newFileDelay = opts.newFileDelayMs ?? 0;
    this.streamUpload = opts.streamUpload;
    this.streamThreshold = opts.streamThresholdBytes ?? 8 * 1024 * 1024;
    this.maxStreams = opts.maxStreams ?? 4;
  }

  async init(): Promise<void> {
    await mkdir(this.dirtyDir, { recursive: true });
    await this.journal.init();
    // files whose upload failed for good are retried now and then (quota freed, server back)
    this.retryTimer = setInterval(() => {
      for (const s of this.states.values()) {
        if (s.dirty && !s.deleted && s.lastError && !s.running && s.writers === 0) {
          s.failures = 0;
          void this.schedule(s);
        }
      }
    }, 30_000);
    this.retryTimer.unref();
  }

  close(): void {
    if (this.retryTimer) clearInterval(this.retryTimer);
  }

  get(repo: string, path: string): FileState | undefined {
    return this.states.get(key(repo, path));
  }

  all(): FileState[] {
    return [...this.states.values()];
  }

  /** names of files with local state directly inside `dir` */
  childrenOf(repo: string, dir: string): string[] {
    const out: string[] = [];
    for (const s of this.states.values()) if (s.repo === repo && parentOf(s.path) === dir && s.path !== dir) out.push(baseOf(s.path));
    return out;
  }

  under(repo: string, dir: string): FileState[] {
    return [...this.states.values()].filter((s) => s.repo === repo && isWithin(s.path, dir) && s.path !== dir);
  }

  private newState(repo: string, path: string, id?: string): FileState {
    const sid = id ?? `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    return new FileState(sid, join(this.dirtyDir, sid), repo, path);
  }

  /** A new, empty file (create): dirty at once, so even an empty file is uploaded. */
  async createNew(repo: string, path: string): Promise<FileState> {
    const s = this.newState(repo, path);
    s.markDirty();
    s.streamable = true;
    this.states.set(key(repo, path), s);
    s.ready = (async () => {
      s.fh = await open(s.tmp, 'w+');
    })();
    try {
      await s.ready;
    } catch (e) {
      this.states.delete(key(repo, path));
      throw e;
    }
    this.persistSoon(s);
    return s;
  }

  /**
   * Local state for an existing remote file, to write to it: its content is
   * downloaded first unless it is being truncated to nothing.
   */
  async openExisting(
    repo: string,
    path: string,
    remote: { size: number; mtimeMs: number },
    truncate: boolean,
    load: (dest: string) => Promise<void>,
  ): Promise<FileState> {
    const have = this.states.get(key(repo, path));
    if (have) {
      await have.ready;
      return have;
    }
    const s = this.newState(repo, path);
    s.remotePath = path;
    s.mtime = remote.mtimeMs;
    this.states.set(key(repo, path), s);
    s.ready = (async () => {
      if (truncate || remote.size === 0) {
        s.fh = await open(s.tmp, 'w+');
        s.streamable = true;
        if (remote.size > 0) s.markDirty();
      } else {
        await load(s.tmp);
        s.fh = await open(s.tmp, 'r+');
        s.size = (await s.fh.stat()).size;
      }
    })();
    try {
      await s.ready;
    } catch (e) {
      if (this.states.get(key(repo, path)) === s) this.states.delete(key(repo, path));
      await unlink(s.tmp).catch(() => {});
      throw e;
    }
    return s;
  }

  async read(s: FileState, buf: Buffer, len: number, pos: number): Promise<number> {
    await s.ready;
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    const want = Math.max(0, Math.min(len, s.size - pos));
    if (want === 0) return 0;
    const { bytesRead } = await s.fh.read(buf, 0, want, pos);
    return bytesRead;
  }

  async write(s: FileState, buf: Buffer, len: number, pos: number): Promise<number> {
    await s.ready;
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    const { bytesWritten } = await s.fh.write(buf, 0, len, pos);
    s.size = Math.max(s.size, pos + bytesWritten);
    s.markDirty();
    if (!s.journaled) this.persistSoon(s);
    this.fedWrite(s, pos);
    return bytesWritten;
  }

  async truncate(s: FileState, size: number): Promise<void> {
    await s.ready;
    if (!s.fh) throw new VfsError('EIO', 'file closed');
    this.stopStream(s, 'truncate');
    await s.fh.truncate(size);
    s.size = size;
    s.markDirty();
    // emptied: written again from offset 0, it may stream again
    s.streamable = size === 0;
  }

  // ---- uploads that run while the file is written ----

  /** After a write landed at `pos`: feed, abort or start the file's stream. */
  private fedWrite(s: FileState, pos: number): void {
    const st = s.stream;
    if (st) {
      if (st.dead) this.dropStream(s, st);
      // the pump may already have sent the old bytes there
      else if (pos < st.claimed) this.stopStream(s, 'write below the streamed offset');
      else st.notify();
      return;
    }
    if (!s.streamable || !this.streamUpload || s.size < this.streamThreshold || s.deleted || s.hold || s.running) return;
    if (this.liveStreams >= this.maxStreams) return;
    const name = baseOf(s.path);
    if (NEEDS_QUOTING.test(name)) return;
    s.streamable = false; // one stream per emptying of the file
    const { repo, path } = s;
    const dir = parentOf(path);
    const kind = s.remotePath === path ? 'update' : 'upload';
    const start = this.streamUpload;
    const opening = (async () => {
      const link = await this.link(kind, repo, dir);
      const leading: [string, string][] = kind === 'update' ? [['target_file', path]] : [['parent_dir', dir], ['replace', '1']];
      return start(link, leading, name);
    })();
    const feed = new UploadFeed(s, repo, path, kind, opening);
    s.stream = feed;
    this.stats.streams++;
    this.liveStreams++;
    void feed.ended.then(() => this.liveStreams--);
  }

  /** Abort the file's stream (the pure-append assumption broke, or the file moved). */
  private stopStream(s: FileState, why: string): void {
    const st = s.stream;
    if (!st) return;
    s.stream = null;
    if (!st.dead) {
      this.stats.streamAborts++;
      this.hooks.log(`streaming upload of ${s.path} stopped (${why}); it is uploaded after close`);
    }
    st.abort(new Error(why));
  }

  /** A stream that failed on its own: note why, and whether the server takes chunked bodies at all. */
  private dropStream(s: FileState, st: UploadFeed): void {
    if (s.stream === st) s.stream = null;
    this.stats.streamFailures++;
    // a refusal of chunked bodies comes at once: a reset after megabytes is an ordinary failure
    if (refusesChunked(st.dead) && !(st.dead instanceof ApiError && st.dead.status === 0 && st.claimed > 2 * 1024 * 1024)) {
      if (this.streamUpload) this.hooks.log(`the server does not take chunked uploads (${(st.dead as Error).message}): uploads start after close from now on`);
      this.streamUpload = undefined;
    } else {
      this.hooks.log(`streaming upload of ${s.path} failed (${(st.dead as Error)?.message}); it is uploaded after close`);
    }
  }

  /** The running stream of `s` as the upload of its current version, when it is still usable. */
  private async finishStream(s: FileState, repo: string, path: string): Promise<UploadResult | null> {
    const st = s.stream;
    if (!st) return null;
    s.stream = null;
    const kind = s.remotePath === path ? 'update' : 'upload';
    if (st.dead || st.repo !== repo || st.path !== path || st.kind !== kind) {
      if (st.dead) this.dropStream(s, st);
      else st.abort(new Error('moved'));
      return null;
    }
    try {
      const trailing: [string, string][] = kind === 'upload' ? [['last_modify', new Date(Math.floor(s.mtime / 1000) * 1000).toISOString()]] : [];
      const res = await st.finish(trailing);
      this.stats.streamed++;
      this.hooks.log(`${path}: uploaded while it was written (${res.size} bytes, one streamed request)`);
      return res;
    } catch (e) {
      st.dead ??= e;
      this.dropStream(s, st);
      return null;
    }
  }

  /**
   * Record the dirty file in the journal (before close() returns). Journal
   * writes and removals of one file run in order; the first one starts as
   * soon as the file becomes dirty, so close() rarely has to wait for it.
   */
  persist(s: FileState): Promise<void> {
    const run = s.jchain.then(async () => {
      const where = key(s.repo, s.path);
      if (!s.dirty || s.deleted || s.journaled === where) return;
      await this.journal.write({ id: s.id, repo: s.repo, path: s.path, tmp: s.tmp, pid: process.pid, at: Date.now() });
      s.journaled = where;
    });
    s.jchain = run.catch(() => {});
    return run;
  }

  private unjournal(s: FileState): Promise<void> {
    s.journaled = null;
    const run = s.jchain.then(() => this.journal.remove(s.id));
    s.jchain = run.catch(() => {});
    return run;
  }

  /** start journaling early, without waiting (errors surface at flush) */
  private persistSoon(s: FileState): void {
    if (!s.journaled && !s.deleted) this.persist(s).catch(() => {});
  }

  /** Start (or queue another round of) the background upload of `s`. */
  schedule(s: FileState): Promise<void> {
    if (s.deleted || s.hold) return Promise.resolve();
    if (s.running) {
      s.rerun = true;
      return s.running;
    }
    s.rerun = false;
    const task = this.batchable(s) ? this.enqueueBatch(s) : this.limit(() => this.loop(s));
    const p = task.finally(() => {
      s.running = null;
      if (s.rerun && s.dirty && !s.deleted && !s.lastError && s.writers === 0) void this.schedule(s);
      else this.maybeDispose(s);
    });
    s.running = p;
    return p;
  }

  private batchable(s: FileState): boolean {
    return !!this.uploadMany && s.remotePath === null && s.size <= this.batchFileMax && s.writers === 0 && !NEEDS_QUOTING.test(baseOf(s.path));
  }

  /** Queue a new small file for a batch upload of its folder; resolves when its attempt is over. */
  private enqueueBatch(s: FileState): Promise<void> {
    const k = key(s.repo, parentOf(s.path));
    let q = this.batches.get(k);
    if (!q) {
      q = { items: [], queued: false };
      this.batches.set(k, q);
    }
    const queue = q;
    return new Promise<void>((resolve) => {
      queue.items.push({ s, done: resolve });
      if (!queue.queued) {
        queue.queued = true;
        void this.limit(() => this.runBatch(k, queue));
      }
    });
  }

  /** In an upload slot: take what has accumulated for the folder (up to the limits) and send it. */
  private async runBatch(k: string, q: { items: { s: FileState; done: () => void }[]; queued: boolean }): Promise<void> {
    q.queued = false;
    const take: { s: FileState; done: () => void }[] = [];
    let bytes = 0;
    while (q.items.length && take.length < this.batchMaxFiles && bytes < this.batchMaxBytes) {
      const it = q.items.shift()!;
      take.push(it);
      bytes += it.s.size;
    }
    if (q.items.length) {
      q.queued = true;
      void this.limit(() => this.runBatch(k, q));
    } else if (this.batches.get(k) === q) {
      this.batches.delete(k);
    }
    try {
      const states = take.map((t) => t.s);
      const rest = take.length > 1 ? await this.uploadBatch(states) : states;
      for (const s of rest) await this.loop(s);
    } finally {
      for (const t of take) t.done();
    }
  }

  /** Runs fn holding the locks of every state. */
  private lockAll<T>(states: FileState[], fn: () => Promise<T>): Promise<T> {
    let f = fn;
    for (const s of states) {
      const inner = f;
      f = () => s.lock(inner);
    }
    return f();
  }

  /** One POST for several files; returns those that must go on their own (moved meanwhile, failed). */
  private async uploadBatch(states: FileState[]): Promise<FileState[]> {
    const rest: FileState[] = [];
    await this.lockAll(states, async () => {
      const repo = states[0].repo;
      const dir = parentOf(states[0].path);
      let ok: FileState[] = [];
      for (const s of states) {
        if (!s.dirty || s.deleted || s.hold) continue;
        if (s.remotePath !== null || s.repo !== repo || parentOf(s.path) !== dir) rest.push(s);
        else ok.push(s);
      }
      if (ok.length <= 1) {
        rest.push(...ok);
        ok = [];
        return;
      }
      const versions = ok.map((s) => s.version);
      const paths = ok.map((s) => s.path);
      try {
        await Promise.all(ok.map((s) => this.persist(s)));
        const files = ok.map((s) => ({ path: s.tmp, name: baseOf(s.path) }));
        let res;
        try {
          res = await this.uploadMany!(await this.link('upload', repo, dir), dir, files, { replace: true });
        } catch (e) {
          if (!(e instanceof ApiError && (e.status === 403 || e.status === 401 || e.status === 404) && e.operation === 'upload')) throw e;
          this.dropLink('upload', repo, dir);
          res = await this.uploadMany!(await this.link('upload', repo, dir), dir, files, { replace: true });
        }
        const byName = new Map(res.map((r) => [r.name, r]));
        for (let i = 0; i < ok.length; i++) {
          const s = ok[i];
          const r = byName.get(baseOf(paths[i]));
          if (!r) {
            rest.push(s);
            continue;
          }
          s.remotePath = paths[i];
          s.uploadedVersion = Math.max(s.uploadedVersion, versions[i]);
          s.lastError = null;
          s.failures = 0;
          this.stats.uploads++;
          this.stats.uploadedBytes += r.size;
          if (s.version === versions[i]) {
            s.dirty = false;
            await this.unjournal(s);
          }
          this.hooks.onUploaded(s, { id: r.id, size: r.size }, repo, paths[i]);
          if (s.dirty && s.writers === 0) rest.push(s);
        }
        this.stats.batches++;
      } catch (e) {
        this.hooks.log(`batch upload of ${ok.length} files to ${dir} failed, uploading them one by one: ${(e as Error).message}`);
        rest.push(...ok);
      }
    });
    return rest;
  }

  /** After the last writer closed: upload now, or shortly for a new file (it may be renamed first). */
  scheduleAfterClose(s: FileState): void {
    if (s.remotePath !== null || this.newFileDelay <= 0) {
      void this.schedule(s);
      return;
    }
    setTimeout(() => {
      if (s.dirty && !s.deleted && s.writers === 0 && !s.running) void this.schedule(s);
    }, this.newFileDelay).unref();
  }

  /** Upload after `ms` unless a writer opens the file meanwhile (truncate without open). */
  scheduleSoon(s: FileState, ms: number): void {
    setTimeout(() => {
      if (s.writers === 0 && s.dirty) void this.schedule(s);
    }, ms).unref();
  }

  private async loop(s: FileState): Promise<void> {
    let backoff = this.retryBase;
    s.failures = 0;
    while (s.dirty && !s.deleted && !s.hold) {
      let retry = false;
      await s.lock(async () => {
        if (!s.dirty || s.deleted || s.hold) return;
        const v = s.version;
        const { repo, path } = s;
        try {
          await this.persist(s);
          const res = await this.uploadOnce(s, repo, path);
          s.remotePath = path;
          s.uploadedVersion = Math.max(s.uploadedVersion, v);
          s.lastError = null;
          s.failures = 0;
          this.stats.uploads++;
          this.stats.uploadedBytes += res.size;
          if (s.version === v) {
            s.dirty = false;
            await this.unjournal(s);
          }
          this.hooks.onUploaded(s, res, repo, path);
          // written again during the upload while still open: the last release uploads again
          if (s.dirty && s.writers > 0) s.rerun = false;
          retry = s.dirty && s.writers === 0;
        } catch (e) {
          if (s.deleted) return;
          if (s.version !== v && !permanent(e)) {
            // the file changed under the upload (a truncate shrank the temp file): no failure to
            // report at close, just upload the new version
            this.hooks.log(`upload of ${path} interrupted by a change of the file; uploading it again`);
            retry = s.writers === 0;
            return;
          }
          s.failures++;
          this.stats.failures++;
          s.lastError = e;
          this.hooks.log(`upload of ${path} failed (attempt ${s.failures}): ${(e as Error).message}`);
          if (!permanent(e) && s.failures < this.maxAttempts) retry = true;
        }
      });
      if (!retry) return;
      if (s.lastError) {
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  private async link(kind: 'upload' | 'update', repo: string, dir: string): Promise<string> {
    const k = `${kind}\u0000${repo}\u0000${dir}`;
    const hit = this.links.get(k);
    if (hit && Date.now() - hit.at < this.linkTtl) return hit.url;
    this.stats.linkRequests++;
    const url = kind === 'upload' ? await this.api.uploadLink(repo, dir) : await this.api.updateLink(repo, dir);
    this.links.set(k, { url, at: Date.now() });
    return url;
  }

  private dropLink(kind: 'upload' | 'update', repo: string, dir: string): void {
    this.links.delete(`${kind}\u0000${repo}\u0000${dir}`);
  }

  private async uploadOnce(s: FileState, repo: string, path: string): Promise<UploadResult> {
    // the stream that ran while the file was written, when it is still a pure append
    const streamed = await this.finishStream(s, repo, path);
    if (streamed) return streamed;
    const dir = parentOf(path);
    const name = baseOf(path);
    const size = s.size;
    // an expired link answers 403: fetch a fresh one once before calling it a failure
    const withLink = async <T>(kind: 'upload' | 'update', fn: (url: string) => Promise<T>): Promise<T> => {
      try {
        return await fn(await this.link(kind, repo, dir));
      } catch (e) {
        if (e instanceof ApiError && (e.status === 403 || e.status === 401 || e.status === 404) && e.operation !== 'uploadLink' && e.operation !== 'updateLink') {
          this.dropLink(kind, repo, dir);
          return fn(await this.link(kind, repo, dir));
        }
        throw e;
      }
    };
    if (s.remotePath === path) {
      try {
        const id = await withLink('update', (url) => this.api.update(url, path, s.tmp));
        return { id, size };
      } catch (e) {
        if (!(e instanceof ApiError && (e.kind === 'target_missing' || e.kind === 'not_found'))) throw e;
        // the server copy is gone: upload it as a new file
      }
    }
    if (NEEDS_QUOTING.test(name)) return this.uploadAwkward(s, repo, dir, name, size, withLink);
    // our own multipart body when available: it also carries the file's modification time
    const res = await withLink('upload', (url) =>
      this.uploadMany
        ? this.uploadMany(url, dir, [{ path: s.tmp, name }], { replace: true, lastModify: s.mtime })
        : this.api.upload(url, dir, s.tmp, name, { replace: true }),
    );
    const r = res.find((x) => x.name === name) ?? res[0];
    if (r && r.name !== name) this.hooks.log(`upload of ${path} landed as ${r.name}`);
    return { id: r?.id ?? '', size };
  }

  /**
   * A name a multipart header cannot carry as is (a double quote would arrive
   * as %22): upload under a plain temporary name, then rename through the API
   * (form-encoded, no quoting problem) onto the real name.
   */
  private async uploadAwkward(
    s: FileState,
    repo: string,
    dir: string,
    name: string,
    size: number,
    withLink: <T>(kind: 'upload' | 'update', fn: (url: string) => Promise<T>) => Promise<T>,
  ): Promise<UploadResult> {
    const tmpName = `.seafs-upload-${s.id}`;
    const tmpPath = dir === '/' ? `/${tmpName}` : `${dir}/${tmpName}`;
    const res = await withLink('upload', (url) => this.api.upload(url, dir, s.tmp, tmpName, { replace: true }));
    const path = dir === '/' ? `/${name}` : `${dir}/${name}`;
    await this.api.deleteFile(repo, path); // the write replaces whatever is there
    await this.api.renameFile(repo, tmpPath, name);
    return { id: res[0]?.id ?? '', size };
  }

  /** fsync: wait until everything written so far is on the server. */
  async sync(s: FileState): Promise<void> {
    await s.ready;
    const target = s.version;
    if (!s.dirty || s.uploadedVersion >= target) return;
    s.lastError = null;
    for (let round = 0; round < 3 && s.uploadedVersion < target && !s.deleted; round++) {
      s.hold = false;
      await this.schedule(s);
      if (s.running) await s.running; // a round queued behind the one we joined
      if (s.uploadedVersion < target && s.lastError) throw new VfsError(errnoOf(s.lastError), 'upload failed', { cause: s.lastError });
    }
    if (s.uploadedVersion < target && !s.deleted) throw new VfsError('EIO', `upload of ${s.path} did not complete`);
  }

  /**
   * Forget a file that is being deleted: no upload of it will start any more;
   * returns where its server copy lives, once any upload in flight has ended.
   */
  async discard(s: FileState): Promise<string | null> {
    s.deleted = true;
    this.stopStream(s, 'unlink');
    if (this.states.get(key(s.repo, s.path)) === s) this.states.delete(key(s.repo, s.path));
    return s.lock(async () => {
      await this.unjournal(s);
      this.maybeDispose(s);
      return s.remotePath;
    });
  }

  /**
   * Move the local state to a new path. `moveRemote` moves the server copy
   * (when there is one) and runs under the file's lock, so no upload is in
   * flight meanwhile.
   */
  async retarget(s: FileState, repo: string, path: string, moveRemote: (from: string) => Promise<void>): Promise<void> {
    this.stopStream(s, 'rename');
    await s.lock(async () => {
      if (s.remotePath) {
        await moveRemote(s.remotePath);
        s.remotePath = path;
      }
      if (this.states.get(key(s.repo, s.path)) === s) this.states.delete(key(s.repo, s.path));
      s.repo = repo;
      s.path = path;
      if (!s.disposed && !s.deleted) this.states.set(key(repo, path), s);
      if (s.dirty) {
        s.journaled = null;
        await this.persist(s);
      }
    });
  }

  /** Pause uploads below `dir` and wait for those in flight (before a folder rename). */
  async holdUnder(repo: string, dir: string): Promise<FileState[]> {
    const list = this.under(repo, dir);
    for (const s of list) {
      s.hold = true;
      this.stopStream(s, 'folder rename');
    }
    for (const s of list) await s.lock(async () => {});
    return list;
  }

  /** After a folder moved on the server: follow it and resume uploads. */
  async releaseUnder(list: FileState[], fromRepo: string, from: string, toRepo: string, to: string, moved: boolean): Promise<void> {
    for (const s of list) {
      if (moved && !s.deleted) {
        const np = to + s.path.slice(from.length);
        if (this.states.get(key(s.repo, s.path)) === s) this.states.delete(key(s.repo, s.path));
        if (s.remotePath) s.remotePath = np;
        s.repo = fromRepo === toRepo ? s.repo : toRepo;
        s.path = np;
        if (!s.disposed) this.states.set(key(s.repo, np), s);
        if (s.dirty) {
          s.journaled = null;
          await this.persist(s).catch(() => {});
        }
      }
      s.hold = false;
      if (s.dirty && s.writers === 0 && !s.deleted) void this.schedule(s);
    }
  }

  /** Close and delete the temp file of a state nobody needs any more. */
  maybeDispose(s: FileState): void {
    if (s.openCount > 0 || s.running) return;
    if (s.dirty && !s.deleted) return;
    if (this.states.get(key(s.repo, s.path)) === s) this.states.delete(key(s.repo, s.path));
    if (s.disposed) return;
    s.disposed = true;
    const fh = s.fh;
    s.fh = null;
    void (async () => {
      await s.ready.catch(() => {});
      await (fh ?? s.fh)?.close().catch(() => {});
      await unlink(s.tmp).catch(() => {});
    })();
  }

  /** Dirty files not yet on the server. */
  pending(): FileState[] {
    return [...this.states.values()].filter((s) => s.dirty && !s.deleted);
  }

  /**
   * Upload everything pending (open files included) and wait. Returns the
   * files that could not be uploaded (they stay in the journal).
   */
  async drain(onStatus: (pending: FileState[]) => void, timeoutMs = 0): Promise<FileState[]> {
    const started = Date.now();
    for (const s of this.pending()) {
      s.failures = 0;
      s.lastError = null;
      void this.schedule(s);
    }
    let lastReport = 0;
    for (;;) {
      const pending = this.pending();
      if (pending.length === 0) return [];
      const active = pending.filter((s) => s.running);
      if (active.length === 0) {
        // nothing running: schedule what is left, or stop when all failed for good
        const idle = pending.filter((s) => !s.lastError || !permanent(s.lastError));
        if (idle.length === 0) return pending;
        for (const s of idle) void this.schedule(s);
      }
      if (timeoutMs && Date.now() - started > timeoutMs) return pending;
      if (Date.now() - lastReport > 1000) {
        onStatus(pending);
        lastReport = Date.now();
      }
      await Promise.race([Promise.allSettled(active.map((s) => s.running)), sleep(500)]);
      for (const s of this.pending()) if (!s.running && s.lastError && s.failures >= this.maxAttempts) return this.pending().filter((x) => x.lastError);
    }
  }

  /** Take over dirty files left by a mount process that died. */
  async recover(accept: (repo: string) => boolean): Promise<number> {
    let n = 0;
    for (const e of await this.journal.orphans()) {
      if (!accept(e.repo)) continue;
      let size: number;
      try {
        size = (await stat(e.tmp)).size;
      } catch {
        await this.journal.remove(e.id);
        continue;
      }
      const existing = this.states.get(key(e.repo, e.path));
      if (existing) continue;
      const s = new FileState(e.id, e.tmp, e.repo, e.path);
      s.size = size;
      s.markDirty();
      s.fh = await open(e.tmp, 'r+');
      this.states.set(key(e.repo, e.path), s);
      await this.persist(s);
      this.hooks.log(`recovering ${e.path} (${size} bytes) from the journal`);
      void this.schedule(s);
      n++;
    }
    return n;
  }
}
