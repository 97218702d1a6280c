// Folder listings cached per (library, folder). getattr of a child is answered
// from its parent's listing, so `ls -l` of a folder costs one listing request.
// A listing older than the cache time is revalidated with its `oid`: an
// "uptodate" answer renews it without transferring the entries again.
// Memory stays bounded by entries, not only by folders: a listing is kept
// with the fields the mount uses (listing-entries.ts), and the least recently
// used listings go once the entries held pass the budget (one folder of
// 100,000 files counts as 100,000). The listings, their revalidation and the
// pushed changes work on one LRU and its budget, so they stay in this class;
// the prefetch of sub-folders for tree walks is listing-prefetch.ts.
import { LRUCache } from 'lru-cache';
import type { DirEntry, DirListing, SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { isNotFound, VfsError } from '../errors.js';
import type { ListingStore } from './listing-disk-store.js';
import { baseOf, isWithin, parentOf } from '../common/paths.js';
import {
  entryBytes,
  LISTING_BYTES,
  listingKey as key,
  slimEntry,
  type Listing,
  type LocalFolders,
  type MetaHeld,
  type MetaStats,
} from './listing-entries.js';
import { ListingPrefetch, type PrefetchHost } from './listing-prefetch.js';

export { slimEntry, type Listing, type LocalFolders, type MetaHeld, type MetaStats } from './listing-entries.js';

export class MetaCache {
  readonly stats: MetaStats = { listRequests: 0, fullListings: 0, uptodate: 0, prefetched: 0, renewed: 0 };
  /** the background fetches of sub-folders for tree walks */
  private readonly prefetcher: ListingPrefetch;
  private readonly lru: LRUCache<string, Listing>;
  private readonly inflight = new Map<string, Promise<Listing>>();
  /**
   * Local entry changes (upsert: the entry; remove: null) made while a fetch
   * of their folder was on its way, by folder: the answer may predate them
   * (an upload landing as the listing was asked for), so they are made again
   * on it rather than lost until the next fetch.
   */
  private readonly racing = new Map<string, [string, DirEntry | null][]>();
  /** bumped on local changes so an in-flight fetch started before them is not stored over them */
  private readonly epoch = new Map<string, number>();
  /** local changes counted, and the last one of each folder (oldest first), while a listing may predate it */
  private seq = 0;
  private readonly changed = new Map<string, { seq: number; at: number }>();

  private readonly maxEntries: number;
  private local: LocalFolders | null = null;
  /** the listings kept on disk (listings/listing-disk-store.ts) */
  private store: ListingStore | null = null;
  /** changes the entries of each listing fetched (the times this machine keeps: mtimes/kept-mtimes.ts) */
  private adjust: ((repo: string, dir: string, entries: Map<string, DirEntry>, startedAt: number) => void) | null =
    null;

  constructor(
    private readonly api: SeafileApi,
    private ttlMs: number,
    maxDirs = 20_000,
    /** sub-folder listings fetched ahead at once (0: none) */
    prefetch = 8,
    /** how many sub-folders the prefetch keeps queued ahead of the last one a walk entered */
    window = 64,
    /** sub-folders of a prefetched folder fetched on speculation, before the walk enters it */
    speculative = 8,
    /** entries held at most, all folders together (a local change may pass it until the folder is fetched again) */
    maxEntries = 500_000,
  ) {
    this.maxEntries = maxEntries;
    this.lru = new LRUCache({ max: maxDirs, maxSize: maxEntries, sizeCalculation: (l) => l.entries.size + 1 });
    const host: PrefetchHost = {
      peek: (k) => this.lru.peek(k),
      hold: (k, l) => void this.lru.set(k, l),
      current: (repo, dir, l) => this.current(repo, dir, l),
      inflight: this.inflight,
      fetch: (repo, dir, k, cached) => this.fetch(repo, dir, k, cached),
      local: () => this.local,
      stats: this.stats,
    };
    this.prefetcher = new ListingPrefetch(host, prefetch, window, speculative);
  }

  /** Folders made in the mount show in listings before the server has them. */
  setLocalFolders(local: LocalFolders): void {
    this.local = local;
  }

  /** Listings fetched are kept on disk; one not held is looked for there (asked for by its id, or served offline). */
  setStore(store: ListingStore): void {
    this.store = store;
  }

  /** Listings fetched are passed through `fn` (it may change their entries) before they are used. */
  setAdjust(fn: (repo: string, dir: string, entries: Map<string, DirEntry>, startedAt: number) => void): void {
    this.adjust = fn;
  }

  /** What the cache holds now (walks every entry: for status answers, not for hot paths). */
  held(): MetaHeld {
    let folders = 0;
    let entries = 0;
    let bytes = 0;
    for (const [k, l] of this.lru.entries()) {
      folders++;
      entries += l.entries.size;
      bytes += LISTING_BYTES + 2 * k.length;
      for (const e of l.entries.values()) bytes += entryBytes(e);
    }
    return { folders, entries, maxEntries: this.maxEntries, bytes };
  }

  /**
   * Called on every real look at a listing; the first one after each fetch
   * or revalidation starts the prefetch of its sub-folders (listing-prefetch.ts).
   */
  noteUse(repo: string, dir: string, l: Listing): void {
    this.prefetcher.noteUse(repo, dir, l);
  }

  /** listings the prefetch is fetching or has queued */
  prefetchBacklog(): number {
    return this.prefetcher.backlog();
  }

  peek(repo: string, dir: string): Listing | undefined {
    return this.lru.get(key(repo, dir));
  }

  fresh(l: Listing): boolean {
    return Date.now() - l.fetchedAt < this.ttlMs;
  }

  /** Fresh, or renewed from its parent. */
  private current(repo: string, dir: string, l: Listing): boolean {
    return this.fresh(l) || this.renewFromParent(repo, dir, l);
  }

  /**
   * A stale listing is still what the server has when its parent, itself
   * current, names the same object id for it: a folder's id is a hash of its
   * content, sub-folders' ids included, so a parent's listing (or its
   * "uptodate" answer) vouches for every folder below it that it names with
   * an unchanged id. A walk over a tree whose top was just revalidated then
   * pays no request per folder. The listing counts as seen when the parent
   * was. A locally changed listing has no oid and is never renewed.
   */
  private renewFromParent(repo: string, dir: string, l: Listing): boolean {
    if (!l.oid || dir === '/') return false;
    const parentDir = parentOf(dir);
    const parent = this.lru.peek(key(repo, parentDir));
    if (!parent || parent.entries.get(baseOf(dir))?.id !== l.oid || !this.current(repo, parentDir, parent))
      return false;
    l.fetchedAt = parent.fetchedAt;
    l.seq = parent.seq;
    // as after a revalidation: the next real look refreshes the sub-folders ahead again
    l.used = false;
    l.walked = false;
    l.queued = undefined;
    this.stats.renewed++;
    return true;
  }

  /** The listing of a folder, from the cache while fresh. Throws ENOENT for a missing folder. */
  async list(repo: string, dir: string, force = false): Promise<Listing> {
    const k = key(repo, dir);
    const cached = this.lru.get(k);
    if (cached && !force && this.current(repo, dir, cached)) {
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
    const own = !this.racing.has(k);
    if (own) this.racing.set(k, []);
    try {
      return await this.fetchListing(repo, dir, k, cached);
    } finally {
      if (own) this.racing.delete(k);
    }
  }

  private async fetchListing(repo: string, dir: string, k: string, cached: Listing | undefined): Promise<Listing> {
    const local = this.local;
    if (local?.pendingAt(repo, dir)) return this.localListing(repo, dir, k, cached);
    const startEpoch = this.epoch.get(k) ?? 0;
    const startSeq = this.seq;
    const startFinished = local?.finishedCount ?? 0;
    // the stored listing only for a folder this process has not changed or dropped: one dropped on purpose (a
    // lock taken, a file changed on the server) is fetched whole, since a folder id does not cover lock state
    if (!cached && this.store && !this.epoch.has(k)) cached = await this.fromStore(repo, dir, k, startEpoch);
    this.stats.listRequests++;
    const startedAt = Date.now();
    let res: DirListing;
    try {
      res = await this.api.listDir(repo, dir, cached?.oid ? { oid: cached.oid } : undefined);
    } catch (e) {
      if (isNotFound(e)) {
        this.lru.delete(k);
        this.store?.forget(repo, dir);
        throw new VfsError('ENOENT', `${dir}`);
      }
      // offline: the listing the mount knows, stale, rather than an error
      if (cached && unreachable(e)) return cached;
      throw e;
    }
    const now = Date.now();
    if (res.uptodate) {
      this.stats.uptodate++;
      if (cached && (this.epoch.get(k) ?? 0) === startEpoch) {
        cached.fetchedAt = now;
        cached.seq = startSeq;
        // revalidated: the next real look refreshes the sub-folders ahead again
        cached.used = false;
        cached.walked = false;
        cached.queued = undefined;
        return cached;
      }
      // the cached copy vanished or changed locally meanwhile: fetch in full
      this.racing.set(k, []);
      return this.fetchListing(repo, dir, k, undefined);
    }
    this.stats.fullListings++;
    const entries = new Map<string, DirEntry>();
    for (const e of res.entries) entries.set(e.name, slimEntry(e));
    // as the server gave it (serialised now, before the local times and folders change the entries)
    if (res.oid && (this.epoch.get(k) ?? 0) === startEpoch) this.store?.save(repo, dir, res.oid, entries.values());
    this.adjust?.(repo, dir, entries, startedAt);
    if (local) for (const e of local.dirsIn(repo, dir, startFinished)) if (!entries.has(e.name)) entries.set(e.name, e);
    const listing: Listing = { oid: res.oid, entries, fetchedAt: now, seq: startSeq };
    if ((this.epoch.get(k) ?? 0) !== startEpoch) {
      // a local change raced with this fetch: the answer, with the entries changed here meanwhile made again
      // on it (it may predate them), not trusted for long
      for (const [name, e] of this.racing.get(k) ?? []) {
        if (e) entries.set(name, e);
        else entries.delete(name);
      }
      listing.fetchedAt = 0;
      listing.oid = null;
    }
    this.lru.set(k, listing);
    return listing;
  }

  /** The listing an earlier mount kept for the folder, held as stale (null: none, or a local change came first). */
  private async fromStore(repo: string, dir: string, k: string, startEpoch: number): Promise<Listing | undefined> {
    const saved = await this.store!.load(repo, dir);
    if (!saved || (this.epoch.get(k) ?? 0) !== startEpoch) return undefined;
    const have = this.lru.peek(k);
    if (have) return have;
    this.adjust?.(repo, dir, saved.entries, saved.savedAt);
    // folders made here that the server does not hold yet; not those created since (a revalidation by folder id
    // answers whether they are still there: one made and then moved away must not come back with this listing)
    if (this.local)
      for (const e of this.local.dirsIn(repo, dir, Infinity))
        if (!saved.entries.has(e.name)) saved.entries.set(e.name, e);
    const listing: Listing = { oid: saved.oid, entries: saved.entries, fetchedAt: 0, seq: this.seq };
    this.lru.set(k, listing);
    return listing;
  }

  /**
   * The listing of a folder the server does not hold yet: only the mount
   * knows its content (its files' states are added by the caller; its folders
   * made here are in it since their mkdir), so it is renewed, not fetched.
   */
  private localListing(repo: string, dir: string, k: string, cached: Listing | undefined): Listing {
    if (cached) {
      cached.fetchedAt = Date.now();
      return cached;
    }
    const entries = new Map<string, DirEntry>();
    for (const e of this.local!.dirsIn(repo, dir, Infinity)) entries.set(e.name, e);
    const listing: Listing = { oid: null, entries, fetchedAt: Date.now(), seq: this.seq };
    this.lru.set(k, listing);
    return listing;
  }

  private touch(k: string): void {
    this.epoch.set(k, (this.epoch.get(k) ?? 0) + 1);
    this.noteChange(k);
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
    this.racing.get(k)?.push([entry.name, entry]);
  }

  remove(repo: string, dir: string, name: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.get(k)?.entries.delete(name);
    this.racing.get(k)?.push([name, null]);
  }

  /** the count of local changes so far: what seed() is given of a listing fetched elsewhere */
  get changeSeq(): number {
    return this.seq;
  }

  /**
   * A folder's listing taken by someone else (a pin's recursive listing),
   * kept when the cache holds none or an older one (another folder id), and
   * nothing changed in it here since `sinceSeq`: a pinned tree is then known
   * without a request per folder, and up to date offline.
   */
  seed(repo: string, dir: string, oid: string | null, entries: DirEntry[], sinceSeq: number): void {
    const k = key(repo, dir);
    const held = this.lru.peek(k);
    if (held && (!held.oid || held.oid === oid)) return;
    if (this.inflight.has(k) || this.local?.pendingAt(repo, dir)) return;
    if ((this.changed.get(k)?.seq ?? 0) > sinceSeq) return;
    const map = new Map<string, DirEntry>();
    for (const e of entries) map.set(e.name, slimEntry(e));
    const now = Date.now();
    this.adjust?.(repo, dir, map, now);
    this.lru.set(k, { oid, entries: map, fetchedAt: now, seq: sinceSeq });
    // kept on disk too: a mount started offline then knows the pinned tree
    if (oid) this.store?.save(repo, dir, oid, map.values());
  }

  /** A folder just created here: known empty without asking. */
  setEmpty(repo: string, dir: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.set(k, { oid: null, entries: new Map(), fetchedAt: Date.now(), seq: this.seq });
  }

  /**
   * Whether something in `dir` or below it changed here after its parent's
   * listing was taken from the server. A folder's id is a hash of its
   * content, so the id that listing names for `dir` is then out of date (a
   * folder made here shows the empty folder's id until then). False for the
   * root, and when the parent's listing is not held.
   */
  changedSinceParentListed(repo: string, dir: string): boolean {
    if (dir === '/') return false;
    const parent = this.lru.peek(key(repo, parentOf(dir)));
    if (!parent) return false;
    const since = parent.seq ?? 0;
    const k = key(repo, dir);
    const below = `${k}/`;
    for (const [ck, c] of this.changed) if (c.seq > since && (ck === k || ck.startsWith(below))) return true;
    return false;
  }

  /**
   * Listings used are at most the cache time old, so a change older than
   * that (twice, and a minute, for a fetch that took long) predates them all
   * and is forgotten once many are held.
   */
  private noteChange(k: string): void {
    const now = Date.now();
    this.changed.delete(k);
    this.changed.set(k, { seq: ++this.seq, at: now });
    if (this.changed.size <= 4096) return;
    const before = now - 2 * this.ttlMs - 60_000;
    for (const [ck, c] of this.changed) {
      if (c.at >= before) break;
      this.changed.delete(ck);
    }
  }

  /** A listing's lifetime from now on (longer while the server pushes changes: live-changes.ts). */
  setTtl(ms: number): void {
    this.ttlMs = ms;
  }

  /**
   * The server told of a change in `repo`: its listings are stale from now
   * (each revalidated by folder id when next used), except those changed here
   * within `ownChangeMs`, which the change most likely is: they live at most
   * `spareTtlMs` more (a change of someone else's at the same time shows then).
   * Returns the stale folders, most recently used first, and how many were spared.
   */
  staleLibrary(repo: string, ownChangeMs: number, spareTtlMs: number): { stale: string[]; spared: number } {
    const prefix = `${repo}\u0000`;
    const now = Date.now();
    const stale: string[] = [];
    let spared = 0;
    for (const [k, l] of this.lru.entries()) {
      if (!k.startsWith(prefix)) continue;
      const own = this.changed.get(k);
      if (own && now - own.at < ownChangeMs) {
        l.fetchedAt = Math.min(l.fetchedAt, now - this.ttlMs + spareTtlMs);
        spared++;
        continue;
      }
      l.fetchedAt = 0;
      stale.push(k.slice(prefix.length));
    }
    return { stale, spared };
  }

  /**
   * A change the folder's id does not show (a lock taken or released): its
   * listing is fetched whole when next used. Not a change made here.
   */
  refetch(repo: string, dir: string): void {
    const l = this.lru.peek(key(repo, dir));
    if (!l) return;
    l.oid = null;
    l.fetchedAt = 0;
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
