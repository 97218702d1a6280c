// The write path, composed: a file being written lives in memory while it is
// new and small, else in a temp file in the cache dir (local-data.ts); once
// its last writer closes it is uploaded
// in the background (upload-queue.ts, uploader.ts), large files already while
// they are written (streaming.ts), and recorded in the journal until it is on
// the server (journal.ts). This file holds the table of files with local
// data, their reads and writes, and the moves (rename, unlink, folder rename)
// that must not interleave with an upload: each runs under the file's lock,
// so a pending upload never lands at a path the file has left. Longer than
// most modules for that reason: the table and the moves under its locks stay
// together.
import { mkdir, open, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SeafileApi } from '../../client/types.js';
import { errnoOf, VfsError } from '../errors.js';
import { baseOf, isWithin, parentOf } from '../common/paths.js';
import { TransferLinks } from './transfer-links.js';
import { FileState, stateKey } from './file-state.js';
import { FileJournal } from './file-journal.js';
import type { Journal } from './journal.js';
import { LocalData } from './local-data.js';
import { Streams } from './streaming.js';
import { PendingFolders } from './pending-folders.js';
import { newWriteStats, type WriteBackHooks, type WriteBackOptions } from './types.js';
import { UploadQueue } from './upload-queue.js';
import { Uploader } from './uploader.js';
import { LandedCopies } from './landed-copies.js';
import type { BlockProgress } from './blocks/block-sender.js';
import { BLOCK_SIZE, BlockUploads } from './blocks/block-uploads.js';
import { Hasher } from '../common/block-hasher.js';
import { VersionCheck } from './version-check.js';
import { CacheRoom } from './cache-room.js';

export { FileState } from './file-state.js';
export type { UploadResult, WriteBackHooks, WriteBackOptions } from './types.js';

/** local states made by this process (part of their ids) */
let made = 0;

export class WriteBack {
  readonly stats = newWriteStats();
  private readonly states = new Map<string, FileState>();
  private readonly journal: FileJournal;
  /** the bytes of each file, in memory or in its temp file */
  readonly data: LocalData;
  private readonly streams: Streams;
  private readonly queue: UploadQueue;
  /** the conflict check's listings */
  readonly check: VersionCheck;
  /** copies uploads may have left behind files deleted or renamed since (their answers were lost) */
  readonly landed: LandedCopies;
  /** folders made here that the server does not hold yet */
  readonly folders: PendingFolders;
  /** large files by blocks: only what the server lacks is sent */
  readonly blocks: BlockUploads;
  /** the temp files' share of --cache-max-size: writes wait for uploads to make room */
  readonly room: CacheRoom;

