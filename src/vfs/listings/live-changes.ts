// Changes made elsewhere, as the server's notification server pushes them
// (client/types: watchChanges). A commit to a followed library makes its
// cached listings stale at once, and those in use are revalidated right away
// (by folder id, from the top: cheap where nothing changed, and a folder whose
// parent names the same id is renewed without a request); a lock taken or
// released makes its folder's listing be fetched afresh (locks are no part of
// a folder's id). Pinned trees of a changed library look again soon; a
// permission change lists the libraries again (a library made read-only then
// refuses writes). Folders this mount itself changed in the last few seconds
// are spared: the event is most likely their own commit; they are looked at
// again once the mount has left them alone that long (someone else may have
// changed them in the same moment).
// While changes are pushed, listings live for `pushedTtlMs` instead of the
// cache time (idle polling slows to minutes); after a break in the feed, one
// revalidation of everything catches what was missed.
import type { ChangeFeed, ChangeMode, SeafileApi, ServerChange } from '../../client/types.js';
import type { MetaCache } from './listing-cache.js';
import { parentOf } from '../common/paths.js';

export interface LiveChangesOptions {
  /** listing lifetime while changes are pushed (ms) */
  pushedTtlMs?: number;
  /** at most this many folders in use are revalidated at once per change */
  eagerFolders?: number;
  /** events of one library within this time are handled once (ms) */
  coalesceMs?: number;
  /** a folder changed here this recently is not made stale by an event (ms) */
  ownChangeMs?: number;
}

export interface LiveStatus {
  mode: ChangeMode | 'off';
  /** changes told by the server since the mount began */
  events: number;
}

export class LiveChanges {
  private feed: ChangeFeed | null = null;
  private events = 0;
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private readonly afterBreak = new Set<string>();
  /** libraries with folders spared as this mount's own change, to be looked at again */
  private readonly recheck = new Map<string, NodeJS.Timeout>();
  private readonly o: Required<LiveChangesOptions>;

  constructor(
    /** the client, or nothing when turned off */
    private readonly api: Pick<SeafileApi, 'watchChanges'>,
    private readonly meta: MetaCache,
    private readonly log: (line: string) => void,
    private readonly baseTtlMs: number,
    o: LiveChangesOptions = {},
    /** told of each library changed on the server (pins look again) */
    private readonly onLibraryChanged: (repo: string) => void = () => {},
    /** told when a library's permissions changed on the server (the libraries are listed again) */
    private readonly onPermissionChanged: (repo: string) => Promise<void> = async () => {},
  ) {
    this.o = {
      pushedTtlMs: Math.max(baseTtlMs, o.pushedTtlMs ?? 300_000),
      eagerFolders: o.eagerFolders ?? 32,
      coalesceMs: o.coalesceMs ?? 200,
      ownChangeMs: o.ownChangeMs ?? 3000,
    };
  }

  /** whether the client can follow changes at all */
  get available(): boolean {
    return !!this.api.watchChanges;
  }

  /** Follows `repos` when the client offers it; a no-op otherwise. */
  start(repos: string[]): void {
    if (!this.api.watchChanges || repos.length === 0 || this.feed) return;
    this.feed = this.api.watchChanges(repos, {
      onChange: (c) => this.onChange(c),
      onResubscribed: () => {
        this.log('notifications: subscribed again; revalidating what may have changed meanwhile');
        for (const repo of repos) this.schedule(repo, true);
      },
      onMode: (m) => {
        this.log(
          m === 'notification'
            ? 'notifications: changes made elsewhere are pushed by the server'
            : 'notifications: not connected; changes made elsewhere are found by revalidating listings',
        );
        this.meta.setTtl(m === 'notification' ? this.o.pushedTtlMs : this.baseTtlMs);
      },
      log: this.log,
    });
  }

  status(): LiveStatus {
    return { mode: this.feed ? this.feed.mode : 'off', events: this.events };
  }

  close(): void {
    this.feed?.close();
    this.feed = null;
    for (const t of [...this.pending.values(), ...this.recheck.values()]) clearTimeout(t);
    this.pending.clear();
    this.recheck.clear();
  }

  private onChange(c: ServerChange): void {
    this.events++;
    if (c.kind === 'file-lock-changed' && c.path) {
      // a lock leaves the folder's id as it is: only a full listing shows it
      const dir = parentOf(c.path);
      this.meta.refetch(c.repo, dir);
      void this.meta.list(c.repo, dir).catch(() => {});
      return;
    }
    if (c.kind === 'folder-perm-changed') {
      this.onPermissionChanged(c.repo).catch((e: Error) =>
        this.log(`notifications: listing the libraries after a permission change failed: ${e.message}`),
      );
    }
    this.schedule(c.repo);
  }

  /** one revalidation per library for a burst of events (a copy of many files commits many times) */
  private schedule(repo: string, afterBreak = false): void {
    if (afterBreak) this.afterBreak.add(repo);
    if (this.pending.has(repo)) return;
    const t = setTimeout(() => {
      this.pending.delete(repo);
      // after a break, changes made here meanwhile may hide others': nothing is spared
      const spare = this.afterBreak.delete(repo) ? 0 : this.o.ownChangeMs;
      void this.revalidate(repo, spare);
    }, this.o.coalesceMs);
    t.unref();
    this.pending.set(repo, t);
  }

  private async revalidate(repo: string, ownChangeMs: number): Promise<void> {
    this.onLibraryChanged(repo);
    const { stale: used, spared } = this.meta.staleLibrary(repo, ownChangeMs, this.baseTtlMs);
    // someone else may have changed a spared folder in the same moment: it is looked at again once this
    // mount has left it alone for the spared time (a copy still writing there pushes that back)
    if (spared > 0 && !this.recheck.has(repo)) {
      const t = setTimeout(() => {
        this.recheck.delete(repo);
        this.schedule(repo);
      }, ownChangeMs + this.o.coalesceMs);
      t.unref();
      this.recheck.set(repo, t);
    }
    // from the top down: a folder revalidated unchanged vouches for the ones below it it names unchanged
    used.sort((a, b) => depth(a) - depth(b));
    for (const dir of used.slice(0, this.o.eagerFolders)) {
      try {
        await this.meta.list(repo, dir);
      } catch {
        // gone, or the server unreachable: the next look at it tells
      }
    }
  }
}

const depth = (dir: string) => (dir === '/' ? 0 : dir.split('/').length);
