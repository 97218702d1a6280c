// The background prefetch of sub-folder listings that makes tree walks (ls -R,
// find, du) find each folder already listed: a bounded number of fetches at a
// time, in depth-first walk order, over a window that slides with the walk
// (noteUse says how). It keeps no listings: the listing cache (PrefetchHost)
// holds them and does the fetching.
import { ZERO_ID, type DirEntry } from '../../client/types.js';
import { baseOf, parentOf } from '../common/paths.js';
import { joinDir, listingKey as key, type Listing, type LocalFolders, type MetaStats } from './listing-entries.js';
import { WalkOrderQueue } from './walk-order-queue.js';

/** What the prefetch asks of the listing cache (listing-cache.ts). */
export interface PrefetchHost {
  /** the listing held under a key, its recency untouched */
  peek(k: string): Listing | undefined;
  hold(k: string, l: Listing): void;
  /** fresh, or renewed from its parent */
  current(repo: string, dir: string, l: Listing): boolean;
  /** the fetches running, by key */
  readonly inflight: Map<string, Promise<Listing>>;
  /** a listing fetched, or revalidated with the oid of `cached` */
  fetch(repo: string, dir: string, k: string, cached: Listing | undefined): Promise<Listing>;
  local(): LocalFolders | null;
  readonly stats: MetaStats;
}

export class ListingPrefetch {
  /** prefetches running, and those waiting, the first in walk order first */
  private active = 0;
  private readonly queue = new WalkOrderQueue();

  constructor(
    private readonly host: PrefetchHost,
    /** sub-folder listings fetched ahead at once (0: none) */
    private readonly prefetch: number,
    /** how many sub-folders the prefetch keeps queued ahead of the last one a walk entered */
    private readonly window: number,
    /** sub-folders of a prefetched folder fetched on speculation, before the walk enters it */
    private readonly speculative: number,
  ) {}

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
    const parent = this.host.peek(key(repo, parentDir));
    if (!parent?.used) return;
    const i = this.subdirsOf(parent).index.get(baseOf(dir));
    if (i === undefined) return;
    this.queueAhead(repo, parentDir, parent, i + 1, this.window);
    if (!parent.walked) {
      parent.walked = true;
      // the siblings ahead that the window fetched before the walk began
      for (const name of this.subdirsOf(parent).names.slice(i + 1, i + 1 + this.window)) {
        const sib = joinDir(parentDir, name);
        const s = this.host.peek(key(repo, sib));
        if (s && !s.used) this.queueAhead(repo, sib, s, 0, this.speculative, true);
      }
    }
  }

  /** its sub-folders in listing order, with their positions (built at first need) */
  subdirsOf(l: Listing): NonNullable<Listing['subdirs']> {
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
    const have = this.host.peek(k);
    if ((have && this.host.current(repo, dir, have)) || this.host.inflight.has(k)) return;
    if (e.id === ZERO_ID && !have && !this.host.local()?.pendingAt(repo, dir)) {
      // known empty as of the parent's listing; the zero id lets it be renewed like any other
      this.host.hold(k, { oid: ZERO_ID, entries: new Map(), fetchedAt: seenAt });
      return;
    }
    const task = async () => {
      // the walk may have got here first
      const c = this.host.peek(k);
      if ((c && this.host.current(repo, dir, c)) || this.host.inflight.has(k)) return;
      this.host.stats.prefetched++;
      // a stale listing is revalidated with its oid (cheap when unchanged)
      const p = this.host.fetch(repo, dir, k, c).finally(() => this.host.inflight.delete(k));
      this.host.inflight.set(k, p);
      const l = await p.catch(() => null);
      if (!l || l.used || speculative || this.speculative <= 0) return;
      if (this.host.peek(key(repo, parentOf(dir)))?.walked) this.queueAhead(repo, dir, l, 0, this.speculative, true);
    };
    this.queue.push(this.walkOrder(repo, dir), task);
    this.pump();
  }

  private pump(): void {
    while (this.active < this.prefetch) {
      const task = this.queue.pop();
      if (!task) return;
      this.active++;
      void task().finally(() => {
        this.active--;
        this.pump();
      });
    }
  }

  /** listings the prefetch is fetching or has queued */
  backlog(): number {
    return this.active + this.queue.size;
  }

  /** A folder's place in a depth-first walk: its position in each ancestor's listing (0 where unknown). */
  private walkOrder(repo: string, dir: string): number[] {
    const order: number[] = [];
    for (let d = dir; d !== '/'; d = parentOf(d)) {
      const parent = this.host.peek(key(repo, parentOf(d)));
      order.push((parent && this.subdirsOf(parent).index.get(baseOf(d))) ?? 0);
    }
    return order.reverse();
  }
}