  constructor(
    api: SeafileApi,
    journal: Journal,
    private readonly dirtyDir: string,
    private readonly hooks: WriteBackHooks,
    opts: WriteBackOptions = {},
  ) {
    this.journal = new FileJournal(journal, (s) => this.data.bytes(s));
    this.folders = new PendingFolders(
      api,
      journal,
      hooks.log,
      (repo, path) => hooks.folderCreated?.(repo, path),
      opts.retryBaseMs ?? 1000,
    );
    const folderReady = (repo: string, dir: string) => this.folders.ready(repo, dir);
    const links = new TransferLinks(api, opts.linkTtlMs ?? 50 * 60 * 1000, () => this.stats.linkRequests++);
    const threshold = opts.streamThresholdBytes ?? 8 * 1024 * 1024;
    this.blocks = new BlockUploads(api, new Hasher(2, opts.blocks?.blockSize ?? BLOCK_SIZE), hooks.log, folderReady, {
      stateFile: join(dirname(dirtyDir), 'blocks-off.json'),
      ...opts.blocks,
    });
    // a file in memory never streams: it spills before it could reach the streaming threshold
    this.data = new LocalData(
      {
        fileMax: Math.min(opts.memoryFileMax ?? 1024 * 1024, threshold - 1),
        budget: opts.memoryBudget ?? 8 * 1024 * 1024,
      },
      (s) => this.journal.moved(s),
    );
    this.streams = new Streams(
      api.startUploadStream,
      links,
      this.stats,
      hooks.log,
      threshold,
      opts.maxStreams ?? 4,
      folderReady,
      (s, t) => this.blocks.skipsStream(s, t),
    );
    this.check = new VersionCheck(api, (ms) => this.data.noteRoundTrip(ms));
    this.room = new CacheRoom(
      opts.cacheMaxBytes ?? 0,
      () => this.states.values(),
      () => hooks.offline?.() ?? false,
      hooks.log,
      opts.readCache ?? null,
    );
    this.landed = new LandedCopies(this.check, api, hooks.log, opts.retryBaseMs ?? 1000);
    const uploader = new Uploader(
      api,
      links,
      this.streams,
      this.journal,
      this.data,
      this.stats,
      hooks,
      this.check,
      folderReady,
      this.blocks,
    );
    const table = {
      all: () => this.states.values(),
      pending: () => this.pending(),
      idle: (s: FileState) => this.maybeDispose(s),
      relocate: (s: FileState, path: string) => {
        this.unplace(s);
        s.path = path;
        this.place(s);
      },
      conflicted: (repo: string, path: string, copy: string) => hooks.onConflict?.(repo, path, copy),
    };
    this.queue = new UploadQueue(uploader, this.journal, table, this.stats, hooks.log, {
      concurrency: opts.concurrency ?? 8,
      maxAttempts: opts.maxAttempts ?? 6,
      offline: () => hooks.offline?.() ?? false,
      offlineGraceMs: opts.offlineGraceMs ?? 30_000,
      retryBaseMs: opts.retryBaseMs ?? 1000,
      newFileDelayMs: opts.newFileDelayMs ?? 0,
      // a folder's batches go one after another, each a listing and a POST: at 80 ms a folder of 100 new
      // files took 4 rounds with 32 files each, 1 with 128 (untar: settle 1.15 -> 0.58 s; no change at 0 ms)
      batchMaxFiles: opts.batchMaxFiles ?? 128,
      batchMaxBytes: opts.batchMaxBytes ?? 8 * 1024 * 1024,
      batchFileMax: opts.batchFileMax ?? 1024 * 1024,
      batchesPerFolder: opts.batchesPerFolder ?? 1,
      batchGapMs: opts.batchGapMs ?? 50,
    });
  }

  async init(): Promise<void> {
    await mkdir(this.dirtyDir, { recursive: true });
    await this.journal.journal.init();
    await this.blocks.init();
    this.queue.startRetryTimer();
  }

  close(): void {
    this.queue.close();
    this.folders.close();
    this.landed.close();
    this.blocks.close();
    this.journal.journal.close();
  }

  /** bytes of `s` already sent by the upload that runs while it is written (null: none runs) */
  streamedBytes(s: FileState): number | null {
    return this.streams.sent(s);
  }

  /** how far the upload of `s` by blocks got (null: none runs) */
  blockProgress(s: FileState): BlockProgress | null {
    return this.blocks.progressOf(s);
  }

  /** Retry now every upload that failed (the server is back). */
  retryNow(): void {
    this.queue.retryFailed();
  }

  get(repo: string, path: string): FileState | undefined {
    return this.states.get(stateKey(repo, path));
  }

  /** names of files with local state directly inside `dir` */
  childrenOf(repo: string, dir: string): string[] {
    const out: string[] = [];
    for (const s of this.states.values())
      if (s.repo === repo && parentOf(s.path) === dir && s.path !== dir) out.push(baseOf(s.path));
    return out;
  }

  under(repo: string, dir: string): FileState[] {
    return [...this.states.values()].filter((s) => s.repo === repo && isWithin(s.path, dir) && s.path !== dir);
  }

  /** Dirty files not yet on the server. */
  pending(): FileState[] {
    return [...this.states.values()].filter((s) => s.dirty && !s.deleted);
  }

  private newState(repo: string, path: string): FileState {
    // unique among the mounts sharing the cache dir: the process and a count (no random bytes per file)
    const sid = `${Date.now().toString(36)}-${process.pid.toString(36)}-${(++made).toString(36)}`;
    const s = new FileState(sid, join(this.dirtyDir, sid), repo, path);
    // a copy an earlier file's upload may have left here is this one's to replace
    for (const a of this.landed.takeOver(repo, path)) s.unsure(a);
    return s;
  }

