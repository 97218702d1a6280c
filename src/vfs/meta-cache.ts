// Folder listings cached per (library, folder). getattr of a child is answered
// from its parent's listing, so `ls -l` of a folder costs one listing request.
// A listing older than the cache time is revalidated with its `oid`: an
// "uptodate" answer renews it without transferring the entries again.
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import type { DirEntry, SeafileApi } from '../client/types.js';
import { isNotFound, VfsError } from './errors.js';
import { baseOf, isWithin, parentOf } from './paths.js';

export interface Listing {
  /** the folder's object id as last seen on the server; null when unknown or locally changed */
  oid: string | null;
  entries: Map<string, DirEntry>;
  fetchedAt: number;
  /** a real operation has looked at it since it was last fetched or revalidated */
  used?: boolean;
  /** its sub-folders in listing order (the order `find` walks), with their positions; built at first need */
  subdirs?: { names: string[]; index: Map<string, number> };
  /** which of `subdirs` were handed to the prefetch since it was last fetched or revalidated */
  queued?: Uint8Array;
}

export interface MetaStats {
  listRequests: number;
  fullListings: number;
  uptodate: number;
  prefetched: number;
}

const ZERO_ID = '0000000000000000000000000000000000000000';
const joinDir = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

const key = (repo: string, dir: string) => `${repo}\u0000${dir}`;

export class MetaCache {
  readonly stats: MetaStats = { listRequests: 0, fullListings: 0, uptodate: 0, prefetched: 0 };
  private readonly prefetchLimit: ReturnType<typeof pLimit> | null;
  private readonly lru: LRUCache<string, Listing>;
  private readonly inflight = new Map<string, Promise<Listing>>();
  /** bumped on local changes so an in-flight fetch started before them is not stored over them */
  private readonly epoch = new Map<string, number>();

  constructor(
    private readonly api: SeafileApi,
    private readonly ttlMs: number,
    maxDirs = 20_000,
    /** sub-folder listings fetched ahead at once (0: none) */
    prefetch = 8,
    /** how many sub-folders the prefetch keeps queued ahead of the last one a walk entered */
    private readonly window = 64,
  ) {
    this.lru = new LRUCache({ max: maxDirs });
    this.prefetchLimit = prefetch > 0 ? pLimit(prefetch) : null;
  }

  /**
   * Called on every real look at a listing; acts on the first one after each
   * fetch or revalidation. Tree walks (ls -R, find, du) would otherwise pay
   * one round trip per folder in turn, so the listings of the sub-folders are
   * fetched (or, when stale, revalidated) in the background, a bounded number
   * at a time, in listing order, as a window that slides with the walk: the
   * first look at a folder queues its first `window` sub-folders, and the
   * first look inside sub-folder i queues siblings i+1 .. i+`window`. The
   * walk thus finds each folder already listed whatever the folder's size,
   * while a lone `ls -l` of a folder of 10,000 sub-folders, or a jump into
   * one of them, costs `window` background requests, not 10,000. Empty
   * folders (zero id) need no request at all.
   */
  noteUse(repo: string, dir: string, l: Listing): void {
    if (l.used) return;
    l.used = true;
    if (!this.prefetchLimit) return;
    this.queueAhead(repo, dir, l, 0);
    if (dir === '/') return;
    const parentDir = parentOf(dir);
    const parent = this.lru.peek(key(repo, parentDir));
    if (!parent?.used) return;
    const i = this.subdirsOf(parent).index.get(baseOf(dir));
    if (i !== undefined) this.queueAhead(repo, parentDir, parent, i + 1);
  }

  private subdirsOf(l: Listing): NonNullable<Listing['subdirs']> {
    if (!l.subdirs) {
      const names: string[] = [];
      for (const e of l.entries.values()) if (e.type === 'dir') names.push(e.name);
      l.subdirs = { names, index: new Map(names.map((n, i) => [n, i])) };
    }
    return l.subdirs;
  }

  /** Hand the sub-folders of `dir` at positions from .. from+window-1 to the prefetch (each once per fetch of `dir`). */
  private queueAhead(repo: string, dir: string, l: Listing, from: number): void {
    const { names } = this.subdirsOf(l);
    if (!l.queued || l.queued.length !== names.length) l.queued = new Uint8Array(names.length);
    const end = Math.min(from + this.window, names.length);
    for (let i = from; i < end; i++) {
      if (l.queued[i]) continue;
      l.queued[i] = 1;
      const e = l.entries.get(names[i]);
      if (e) this.prefetchOne(repo, joinDir(dir, e.name), e);
    }
  }

