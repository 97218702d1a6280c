// When uploads run: a bounded number at a time, new small files of a folder
// gathered into batches (at most `batchesPerFolder` of a folder under way:
// files closed meanwhile wait for the next, so a batch fills as fast as the
// server answers, and a lone file still goes at once), each file retried with backoff (and, after it failed
// for good, again every 30 s), an upload after the last close (or a little
// later for a new file), and the drain before unmount. What one attempt does
// is uploader.ts's job; a batch hands the files it could not take back here.
import pLimit from 'p-limit';
import { unreachable } from '../common/connectivity.js';
import { mayHaveLanded, permanentUploadFailure } from '../errors.js';
import { lockedLibrary } from '../libraries/encrypted-unlock.js';
import { baseOf, parentOf } from '../common/paths.js';
import { stateKey, type FileState } from './file-state.js';
import type { FileJournal } from './file-journal.js';
import { uploadsUnderTempName, type WriteStats } from './types.js';
import type { Uploader } from './uploader.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the queue needs of the table of files. */
export interface QueueTable {
  all(): Iterable<FileState>;
  /** dirty files not yet on the server */
  pending(): FileState[];
  /** an upload run ended and nothing more is due: the state may go */
  idle(s: FileState): void;
  /** the file's upload landed at another path of its folder (a conflict copy): it lives there now */
  relocate(s: FileState, path: string): void;
  /** tell the vfs: the server's version keeps `path`, the local one is at `copy` */
  conflicted(repo: string, path: string, copy: string): void;
}

export interface QueueOptions {
  concurrency: number;
  maxAttempts: number;
  /** the server is unreachable now */
  offline: () => boolean;
  offlineGraceMs: number;
  retryBaseMs: number;
  newFileDelayMs: number;
  batchMaxFiles: number;
  batchMaxBytes: number;
  batchFileMax: number;
  /** batches of one folder sent at once; files closed meanwhile gather into the next one */
  batchesPerFolder: number;
  /** the least time between the starts of a folder's batches (unless the next one is full) */
  batchGapMs: number;
}

/** the new small files of one folder waiting for a batch, and its batches under way */
interface FolderQueue {
  items: Waiting[];
  /** a batch run is waiting for an upload slot */
  queued: boolean;
  /** batch runs sending now */
  sending: number;
  /** the next run waits for the gap after the last one */
  gapTimer: NodeJS.Timeout | null;
}

interface Waiting {
  s: FileState;
  /** the batch attempt is over; `leftover`: the file still needs an upload of its own */
  done: (leftover: boolean) => void;
}

export class UploadQueue {
  private readonly limit: ReturnType<typeof pLimit>;
  private retryTimer: NodeJS.Timeout | null = null;
  /** new small files waiting for an upload slot, per folder */
  private readonly batches = new Map<string, FolderQueue>();
  /** when each folder's last batch took its files (ms), while that is within the gap; kept apart from
   * `batches`, whose entry goes as soon as a batch is done and nothing waits */
  private readonly lastStarts = new Map<string, number>();

  constructor(
    private readonly uploader: Uploader,
    private readonly journal: FileJournal,
    private readonly table: QueueTable,
    private readonly stats: WriteStats,
    private readonly log: (msg: string) => void,
    private readonly o: QueueOptions,
  ) {
    this.limit = pLimit(o.concurrency);
  }

  /** files whose upload failed for good are retried now and then (quota freed, server back) */
  startRetryTimer(): void {
    this.retryTimer = setInterval(() => this.retryFailed(), 30_000);
    this.retryTimer.unref();
  }

  /** Start again every upload that failed and is not running. */
  retryFailed(): void {
    for (const s of this.table.all()) {
      if (s.dirty && !s.deleted && s.lastError && !s.running && s.writers === 0) {
        s.resetFailures();
        void this.schedule(s);
      }
    }
  }

  close(): void {
    if (this.retryTimer) clearInterval(this.retryTimer);
  }