  /** Put `s` in the table at its current place (unless it is gone for good). */
  private place(s: FileState): void {
    if (!s.disposed && !s.deleted) this.states.set(stateKey(s.repo, s.path), s);
  }

  private unplace(s: FileState): void {
    if (this.states.get(stateKey(s.repo, s.path)) === s) this.states.delete(stateKey(s.repo, s.path));
  }

  // ---- the local data ----

  /** A new, empty file (create): dirty at once, so even an empty file is uploaded. In memory when there is room. */
  async createNew(repo: string, path: string): Promise<FileState> {
    const s = this.newState(repo, path);
    s.markDirty();
    this.streams.setStreamable(s, true);
    this.blocks.created(s);
    this.states.set(stateKey(repo, path), s);
    // journaled at close, with its content
    if (this.data.start(s)) return s;
    s.ready = (async () => {
      s.fh = await open(s.tmp, 'w+');
    })();
    try {
      await s.ready;
    } catch (e) {
      this.states.delete(stateKey(repo, path));
      throw e;
    }
    this.journal.persistSoon(s);
    return s;
  }

  /** createNew, done at once when the file fits in memory (null: it does not, nothing was done) */
  createInMemory(repo: string, path: string): FileState | null {
    const s = this.newState(repo, path);
    if (!this.data.start(s)) return null;
    s.markDirty();
    this.streams.setStreamable(s, true);
    this.blocks.created(s);
    this.states.set(stateKey(repo, path), s);
    return s;
  }

  /**
   * Local state for an existing remote file, to write to it: its content is
   * downloaded first unless it is being truncated to nothing. `remote.id`:
   * the server's file id, the base of the local version.
   */
  async openExisting(
    repo: string,
    path: string,
    remote: { size: number; mtimeMs: number; id?: string },
    truncate: boolean,
    load: (dest: string) => Promise<void>,
  ): Promise<FileState> {
    const have = this.states.get(stateKey(repo, path));
    if (have) {
      await have.ready;
      return have;
    }
    const s = this.newState(repo, path);
    s.remotePath = path;
    s.baseId = remote.id || null;
    s.mtime = remote.mtimeMs;
    this.states.set(stateKey(repo, path), s);
    s.ready = (async () => {
      if (truncate || remote.size === 0) {
        s.fh = await open(s.tmp, 'w+');
        this.streams.setStreamable(s, true);
        this.blocks.created(s);
        if (remote.size > 0) s.markDirty();
      } else {
        await load(s.tmp);
        s.fh = await open(s.tmp, 'r+');
        s.size = (await s.fh.stat()).size;
        // the blocks of the server's version: an edit sends only those it changes
        this.blocks.opened(s, remote.id ?? null, s.size);
      }
    })();
    try {
      await s.ready;
    } catch (e) {
      this.unplace(s);
      await unlink(s.tmp).catch(() => {});
      throw e;
    }
    return s;
  }

  /** Synchronous (a number) when the file is in memory. */
  read(s: FileState, buf: Buffer, len: number, pos: number): number | Promise<number> {
    return this.data.read(s, buf, len, pos);
  }

  /**
   * Synchronous (a number) when the file stays in memory. A write that grows
   * the temp files past the cache limit first waits for uploads to make room
   * (cache-room.ts).
   */
  write(s: FileState, buf: Buffer, len: number, pos: number): number | Promise<number> {
    if (this.room.mustWait(s, pos + len))
      return this.room.wait(s, pos + len).then(() => this.writeData(s, buf, len, pos, Date.now()));
    return this.writeData(s, buf, len, pos, Date.now());
  }

  private writeData(s: FileState, buf: Buffer, len: number, pos: number, since: number): number | Promise<number> {
    const n = this.data.write(s, buf, len, pos);
    if (typeof n === 'number') {
      this.wrote(s, pos, n);
      return n;
    }
    return n.then(
      (k) => {
        this.wrote(s, pos, k);
        return k;
      },
      async (e: unknown) => {
        // the cache dir's disk is full: other files' uploads may free their temp files
        if (errnoOf(e) === 'ENOSPC' && (await this.room.afterEnospc(s, since)))
          return this.writeData(s, buf, len, pos, since);
        throw e;
      },
    );
  }