  private prefetchOne(repo: string, dir: string, e: DirEntry): void {
    const k = key(repo, dir);
    const have = this.lru.peek(k);
    if ((have && this.fresh(have)) || this.inflight.has(k)) return;
    if (e.id === ZERO_ID && !have) {
      this.lru.set(k, { oid: null, entries: new Map(), fetchedAt: Date.now() });
      return;
    }
    void this.prefetchLimit!(async () => {
      // the walk may have got here first
      const c = this.lru.peek(k);
      if ((c && this.fresh(c)) || this.inflight.has(k)) return;
      this.stats.prefetched++;
      // a stale listing is revalidated with its oid (cheap when unchanged)
      const p = this.fetch(repo, dir, k, c).finally(() => this.inflight.delete(k));
      this.inflight.set(k, p);
      await p.catch(() => {});
    });
  }

  /** listings the prefetch is fetching or has queued */
  prefetchBacklog(): number {
    return this.prefetchLimit ? this.prefetchLimit.activeCount + this.prefetchLimit.pendingCount : 0;
  }

  peek(repo: string, dir: string): Listing | undefined {
    return this.lru.get(key(repo, dir));
  }

  fresh(l: Listing): boolean {
    return Date.now() - l.fetchedAt < this.ttlMs;
  }

  /** The listing of a folder, from the cache while fresh. Throws ENOENT for a missing folder. */
  async list(repo: string, dir: string, force = false): Promise<Listing> {
    const k = key(repo, dir);
    const cached = this.lru.get(k);
    if (cached && !force && this.fresh(cached)) {
      this.noteUse(repo, dir, cached);
      return cached;
    }
    const running = this.inflight.get(k);
    const p = running ?? this.fetch(repo, dir, k, cached).finally(() => this.inflight.delete(k));
    if (!running) this.inflight.set(k, p);
    const l = await p;
    this.noteUse(repo, dir, l);
    return l;
  }

  private async fetch(repo: string, dir: string, k: string, cached: Listing | undefined): Promise<Listing> {
    const startEpoch = this.epoch.get(k) ?? 0;
    this.stats.listRequests++;
    let res;
    try {
      res = await this.api.listDir(repo, dir, cached?.oid ? { oid: cached.oid } : undefined);
    } catch (e) {
      if (isNotFound(e)) {
        this.lru.delete(k);
        throw new VfsError('ENOENT', `${dir}`);
      }
      throw e;
    }
    const now = Date.now();
    if (res.uptodate) {
      this.stats.uptodate++;
      if (cached && (this.epoch.get(k) ?? 0) === startEpoch) {
        cached.fetchedAt = now;
        // revalidated: the next real look refreshes the sub-folders ahead again
        cached.used = false;
        cached.queued = undefined;
        return cached;
      }
      // the cached copy vanished or changed locally meanwhile: fetch in full
      return this.fetch(repo, dir, k, undefined);
    }
    this.stats.fullListings++;
    const entries = new Map<string, DirEntry>();
    for (const e of res.entries) entries.set(e.name, e);
    const listing: Listing = { oid: res.oid, entries, fetchedAt: now };
    if ((this.epoch.get(k) ?? 0) !== startEpoch) {
      // a local change raced with this fetch: use the answer but do not trust it for long
      listing.fetchedAt = 0;
      listing.oid = null;
    }
    this.lru.set(k, listing);
    return listing;
  }

  private touch(k: string): void {
    this.epoch.set(k, (this.epoch.get(k) ?? 0) + 1);
    // locally edited entries no longer match their oid: a folder whose content
    // returns to that state (same oid) would otherwise be "uptodate" with wrong entries
    const l = this.lru.get(k);
    if (l) {
      l.oid = null;
      // positions shift: rebuilt at the next need
      l.subdirs = undefined;
      l.queued = undefined;
    }
  }

  /** Record a local change of one entry (added or replaced) in a cached listing. */
  upsert(repo: string, dir: string, entry: DirEntry): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.get(k)?.entries.set(entry.name, entry);
  }

  remove(repo: string, dir: string, name: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.get(k)?.entries.delete(name);
  }

  /** A folder just created here: known empty without asking. */
  setEmpty(repo: string, dir: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.set(k, { oid: null, entries: new Map(), fetchedAt: Date.now() });
  }

  invalidate(repo: string, dir: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.delete(k);
  }

  /** Forget a folder and everything below it (after a folder rename, move or delete). */
  invalidateTree(repo: string, dir: string): void {
    const prefix = `${repo}\u0000`;
    for (const k of [...this.lru.keys()]) {
      if (k.startsWith(prefix) && isWithin(k.slice(prefix.length), dir)) {
        this.touch(k);
        this.lru.delete(k);
      }
    }
  }
}
