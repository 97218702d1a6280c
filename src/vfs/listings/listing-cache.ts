// Folder listings cached per (library, folder). getattr of a child is answered
// from its parent's listing, so `ls -l` of a folder costs one listing request.
// A listing older than the cache time is revalidated with its `oid`: an
// "uptodate" answer renews it without transferring the entries again.
// Memory stays bounded by entries, not only by folders: a listing is kept
// with the fields the mount uses, and the least recently used listings go
// once the entries held pass the budget (one folder of 100,000 files counts
// as 100,000). Longer than most modules: the listings, their revalidation,
// the prefetch of sub-folders and the pushed changes all work on one LRU and
// its budget, so they stay in one class.
import { LRUCache } from 'lru-cache';
import { ZERO_ID, type DirEntry, type DirListing, type SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { isNotFound, VfsError } from '../errors.js';
import type { ListingStore } from './listing-disk-store.js';
import { baseOf, isWithin, parentOf } from '../common/paths.js';

export interface Listing {
  /** the folder's object id as last seen on the server; null when unknown or locally changed */
  oid: string | null;
  entries: Map<string, DirEntry>;
  fetchedAt: number;
  /** a real operation has looked at it since it was last fetched or revalidated */
  used?: boolean;
  /** a walk has since gone into one of its sub-folders: their own sub-folders are then fetched on speculation */
  walked?: boolean;
  /** the count of local changes when its content was last taken from the server (see changedSince) */
  seq?: number;
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
  /** stale listings renewed without a request: their fresh parent names the same folder id */
  renewed: number;
}

/** What the cache holds now: folders, entries, and an estimate of their bytes on the heap. */
export interface MetaHeld {
  folders: number;
  entries: number;
  /** entry budget: least recently used listings are dropped beyond it */
  maxEntries: number;
  bytes: number;
}

const joinDir = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * The fields of a listed entry the mount uses (the server sends a dozen more per file: modifier names and
 * contact e-mails, starred, lock time, thumbnails, which would double the memory of a large tree's cache).
 */
export function slimEntry(e: DirEntry): DirEntry {
  const out: DirEntry = { type: e.type, name: e.name, id: e.id, mtime: e.mtime };
  if (e.size !== undefined) out.size = e.size;
  if (e.permission !== undefined) out.permission = e.permission;
  // user.seafile.modifier (xattrs/xattrs.ts)
  if (typeof e.modifier_email === 'string' && e.modifier_email) out.modifier_email = e.modifier_email;
  if (e.is_locked) {
    out.is_locked = true;
    if (e.lock_owner !== undefined) out.lock_owner = e.lock_owner;
    if (e.locked_by_me !== undefined) out.locked_by_me = e.locked_by_me;
  }
  return out;
}

/**
 * Heap bytes of one cached entry, estimated: the object with its few fields (about 100 bytes in V8), its place
 * in the folder's Map (about 40), its strings (name and the 40-character id: header plus a byte a character
 * for one-byte strings, two for others).
 */
function entryBytes(e: DirEntry): number {
  const str = (v: string) => {
    for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) > 0xff) return 16 + 2 * v.length;
    return 16 + v.length;
  };
  const extra = (v: unknown) => (typeof v === 'string' && v ? str(v) : 0);
  return 140 + str(e.name) + str(e.id) + extra(e.lock_owner) + extra(e.modifier_email);
}
/** a listing's own object, Map and cache slot, and its key */
const LISTING_BYTES = 300;

const key = (repo: string, dir: string) => `${repo}\u0000${dir}`;

/** Folders made in the mount that the server may not hold yet (write/pending-folders.ts). */
export interface LocalFolders {
  /** `dir` or a folder above it is not on the server yet: its listing is what the mount holds */
  pendingAt(repo: string, dir: string): boolean;
  /** creations finished so far (noted when a fetch starts) */
  readonly finishedCount: number;
  /** folders of `dir` a listing fetched from the server may lack (not created yet, or created after `since`) */
  dirsIn(repo: string, dir: string, since: number): DirEntry[];
}