  /** Start (or queue another round of) the background upload of `s`. */
  schedule(s: FileState): Promise<void> {
    if (s.deleted || s.hold) return Promise.resolve();
    if (s.running) {
      s.requestRerun();
      return s.running;
    }
    s.cancelRerun();
    const task = this.batchable(s)
      ? this.enqueueBatch(s).then((leftover) => (leftover ? this.limit(() => this.loop(s)) : undefined))
      : this.limit(() => this.loop(s));
    const p = task.finally(() => {
      s.runEnded();
      if (s.rerun && s.dirty && !s.deleted && !s.lastError && s.writers === 0) void this.schedule(s);
      else this.table.idle(s);
    });
    s.runStarted(p);
    return p;
  }

  /** After the last writer closed: upload now, or shortly for a new file (it may be renamed first). */
  scheduleAfterClose(s: FileState): void {
    if (s.remotePath !== null || this.o.newFileDelayMs <= 0) {
      void this.schedule(s);
      return;
    }
    setTimeout(() => {
      if (s.dirty && !s.deleted && s.writers === 0 && !s.running) void this.schedule(s);
    }, this.o.newFileDelayMs).unref();
  }

  /** Upload after `ms` unless a writer opens the file meanwhile (truncate without open). */
  scheduleSoon(s: FileState, ms: number): void {
    setTimeout(() => {
      if (s.writers === 0 && s.dirty) void this.schedule(s);
    }, ms).unref();
  }

  private batchable(s: FileState): boolean {
    if (!this.uploader.batches || s.remotePath !== null || s.writers > 0) return false;
    return s.size <= this.o.batchFileMax && !uploadsUnderTempName(baseOf(s.path));
  }

  /** Queue a new small file for a batch upload of its folder; resolves when its attempt is over. */
  private enqueueBatch(s: FileState): Promise<boolean> {
    const k = stateKey(s.repo, parentOf(s.path));
    let q = this.batches.get(k);
    if (!q) {
      q = { items: [], queued: false, sending: 0, gapTimer: null };
      this.batches.set(k, q);
    }
    const queue = q;
    return new Promise<boolean>((resolve) => {
      queue.items.push({ s, done: resolve });
      this.kick(k, queue);
    });
  }

  /**
   * Start a batch of the folder unless one already waits for a slot or the
   * folder has `batchesPerFolder` under way: files closed meanwhile gather
   * into the next batch (one listing and one commit for many files, as the
   * upload's own time clocks it), and a lone file still goes at once. In a
   * burst the next batch also waits until `batchGapMs` after the last one
   * started, unless it is full already.
   */
  private kick(k: string, q: FolderQueue): void {
    if (q.queued || q.items.length === 0 || q.sending >= this.o.batchesPerFolder) return;
    const full = q.items.length >= this.o.batchMaxFiles;
    if (q.gapTimer) {
      if (!full) return;
      clearTimeout(q.gapTimer);
      q.gapTimer = null;
    }
    const wait = (this.lastStarts.get(k) ?? 0) + this.o.batchGapMs - Date.now();
    if (wait > 0 && !full) {
      q.gapTimer = setTimeout(() => {
        q.gapTimer = null;
        this.kick(k, q);
      }, wait);
      return;
    }
    q.queued = true;
    void this.limit(() => this.runBatch(k, q));
  }

  private started(k: string): void {
    const now = Date.now();
    if (this.lastStarts.size >= 64)
      for (const [f, t] of this.lastStarts) if (now - t >= this.o.batchGapMs) this.lastStarts.delete(f);
    this.lastStarts.delete(k); // re-inserted last: the map stays in order of time
    this.lastStarts.set(k, now);
  }

  /** In an upload slot: take what has accumulated for the folder (up to the limits) and send it. */
  private async runBatch(k: string, q: FolderQueue): Promise<void> {
    q.queued = false;
    this.started(k);
    const take: Waiting[] = [];
    let bytes = 0;
    while (q.items.length && take.length < this.o.batchMaxFiles && bytes < this.o.batchMaxBytes) {
      const it = q.items.shift()!;
      take.push(it);
      bytes += it.s.size;
    }
    q.sending++;
    this.kick(k, q);
    let rest: Set<FileState> | null = null;
    try {
      const states = take.map((t) => t.s);
      rest = new Set(await this.uploader.batch(states));
    } finally {
      q.sending--;
      // the files the batch did not take go back to the queue, each in a slot of its own
      for (const t of take) t.done(rest === null || rest.has(t.s));
      this.kick(k, q);
      if (!q.queued && !q.gapTimer && q.sending === 0 && q.items.length === 0 && this.batches.get(k) === q)
        this.batches.delete(k);
    }
  }

