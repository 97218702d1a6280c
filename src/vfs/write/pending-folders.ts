// Folders made in the mount that the server does not hold yet. mkdir answers
// at once (as create does for a new file) instead of waiting for the server,
// which under upload load answered a mkdir in 15-274 ms: the folder is
// journaled (a kill -9 replays it), shown in listings and lookups, and created
// on the server in the background. Uploads into it (or below it) wait for its
// creation (`ready`); a creation that failed is logged, retried with backoff,
// tried again by every upload that needs it, and its error is what that
// upload fails with. Creations ask for create_parents, which creates what is
// missing above and succeeds quietly on a folder that exists: they need no
// order among themselves, and a replay after a crash is harmless.
import pLimit from 'p-limit';
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { ZERO_ID } from '../../client/types.js';
import { ApiError } from '../../client/errors.js';
import { permanentUploadFailure, VfsError } from '../errors.js';
import { baseOf, isWithin, parentOf } from '../common/paths.js';
import type { Journal, RecoveredEntry } from './journal.js';

interface Folder {
  id: string;
  repo: string;
  path: string;
  /** seconds, shown as its time until the server's listing gives one */
  mtime: number;
  /** the creation under way */
  creating: Promise<void> | null;
  error: unknown;
  attempts: number;
  timer: NodeJS.Timeout | null;
}

const isRefusal = (e: unknown) => e instanceof ApiError && e.kind === 'invalid_name';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (repo: string, path: string) => `${repo}\u0000${path}`;

/** local folders made by this process (part of their journal ids) */
let made = 0;

export class PendingFolders {
  private readonly folders = new Map<string, Folder>();
  /** creations finished, counted; and the folders finished recently with their count (see dirsIn) */
  private finished = 0;
  private readonly recent = new Map<string, { seq: number; at: number; entry: DirEntry }>();
  private readonly limit = pLimit(4);
  private closed = false;

  constructor(
    private readonly api: SeafileApi,
    private readonly journal: Journal,
    private readonly log: (msg: string) => void,
    /** the folder is on the server now */
    private readonly onCreated: (repo: string, path: string) => void = () => {},
    private readonly retryBaseMs = 1000,
  ) {}

  get size(): number {
    return this.folders.size;
  }

  /** A folder made here: journaled (before this returns) and its creation started. */
  add(repo: string, path: string): void {
    const id = `dir-${Date.now().toString(36)}-${process.pid.toString(36)}-${(++made).toString(36)}`;
    this.track({ id, repo, path, mtime: Math.floor(Date.now() / 1000) });
  }

  private track(f: Omit<Folder, 'creating' | 'error' | 'attempts' | 'timer'>): void {
    // in the page cache when this returns, which a kill -9 does not lose (as a new file's close)
    this.journal.writeNow({
      id: f.id,
      repo: f.repo,
      path: f.path,
      tmp: '',
      pid: process.pid,
      at: Date.now(),
      dir: true,
    });
    const folder: Folder = { ...f, creating: null, error: null, attempts: 0, timer: null };
    this.folders.set(key(f.repo, f.path), folder);
    void this.start(folder).catch(() => {});
  }

  /**
   * Create `path` on the server now, for a name the server may refuse
   * (serverMayRefuseName): true once created; a refusal throws EINVAL, so
   * mkdir fails as the user can see; false when the server could not answer
   * (the caller then makes it a pending folder, retried in the background).
   */
  async createNow(repo: string, path: string): Promise<boolean> {
    try {
      await this.ready(repo, parentOf(path));
      await this.api.mkdir(repo, path, { createParents: true });
      return true;
    } catch (e) {
      if (e instanceof ApiError && (e.kind === 'invalid_name' || e.kind === 'bad_request'))
        throw new VfsError('EINVAL', `the server refuses the folder name ${baseOf(path)}: ${e.message}`);
      return false;
    }
  }

  /** Folders an earlier mount journaled and did not create: created again by this one. */
  recover(entries: RecoveredEntry[]): number {
    let n = 0;
    for (const e of entries) {
      if (this.folders.has(key(e.repo, e.path))) continue;
      this.log(`recovering the folder ${e.path} from the journal`);
      this.track({ id: e.id, repo: e.repo, path: e.path, mtime: Math.floor(e.at / 1000) });
      n++;
    }
    return n;
  }

  private start(f: Folder): Promise<void> {
    if (f.creating) return f.creating;
    if (f.timer) clearTimeout(f.timer);
    f.timer = null;
    const p = this.limit(async () => {
      if (this.folders.get(key(f.repo, f.path)) !== f) return; // removed meanwhile
      await this.api.mkdir(f.repo, f.path, { createParents: true });
    }).then(
      () => {
        f.creating = null;
        if (this.folders.get(key(f.repo, f.path)) !== f) return;
        this.folders.delete(key(f.repo, f.path));
        this.noteFinished(f);
        void this.journal.remove(f.id).catch(() => {});
        this.onCreated(f.repo, f.path);
      },
      (e: unknown) => {
        f.creating = null;
        const refusedBefore = isRefusal(f.error);
        f.error = e;
        f.attempts++;
        // a name the server refuses will not be taken later: kept here (in the
        // journal, in status) until the user renames or removes the folder
        if (isRefusal(e)) {
          if (!refusedBefore) this.log(`the server refuses the folder name ${f.path}: rename it`);
          throw e;
        }
        if (f.attempts === 1 || f.attempts % 10 === 0)
          this.log(
            `creating the folder ${f.path} on the server failed (attempt ${f.attempts}): ${(e as Error).message}`,
          );
        if (!this.closed && this.folders.get(key(f.repo, f.path)) === f) {
          const wait = Math.min(30_000, this.retryBaseMs * 2 ** Math.min(f.attempts - 1, 10));
          f.timer = setTimeout(() => void this.start(f).catch(() => {}), wait);
          f.timer.unref();
        }
        throw e;
      },
    );
    f.creating = p;
    return p;
  }