  private wrote(s: FileState, pos: number, len: number): void {
    this.blocks.wrote(s, pos, len);
    s.markDirty();
    if (!this.journal.journaled(s)) this.journal.persistSoon(s);
    this.streams.wrote(s, pos);
  }

  /** utimens: the file's new modification time (its journal entry amended, see FileJournal.timeChanged) */
  setTime(s: FileState, mtimeMs: number): void {
    const before = s.version;
    s.setTime(mtimeMs);
    this.journal.timeChanged(s, before);
  }

  async truncate(s: FileState, size: number): Promise<void> {
    await s.ready;
    this.streams.stop(s, 'truncate');
    await this.data.truncate(s, size);
    this.blocks.truncated(s, size);
    s.markDirty();
    // emptied: written again from offset 0, it may stream again
    this.streams.setStreamable(s, size === 0);
  }

  // ---- uploads ----

  /** Record the dirty file in the journal (before close() returns). */
  persist(s: FileState): Promise<void> {
    return this.journal.persist(s);
  }

  /** persist without waiting when that can be done at once (see FileJournal.persistNow) */
  persistNow(s: FileState): boolean {
    return this.journal.persistNow(s);
  }

  /** Start (or queue another round of) the background upload of `s`. */
  schedule(s: FileState): Promise<void> {
    return this.queue.schedule(s);
  }

  /** After the last writer closed: upload now, or shortly for a new file (it may be renamed first). */
  scheduleAfterClose(s: FileState): void {
    this.queue.scheduleAfterClose(s);
  }

  /** Upload after `ms` unless a writer opens the file meanwhile (truncate without open). */
  scheduleSoon(s: FileState, ms: number): void {
    this.queue.scheduleSoon(s, ms);
  }

  /** fsync: wait until everything written so far is on the server. */
  async sync(s: FileState): Promise<void> {
    await s.ready;
    const target = s.version;
    if (!s.dirty || s.uploadedVersion >= target) return;
    s.clearError();
    for (let round = 0; round < 3 && s.uploadedVersion < target && !s.deleted; round++) {
      s.resume();
      await this.queue.schedule(s);
      if (s.running) await s.running; // a round queued behind the one we joined
      if (s.uploadedVersion < target && s.lastError)
        throw new VfsError(errnoOf(s.lastError), 'upload failed', { cause: s.lastError });
    }
    if (s.uploadedVersion < target && !s.deleted) throw new VfsError('EIO', `upload of ${s.path} did not complete`);
  }

  /**
   * Upload everything pending (open files included) and wait. Returns the
   * files that could not be uploaded (they stay in the journal).
   */
  async drain(onStatus: (pending: FileState[]) => void, timeoutMs = 0): Promise<FileState[]> {
    const left = await this.queue.drain(onStatus, timeoutMs);
    // then the copies interrupted uploads may have left behind (bounded: a server gone for good must not hold it)
    await this.landed.settle(Math.min(timeoutMs || 30_000, 30_000));
    return left;
  }

  // ---- moves ----

  /**
   * Forget a file that is being deleted: no upload of it will start any more;
   * returns where its server copy lives, once any upload in flight has ended.
   */
  async discard(s: FileState): Promise<string | null> {
    s.markDeleted();
    this.streams.stop(s, 'unlink');
    this.unplace(s);
    return s.lock(async () => {
      await this.journal.forget(s);
      this.maybeDispose(s);
      // an upload whose answer was lost may have stored it all the same: that copy goes too
      if (s.remotePath === null) await this.landed.drop(s.repo, s.path, s.maybeLanded);
      return s.remotePath;
    });
  }

  /**
   * Move the local state to a new path. `moveRemote` moves the server copy
   * (when there is one) and runs under the file's lock, so no upload is in
   * flight meanwhile.
   */
  async retarget(s: FileState, repo: string, path: string, moveRemote: (from: string) => Promise<void>): Promise<void> {
    this.streams.stop(s, 'rename');
    await s.lock(async () => {
      if (s.remotePath) {
        await moveRemote(s.remotePath);
        s.remotePath = path;
      } else if (s.maybeLanded.length > 0) {
        // a copy an upload whose answer was lost may have stored under the old name goes (the file
        // is uploaded under the new one)
        await this.landed.drop(s.repo, s.path, s.maybeLanded);
        s.maybeLanded = [];
      }
      this.unplace(s);
      s.repo = repo;
      s.path = path;
      for (const a of this.landed.takeOver(repo, path)) s.unsure(a);
      this.place(s);
      if (s.dirty) await this.journal.moved(s);
    });
  }