  /** Upload `s` until it is clean, failed for good, deleted or held. */
  private async loop(s: FileState): Promise<void> {
    let backoff = this.o.retryBaseMs;
    s.resetFailures();
    while (s.dirty && !s.deleted && !s.hold) {
      let retry = false;
      await s.lock(async () => {
        if (!s.dirty || s.deleted || s.hold) return;
        const v = s.version;
        const { repo, path } = s;
        const began = s.attempt();
        try {
          await this.journal.persist(s);
          const res = await this.uploader.once(s, repo, path);
          // a conflict copy: the local data now lives under the copy's name
          const at = res.landed ?? path;
          if (at !== path) this.table.relocate(s, at);
          await this.uploader.record(s, v, repo, at, res);
          if (at !== path) this.table.conflicted(repo, path, at);
          // written again during the upload while still open: the last release uploads again
          if (s.dirty && s.writers > 0) s.cancelRerun();
          retry = s.dirty && s.writers === 0;
        } catch (e) {
          // the server may hold what was sent: the content at the start, or (written meanwhile) now
          // (noted for a deleted file too: its delete then removes that copy)
          if (mayHaveLanded(e)) {
            s.unsure(began);
            if (s.version !== v) s.unsure(s.attempt());
          }
          if (s.deleted) return;
          if (s.version !== v && !permanentUploadFailure(e)) {
            // the file changed under the upload (a truncate shrank the temp file): no failure to
            // report at close, just upload the new version
            this.log(`upload of ${path} interrupted by a change of the file; uploading it again`);
            retry = s.writers === 0;
            return;
          }
          s.failed(e);
          this.stats.failures++;
          // offline: the mount said so once, and retries the upload when the server is back
          if (unreachable(e) && this.o.offline()) return;
          // a locked encrypted library: the mount says so once per library, the upload waits for the unlock
          if (lockedLibrary(e)) return;
          this.log(`upload of ${path} failed (attempt ${s.failures}): ${(e as Error).message}`);
          if (!permanentUploadFailure(e) && s.failures < this.o.maxAttempts) retry = true;
        }
      });
      if (!retry) return;
      if (s.lastError) {
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  /**
   * Upload everything pending (open files included) and wait. Returns the
   * files that could not be uploaded (they stay in the journal).
   */
  async drain(onStatus: (pending: FileState[]) => void, timeoutMs = 0): Promise<FileState[]> {
    const started = Date.now();
    for (const s of this.table.pending()) {
      s.resetFailures();
      s.clearError();
      void this.schedule(s);
    }
    let lastReport = 0;
    for (;;) {
      const pending = this.table.pending();
      if (pending.length === 0) return [];
      const active = pending.filter((s) => s.running);
      // uploads that wait for an unreachable server, while it may still come back
      const waiting = (s: FileState) =>
        unreachable(s.lastError) && this.o.offline() && Date.now() - started < this.o.offlineGraceMs;
      if (active.length === 0) {
        // nothing running: schedule what is left, or stop when all failed for good
        const idle = pending.filter((s) => !s.lastError || !permanentUploadFailure(s.lastError));
        if (idle.length === 0) return pending;
        // an upload that found the server unreachable waits offline: the mount starts it again when the server
        // answers (retryNow); started here, each would fail at once, again and again (a busy loop of journal
        // writes, and never an end once the grace was over)
        const due = idle.filter((s) => !(unreachable(s.lastError) && this.o.offline()));
        if (due.length === 0 && !idle.some(waiting)) return pending;
        for (const s of due) void this.schedule(s);
      }
      if (timeoutMs && Date.now() - started > timeoutMs) return pending;
      if (Date.now() - lastReport > 1000) {
        onStatus(pending);
        lastReport = Date.now();
      }
      // nothing running (uploads waiting for the server): a timer, not a microtask loop that would starve the probe
      if (active.length === 0) await sleep(100);
      else await Promise.race([Promise.allSettled(active.map((s) => s.running)), sleep(500)]);
      for (const s of this.table.pending()) {
        if (!s.running && s.lastError && s.failures >= this.o.maxAttempts && !waiting(s)) {
          return this.table.pending().filter((x) => x.lastError);
        }
      }
    }
  }
}