  private noteFinished(f: Folder): void {
    const now = Date.now();
    this.recent.set(key(f.repo, f.path), {
      seq: ++this.finished,
      at: now,
      entry: { type: 'dir', name: baseOf(f.path), id: ZERO_ID, mtime: f.mtime },
    });
    for (const [k, r] of this.recent) {
      if (now - r.at < 5 * 60_000) break;
      this.recent.delete(k);
    }
  }

  /** how many creations have finished: a listing fetched from the server notes it when it starts (dirsIn) */
  get finishedCount(): number {
    return this.finished;
  }

  /** Whether the folder `path` itself was made here and is not on the server yet. */
  has(repo: string, path: string): boolean {
    return this.folders.has(key(repo, path));
  }

  /** Whether `path` or a folder above it was made here and is not on the server yet. */
  pendingAt(repo: string, path: string): boolean {
    if (this.folders.size === 0) return false;
    for (let p = path; ; p = parentOf(p)) {
      if (this.folders.has(key(repo, p))) return true;
      if (p === '/') return false;
    }
  }

  /**
   * Resolves once `dir` and every folder above it made here are on the
   * server; a creation that failed is tried again now, and its error thrown.
   */
  async ready(repo: string, dir: string): Promise<void> {
    if (this.folders.size === 0) return;
    const chain: Folder[] = [];
    for (let p = dir; ; p = parentOf(p)) {
      const f = this.folders.get(key(repo, p));
      if (f) chain.push(f);
      if (p === '/') break;
    }
    for (const f of chain.reverse()) await this.start(f);
  }

  /**
   * ready for `dir` and for every folder below it made here (before `dir` is
   * moved on the server); a creation that fails is tried up to `tries` times
   * (a rename is one operation: one creation whose retries ran out under
   * faults must not fail the `mv`)
   */
  async readyWithin(repo: string, dir: string, tries = 3): Promise<void> {
    if (this.folders.size === 0) return;
    const chain: Folder[] = [];
    for (let p = parentOf(dir); ; p = parentOf(p)) {
      const f = this.folders.get(key(repo, p));
      if (f) chain.push(f);
      if (p === '/') break;
    }
    const below = [...this.folders.values()].filter((f) => f.repo === repo && isWithin(f.path, dir));
    for (const f of [...chain.reverse(), ...below]) {
      for (let i = 1; ; i++) {
        try {
          await this.start(f);
          break;
        } catch (e) {
          if (this.folders.get(key(f.repo, f.path)) !== f) break; // removed meanwhile
          if (i >= tries || permanentUploadFailure(e)) throw e;
          await sleep(Math.min(this.retryBaseMs, 500) * i);
        }
      }
    }
  }

  /**
   * The folders of `dir` made here that a listing fetched from the server may
   * lack: those not created yet, and those created after the fetch started
   * (`since`: finishedCount then).
   */
  dirsIn(repo: string, dir: string, since: number): DirEntry[] {
    const out: DirEntry[] = this.pendingChildren(repo, dir).map((f) => ({
      type: 'dir',
      name: baseOf(f.path),
      id: ZERO_ID,
      mtime: f.mtime,
    }));
    for (const [k, r] of this.recent)
      if (r.seq > since && k.startsWith(`${repo}\u0000`) && parentOf(k.slice(repo.length + 1)) === dir)
        out.push(r.entry);
    return out;
  }

  /** names of the folders not created yet directly inside `dir` */
  childrenOf(repo: string, dir: string): string[] {
    return this.pendingChildren(repo, dir).map((f) => baseOf(f.path));
  }

  private pendingChildren(repo: string, dir: string): Folder[] {
    return [...this.folders.values()].filter((f) => f.repo === repo && f.path !== '/' && parentOf(f.path) === dir);
  }

  /** Forget a folder that is removed before the server had it (rmdir of a folder whose creation failed). */
  async drop(repo: string, path: string): Promise<void> {
    const f = this.folders.get(key(repo, path));
    if (!f) return;
    this.folders.delete(key(repo, path));
    if (f.timer) clearTimeout(f.timer);
    await this.journal.remove(f.id);
  }

  /** the folders not on the server yet, and why the last attempt failed */
  pending(): { repo: string; path: string; error?: string }[] {
    return [...this.folders.values()].map((f) => ({
      repo: f.repo,
      path: f.path,
      ...(f.error ? { error: (f.error as Error).message ?? String(f.error) } : {}),
    }));
  }

  /**
   * Create every pending folder now (before unmount), each tried up to
   * `attempts` times unless refused for good; returns those that failed
   * (they stay in the journal for the next mount).
   */
  async drain(attempts = 6): Promise<{ path: string; error: string }[]> {
    const failed: { path: string; error: string }[] = [];
    await Promise.all(
      [...this.folders.values()].map(async (f) => {
        for (let i = 1; ; i++) {
          try {
            return await this.start(f);
          } catch (e) {
            if (this.folders.get(key(f.repo, f.path)) !== f) return;
            if (i >= attempts || permanentUploadFailure(e)) {
              failed.push({ path: f.path, error: (e as Error)?.message ?? String(e) });
              return;
            }
            await sleep(Math.min(30_000, this.retryBaseMs * 2 ** (i - 1)));
          }
        }
      }),
    );
    return failed;
  }

  close(): void {
    this.closed = true;
    for (const f of this.folders.values()) if (f.timer) clearTimeout(f.timer);
  }
}
