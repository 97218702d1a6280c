// Following the server: every refreshMs each pinned path is asked again with
// its folder id ("uptodate" while nothing changed below it; a pinned file:
// its parent's listing). New files are taken in while they fit, changed ones
// fetched again, removed ones dropped, and a pinned path gone from the server
// is unpinned. Failed downloads are tried again at each refresh.
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { isNotFound, VfsError } from '../errors.js';
import { baseOf, isWithin, parentOf } from '../common/paths.js';
import { cacheName, wholeBytes } from '../read/chunk-cache/chunk-cache.js';
import type { PinDownloads } from './downloads.js';
import { fmtSize, msgOf } from './log-format.js';
import { pinKey, type PinState } from './state.js';
import type { LibraryPins } from './store.js';
import { seedTree, treeOf, type ListingSeeds } from './tree.js';

export interface RefreshDeps {
  api: SeafileApi;
  /** no disk cache: nothing is refreshed (nothing is fetched either) */
  hasDisk: boolean;
  meta: ListingSeeds;
  log(msg: string): void;
  /** how often pinned folders are asked for changes (default 30 s) */
  refreshMs?: number;
}

export class PinRefresh {
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(
    private readonly s: PinState,
    private readonly downloads: PinDownloads,
    private readonly d: RefreshDeps,
  ) {}

  /** The next refresh in `ms` (default: refreshMs), instead of the one planned. */
  schedule(ms = this.d.refreshMs ?? 30_000): void {
    if (this.s.closed || !this.d.hasDisk) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.refresh()
        .catch((e: unknown) => this.d.log(`pins: the check for changes failed (${msgOf(e)}); tried again later`))
        .finally(() => this.schedule());
    }, ms);
    this.timer.unref();
  }

  /** Asks the server about every pinned path (for tests: resolves when done). */
  refresh(): Promise<void> {
    const s = this.s;
    this.refreshing ??= (async () => {
      try {
        s.stats.refreshes++;
        await s.readOthers();
        s.recount();
        for (const lib of [...s.libs.values()])
          for (const [root, r] of [...lib.roots]) {
            if (s.closed) return;
            try {
              await this.refreshRoot(lib, root, r);
            } catch (e) {
              if (unreachable(e)) return; // offline: the next refresh after it is back
              this.d.log(`pinned ${root}: cannot check it for changes (${msgOf(e)})`);
            }
          }
        // failed downloads are tried again at each refresh
        this.downloads.retryFailed(false);
      } finally {
        this.refreshing = null;
      }
    })();
    return this.refreshing;
  }

  private async refreshRoot(lib: LibraryPins, root: string, r: { oid: string | null }): Promise<void> {
    const repo = lib.repo;
    const since = this.d.meta.changeSeq;
    let files: Map<string, DirEntry>;
    let oid: string | null;
    try {
      if (lib.files.has(root) && root !== '/') {
        // a file: its parent's listing says whether it changed
        const l = await this.d.api.listDir(repo, parentOf(root), r.oid ? { oid: r.oid } : undefined);
        if (l.uptodate) return;
        const e = l.entries.find((x) => x.name === baseOf(root));
        if (!e || e.type !== 'file') throw new VfsError('ENOENT', root);
        files = new Map([[root, e]]);
        oid = l.oid;
      } else {
        const l = await this.d.api.listDir(repo, root, r.oid ? { recursive: true, oid: r.oid } : { recursive: true });
        if (l.uptodate) return;
        const tree = treeOf(root, l.entries);
        files = tree.files;
        oid = l.oid;
        seedTree(this.d.meta, repo, root, oid, tree.dirs, since);
      }
    } catch (e) {
      if (!isNotFound(e) && !(e instanceof VfsError && e.code === 'ENOENT')) throw e;
      // gone from the server (deleted or moved there or through the mount): nothing left to keep
      lib.roots.delete(root);
      this.s.dropUncovered(lib);
      this.s.recount();
      await this.s.save(lib);
      this.d.log(`pinned ${root} is no longer on the server; unpinned`);
      return;
    }
    this.apply(lib, root, files);
    r.oid = oid;
    this.s.recount();
    await this.s.save(lib);
  }

  /** the files under `root` are now `files`: drop the removed, take in the new and changed while they fit */
  private apply(lib: LibraryPins, root: string, files: Map<string, DirEntry>): void {
    const s = this.s;
    const repo = lib.repo;
    for (const fp of [...lib.files.keys()]) {
      if (!isWithin(fp, root) || files.has(fp)) continue;
      lib.files.delete(fp);
      s.forgetFile(repo, fp);
    }
    const unfit = new Map<string, number>();
    let changed = 0;
    for (const [fp, e] of files) {
      const old = lib.files.get(fp);
      if (old && old.id === e.id) continue;
      const n = cacheName(e.id);
      const need = (e.size ?? 0) > 0 && !s.kept.has(n) ? wholeBytes(e.size ?? 0, s.chunkBytes) : 0;
      const freed = old && old.size > 0 ? (s.kept.get(cacheName(old.id)) ?? 0) : 0;
      if (s.keptBytes + need - freed > s.limitBytes) {
        unfit.set(fp, e.size ?? 0);
        continue;
      }
      lib.files.set(fp, { id: e.id, size: e.size ?? 0 });
      // counted now for the files after it; the version it replaces is let go by the recount after the loop
      if (need > 0) {
        s.kept.set(n, need);
        s.keptBytes += need;
      }
      s.done.delete(pinKey(repo, fp));
      this.downloads.enqueue(repo, fp);
      changed++;
    }
    const k = pinKey(repo, root);
    const before = s.unfit.get(k)?.size ?? 0;
    if (unfit.size) s.unfit.set(k, unfit);
    else s.unfit.delete(k);
    if (unfit.size && unfit.size !== before)
      this.d.log(
        `pinned ${root}: ${unfit.size} new or changed file(s) do not fit in the disk cache (at most ${fmtSize(s.limitBytes)} may be pinned); they are not kept`,
      );
    if (changed) this.d.log(`pinned ${root}: ${changed} new or changed file(s) on the server; downloading`);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