export class MetaCache {
  readonly stats: MetaStats = { listRequests: 0, fullListings: 0, uptodate: 0, prefetched: 0, renewed: 0 };
  /** prefetches running, and those waiting, the first in walk order first */
  private prefetchActive = 0;
  private readonly prefetchQueue = new WalkOrderQueue();
  private readonly lru: LRUCache<string, Listing>;
  private readonly inflight = new Map<string, Promise<Listing>>();
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
    private readonly prefetch = 8,
    /** how many sub-folders the prefetch keeps queued ahead of the last one a walk entered */
    private readonly window = 64,
    /** sub-folders of a prefetched folder fetched on speculation, before the walk enters it */
    private readonly speculative = 8,
    /** entries held at most, all folders together (a local change may pass it until the folder is fetched again) */
    maxEntries = 500_000,
  ) {
    this.maxEntries = maxEntries;
    this.lru = new LRUCache({ max: maxDirs, maxSize: maxEntries, sizeCalculation: (l) => l.entries.size + 1 });
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
   * Called on every real look at a listing; acts on the first one after each
   * fetch or revalidation. Tree walks (ls -R, find, du) would otherwise pay
   * one round trip per folder in turn, so the listings of the sub-folders are
   * fetched (or, when stale, revalidated) in the background, a bounded number
   * at a time, in listing order, as a window that slides with the walk: the
   * first look at a folder queues its first `window` sub-folders, and the
   * first look inside sub-folder i queues siblings i+1 .. i+`window`. The
   * walk thus finds each folder already listed whatever the folder's size,
   * while a lone `ls -l` of a folder of 10,000 sub-folders costs `window`
   * background requests, not 10,000. A walk needs the first sub-folders of
   * a folder as soon as it enters it, so once a walk has gone into one
   * sub-folder of a folder, each of its sub-folders in the window queues
   * its own first `speculative` sub-folders too (one level only: at most
   * window x speculative more per walked folder). Empty folders (zero id)
   * need no request at all. Waiting prefetches run in the order of a
   * depth-first walk (ls -R, find), so the folders a walk needs next come
   * first, before the far end of a window.
   */
  noteUse(repo: string, dir: string, l: Listing): void {
    if (l.used) return;
    l.used = true;
    if (this.prefetch <= 0) return;
    this.queueAhead(repo, dir, l, 0, this.window);
    if (dir === '/') return;
    const parentDir = parentOf(dir);
    const parent = this.lru.peek(key(repo, parentDir));
    if (!parent?.used) return;
    const i = this.subdirsOf(parent).index.get(baseOf(dir));
    if (i === undefined) return;
    this.queueAhead(repo, parentDir, parent, i + 1, this.window);
    if (!parent.walked) {
      parent.walked = true;
      // the siblings ahead that the window fetched before the walk began
      for (const name of this.subdirsOf(parent).names.slice(i + 1, i + 1 + this.window)) {
        const sib = joinDir(parentDir, name);
        const s = this.lru.peek(key(repo, sib));
        if (s && !s.used) this.queueAhead(repo, sib, s, 0, this.speculative, true);
      }
    }
  }

  private subdirsOf(l: Listing): NonNullable<Listing['subdirs']> {
    if (!l.subdirs) {
      const names: string[] = [];
      for (const e of l.entries.values()) if (e.type === 'dir') names.push(e.name);
      l.subdirs = { names, index: new Map(names.map((n, i) => [n, i])) };
    }
    return l.subdirs;
  }

  /** Hand the sub-folders of `dir` at positions from .. from+count-1 to the prefetch (each once per fetch of `dir`). */
  private queueAhead(repo: string, dir: string, l: Listing, from: number, count: number, speculative = false): void {
    const { names } = this.subdirsOf(l);
    if (!l.queued || l.queued.length !== names.length) l.queued = new Uint8Array(names.length);
    const end = Math.min(from + count, names.length);
    for (let i = from; i < end; i++) {
      if (l.queued[i]) continue;
      l.queued[i] = 1;
      const e = l.entries.get(names[i]);
      if (e) this.prefetchOne(repo, joinDir(dir, e.name), e, l.fetchedAt, speculative);
    }
  }

  /** `seenAt`: when the parent listing naming `e` was fetched or revalidated */
  private prefetchOne(repo: string, dir: string, e: DirEntry, seenAt: number, speculative: boolean): void {
    const k = key(repo, dir);
    const have = this.lru.peek(k);
    if ((have && this.current(repo, dir, have)) || this.inflight.has(k)) return;
    if (e.id === ZERO_ID && !have && !this.local?.pendingAt(repo, dir)) {
      // known empty as of the parent's listing; the zero id lets it be renewed like any other
      this.lru.set(k, { oid: ZERO_ID, entries: new Map(), fetchedAt: seenAt });
      return;
    }
    const task = async () => {
      // the walk may have got here first
      const c = this.lru.peek(k);
      if ((c && this.current(repo, dir, c)) || this.inflight.has(k)) return;
      this.stats.prefetched++;
      // a stale listing is revalidated with its oid (cheap when unchanged)
      const p = this.fetch(repo, dir, k, c).finally(() => this.inflight.delete(k));
      this.inflight.set(k, p);
      const l = await p.catch(() => null);
      if (!l || l.used || speculative || this.speculative <= 0) return;
      if (this.lru.peek(key(repo, parentOf(dir)))?.walked) this.queueAhead(repo, dir, l, 0, this.speculative, true);
    };
    this.prefetchQueue.push(this.walkOrder(repo, dir), task);
    this.pump();
  }

  private pump(): void {
    while (this.prefetchActive < this.prefetch) {
      const task = this.prefetchQueue.pop();
      if (!task) return;
      this.prefetchActive++;
      void task().finally(() => {
        this.prefetchActive--;
        this.pump();
      });
    }
  }

  /** listings the prefetch is fetching or has queued */
  prefetchBacklog(): number {
    return this.prefetchActive + this.prefetchQueue.size;
  }

  /** A folder's place in a depth-first walk: its position in each ancestor's listing (0 where unknown). */
  private walkOrder(repo: string, dir: string): number[] {
    const order: number[] = [];
    for (let d = dir; d !== '/'; d = parentOf(d)) {
      const parent = this.lru.peek(key(repo, parentOf(d)));
      order.push((parent && this.subdirsOf(parent).index.get(baseOf(d))) ?? 0);
    }
    return order.reverse();
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
      return this.fetch(repo, dir, k, undefined);
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
      // a local change raced with this fetch: use the answer but do not trust it for long
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
  }

  remove(repo: string, dir: string, name: string): void {
    const k = key(repo, dir);
    this.touch(k);
    this.lru.get(k)?.entries.delete(name);
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

/** A min-heap of tasks by their place in a depth-first walk (number arrays compared element by element). */
class WalkOrderQueue {
  private readonly heap: { order: number[]; task: () => Promise<void> }[] = [];

  get size(): number {
    return this.heap.length;
  }

  private static before(a: number[], b: number[]): boolean {
    for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
    return a.length < b.length;
  }

  push(order: number[], task: () => Promise<void>): void {
    const h = this.heap;
    h.push({ order, task });
    for (let i = h.length - 1; i > 0;) {
      const up = (i - 1) >> 1;
      if (!WalkOrderQueue.before(h[i].order, h[up].order)) break;
      [h[i], h[up]] = [h[up], h[i]];
      i = up;
    }
  }

  pop(): (() => Promise<void>) | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && WalkOrderQueue.before(h[l].order, h[m].order)) m = l;
        if (r < h.length && WalkOrderQueue.before(h[r].order, h[m].order)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top?.task;
  }
}