  /** Pause uploads below `dir` and wait for those in flight (before a folder rename). */
  async holdUnder(repo: string, dir: string): Promise<FileState[]> {
    const list = this.under(repo, dir);
    for (const s of list) {
      s.pause();
      this.streams.stop(s, 'folder rename');
    }
    for (const s of list) await s.lock(async () => {});
    return list;
  }

  /** After a folder moved on the server: follow it and resume uploads. */
  async releaseUnder(
    list: FileState[],
    fromRepo: string,
    from: string,
    toRepo: string,
    to: string,
    moved: boolean,
  ): Promise<void> {
    for (const s of list) {
      if (moved && !s.deleted) {
        const np = to + s.path.slice(from.length);
        this.unplace(s);
        if (s.remotePath) s.remotePath = np;
        s.repo = fromRepo === toRepo ? s.repo : toRepo;
        s.path = np;
        if (!s.disposed) this.states.set(stateKey(s.repo, np), s);
        if (s.dirty) await this.journal.moved(s).catch(() => {});
      }
      s.resume();
      if (s.dirty && s.writers === 0 && !s.deleted) void this.queue.schedule(s);
    }
  }

  /** Close and delete the temp file of a state nobody needs any more. */
  maybeDispose(s: FileState): void {
    if (s.openCount > 0 || s.running) return;
    if (s.dirty && !s.deleted) return;
    this.unplace(s);
    if (!s.markDisposed()) return;
    // a file that only ever lived in memory has no temp file to remove
    const inMemory = s.mem !== null && s.spilling === null && s.fh === null;
    this.data.drop(s);
    if (inMemory) return;
    const fh = s.fh;
    s.fh = null;
    this.room.freeing();
    void (async () => {
      await s.ready.catch(() => {});
      await (fh ?? s.fh)?.close().catch(() => {});
      await unlink(s.tmp).catch(() => {});
      this.room.freed();
    })();
  }

  /** Take over dirty files left by a mount process that died. */
  async recover(accept: (repo: string) => boolean): Promise<number> {
    let n = 0;
    const orphans = (await this.journal.journal.orphans()).filter((e) => accept(e.repo));
    // folders first: the files recovered below may be inside them
    n += this.folders.recover(orphans.filter((e) => e.dir));
    for (const e of orphans) {
      if (e.dir) continue;
      // a temp file that exists holds the latest content (a file in memory that moved to it after its entry)
      let size: number | null = null;
      try {
        size = (await stat(e.tmp)).size;
      } catch {
        if (!e.data) {
          await this.journal.journal.remove(e.id);
          continue;
        }
      }
      if (this.states.get(stateKey(e.repo, e.path))) continue;
      const s = new FileState(e.id, e.tmp, e.repo, e.path);
      if (size === null) this.data.adopt(s, e.data!);
      else s.size = size;
      s.markDirty();
      // what the conflict check compares with (entries of older mounts have none: a file there is kept)
      s.baseId = e.base ?? null;
      s.remotePath = e.remote ?? null;
      if (e.mtime) s.mtime = e.mtime;
      s.timeSet = !!e.timeSet; // the time set here goes with the upload (and is kept where the server ignores it)
      s.unsure({ since: e.at, size: s.size, mtime: s.mtime }); // the mount may have died after the upload, before noting it
      if (size !== null) s.fh = await open(e.tmp, 'r+');
      this.states.set(stateKey(e.repo, e.path), s);
      await this.journal.persist(s);
      this.hooks.log(`recovering ${e.path} (${s.size} bytes) from the journal`);
      void this.queue.schedule(s);
      n++;
    }
    // what was taken over is in this mount's journal now: the leftovers go (or keep only what others want)
    await this.journal.journal.settleRecovery();
    return n;
  }
}
