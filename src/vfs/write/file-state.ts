// One file with local data (in memory or a temp file in the cache dir) and its lifecycle.
// The flags and counters the rest of the vfs reads change only through the
// methods below, so each transition is named and happens in one place:
//
//   loading --ready--> clean or dirty          (createNew, openExisting, recover)
//   clean --write/truncate--> dirty            (markDirty: version+1)
//   dirty --upload of version v--> clean       (uploaded(v): only if nothing was written meanwhile)
//   dirty --upload fails--> dirty + lastError  (failed: retried with backoff, later by a timer)
//   any --unlink--> deleted                    (markDeleted: no upload starts any more)
//   clean or deleted, closed --> disposed      (markDisposed: temp file gone, never back in the table)
//   held / resumed                             (a folder above is being renamed)
//
// Who owns the rest: the journal's bookkeeping lives in journal.ts, the
// streaming upload in streaming.ts, the upload run in upload-queue.ts.
import type { FileHandle } from 'node:fs/promises';

export type LinkKind = 'upload' | 'update';

/** the table key of a file */
export const stateKey = (repo: string, path: string): string => `${repo}\u0000${path}`;

/** one upload attempt: when it began, and the size and modification time (ms) it sent */
export interface Attempt {
  since: number;
  size: number;
  mtime: number;
}

/** attempts in doubt kept per file (a flaky link can lose several answers in a row) */
const MAX_UNSURE = 8;

export class FileState {
  repo: string;
  path: string;
  /** the temp file, open (null while the file is in memory, or once disposed) */
  fh: FileHandle | null = null;
  /**
   * The content of a small new file held in memory: bytes [0, size) of this
   * buffer (which may be larger); null when the file lives in its temp file.
   * Reads, writes and the move to the temp file are local-data.ts's.
   */
  mem: Buffer | null = null;
  /** the move of the file from memory to its temp file, while it runs */
  spilling: Promise<void> | null = null;
  /** bytes in the temp file (the file's size as the mount shows it) */
  size = 0;
  mtime = Date.now();
  /** resolves once the temp file is open (and, for an existing file, its content loaded) */
  ready: Promise<void> = Promise.resolve();
  /** where a server copy of this file lives (null: nowhere yet) */
  remotePath: string | null = null;
  /**
   * The server's file id of the version the local data started from (or was
   * last uploaded as); null for a file new to the server or when unknown.
   * Kept for the conflict check before an upload replaces a server copy.
   */
  baseId: string | null = null;
  /** when the last upload of this file ended (ms; 0: none yet) */
  uploadedAt = 0;
  /**
   * Attempts that may have landed without the mount hearing of it (their answer
   * was lost, or the mount died after sending): when each began and the size
   * and time it sent. The conflict check takes a server file matching one of
   * them for ours, also after the file was written again meanwhile.
   */
  maybeLanded: Attempt[] = [];

  private _dirty = false;
  private _version = 0;
  private _uploadedVersion = 0;
  private _openCount = 0;
  private _writers = 0;
  private _deleted = false;
  private _disposed = false;
  private _hold = false;
  private _lastError: unknown = null;
  private _failures = 0;
  private _running: Promise<void> | null = null;
  private _rerun = false;
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

  /** written since its last upload */
  get dirty(): boolean {
    return this._dirty;
  }
  /** bumped by every change of the content */
  get version(): number {
    return this._version;
  }
  /** the highest version known to be on the server */
  get uploadedVersion(): number {
    return this._uploadedVersion;
  }
  get openCount(): number {
    return this._openCount;
  }
  /** handles open for writing */
  get writers(): number {
    return this._writers;
  }
  get deleted(): boolean {
    return this._deleted;
  }
  /** temp file closed and removed: the state must not come back into the table */
  get disposed(): boolean {
    return this._disposed;
  }
  /** uploads paused while a folder above is renamed */
  get hold(): boolean {
    return this._hold;
  }
  /** why the last upload failed (null: it did not) */
  get lastError(): unknown {
    return this._lastError;
  }
  /** failed uploads in a row */
  get failures(): number {
    return this._failures;
  }
  /** the upload run in progress (null: none) */
  get running(): Promise<void> | null {
    return this._running;
  }

  /** Runs fn after every earlier locked section of this file has finished. */
  lock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => {});
    return run;
  }

  // ---- handles ----

  opened(forWriting: boolean): void {
    this._openCount++;
    if (forWriting) this._writers++;
  }

  closed(forWriting: boolean): void {
    this._openCount--;
    if (forWriting) this._writers--;
  }

  // ---- content and uploads ----

  markDirty(): void {
    this._dirty = true;
    this._version++;
    this.mtime = Date.now();
    this.timeSet = false;
  }

  /** true while the modification time is one set by utimens (touch -d, cp -p), not the last write's */
  timeSet = false;

  /** utimens: the file takes `mtimeMs` and is uploaded (again) to carry it to the server; a later write overrides it */
  setTime(mtimeMs: number): void {
    this._dirty = true;
    this._version++;
    this.mtime = mtimeMs;
    this.timeSet = true;
  }

  /**
   * Whether an upload to `path` replaces the server copy (update link) or
   * creates the file (upload link). The conflict check of a replacement
   * (is the server's version still `baseId`?) belongs with this decision.
   */
  uploadKind(path: string): LinkKind {
    return this.remotePath === path ? 'update' : 'upload';
  }

  /** Version `v` is on the server at `path` as file `id`; clean unless written meanwhile. Returns whether it is clean now. */
  uploaded(v: number, path: string, id: string): boolean {
    this.remotePath = path;
    this.baseId = id || null;
    this.uploadedAt = Date.now();
    this.maybeLanded = [];
    this._uploadedVersion = Math.max(this._uploadedVersion, v);
    this._lastError = null;
    this._failures = 0;
    if (this._version === v) this._dirty = false;
    return !this._dirty;
  }

  /**
   * The server now holds, at `path` as file `id`, bytes other than those sent
   * (its size was wrong): that copy is this file's base, so the next upload
   * replaces it; the content stays dirty.
   */
  storedWrong(path: string, id: string): void {
    this.remotePath = path;
    this.baseId = id || null;
    this.maybeLanded = [];
  }

  failed(e: unknown): void {
    this._failures++;
    this._lastError = e;
  }

  /** what an upload starting now sends (its size and time; the bytes are the temp file's) */
  attempt(): Attempt {
    return { since: Date.now(), size: this.size, mtime: this.mtime };
  }

  /** The attempt may have landed. The same content twice keeps the earlier start; the newest few are kept. */
  unsure(a: Attempt): void {
    const same = this.maybeLanded.find((x) => x.size === a.size && x.mtime === a.mtime);
    if (same) same.since = Math.min(same.since, a.since);
    else this.maybeLanded.push({ ...a });
    if (this.maybeLanded.length > MAX_UNSURE) this.maybeLanded.shift();
  }

  /** a new round of attempts (the count of failures starts again) */
  resetFailures(): void {
    this._failures = 0;
  }

  /** forget the last failure (fsync, unmount: try again before reporting) */
  clearError(): void {
    this._lastError = null;
  }

  markDeleted(): void {
    this._deleted = true;
  }

  /** Returns false when it was disposed already. */
  markDisposed(): boolean {
    if (this._disposed) return false;
    this._disposed = true;
    return true;
  }

  pause(): void {
    this._hold = true;
  }

  resume(): void {
    this._hold = false;
  }

  // ---- the upload run (upload-queue.ts) ----

  runStarted(p: Promise<void>): void {
    this._running = p;
  }

  runEnded(): void {
    this._running = null;
  }

  /** written again while an upload runs: one more round when it ends */
  requestRerun(): void {
    this._rerun = true;
  }

  /** the next round is started by the last writer's close instead */
  cancelRerun(): void {
    this._rerun = false;
  }

  get rerun(): boolean {
    return this._rerun;
  }
}
