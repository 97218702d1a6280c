// Pinned files: folders and files the user wants on this machine whatever
// happens (`seafs pin`, setfattr -n user.seafile.pinned -v 1). Pinning asks
// the server for the whole tree once (one recursive listing), refuses what
// the disk cache cannot hold (--cache-max-size counts pinned files; at most
// PIN_SHARE of it may be pinned, the rest stays for files merely read), and
// records the pin (store.ts) before it answers; the files then come in the
// background, a few at a time (downloads.ts, fetch.ts), into the disk cache,
// whose LRU never evicts them. Every refreshMs each pinned folder is asked
// again (refresh.ts). The listings of a pinned tree go into the listing
// cache too (tree.ts), so it reads offline. This module pins, unpins and
// follows moves through the mount; state.ts holds what is pinned and
// status.ts tells how much of it is here.
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';
import type { Loc } from '../libraries/library-paths.js';
import { isWithin } from '../common/paths.js';
import { cacheName, wholeBytes, type ChunkCache } from '../read/chunk-cache/chunk-cache.js';
import type { BlockReuse } from '../read/block-reuse.js';
import { PinDownloads } from './downloads.js';
import { fmtSize, msgOf } from './log-format.js';
import { PinRefresh } from './refresh.js';
import { PIN_SHARE, pinKey, PinState } from './state.js';
import { fileAvailability, folderAvailability, pinStatus, type PinStatus } from './status.js';
import { PinStore } from './store.js';
import { seedTree, treeOf, type ListingSeeds } from './tree.js';

export interface PinDeps {
  api: SeafileApi;
  disk: ChunkCache | null;
  /** blocks of other cached versions taken instead of downloaded (the reader's; null: off) */
  reuse?: BlockReuse | null;
  /** the account's cache folder (pins/ goes in it) */
  cacheDir: string;
  log(msg: string): void;
  resolve(p: string): Promise<Loc>;
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** the listing cache: a pinned tree's folders are put in it (listings/listing-cache.ts seed) */
  meta: ListingSeeds;
  /** the disk cache's cap in bytes */
  maxBytes: number;
  /** how often pinned folders are asked for changes (default 30 s) */
  refreshMs?: number;
  /** files fetched at once (default 3, as the reader fills a file with three ranges at a time) */
  concurrency?: number;
  durable?: boolean;
}

export class Pins {
  private readonly s: PinState;
  private readonly downloads: PinDownloads;
  private readonly refresher: PinRefresh;

  constructor(private readonly d: PinDeps) {
    const store = new PinStore(`${d.cacheDir}/pins`, d.durable ?? true);
    this.s = new PinState(store, d.maxBytes, d.disk?.chunkBytes ?? 128 * 1024, d.log);
    this.downloads = new PinDownloads(this.s, {
      api: d.api,
      disk: d.disk,
      reuse: d.reuse,
      log: d.log,
      concurrency: d.concurrency,
      onChanged: () => this.refresher.schedule(0),
    });
    this.refresher = new PinRefresh(this.s, this.downloads, {
      api: d.api,
      hasDisk: d.disk !== null,
      meta: d.meta,
      log: d.log,
      refreshMs: d.refreshMs,
    });
    d.disk?.setKeep((name) => this.s.kept.has(name));
  }

  /** the bytes pinned files may take */
  get limitBytes(): number {
    return this.s.limitBytes;
  }

  get stats(): { fetched: number; fetchedBytes: number; refreshes: number } {
    return this.s.stats;
  }

  /**
   * Reads the pins left on disk; `mine` says which libraries this mount
   * serves (their pins are fetched on and refreshed here). Starts the work.
   */
  async init(mine: (repo: string) => boolean, allLibraries: boolean): Promise<void> {
    const s = this.s;
    s.allLibraries = allLibraries;
    await s.readOthers();
    for (const [repo, p] of s.others) {
      if (!mine(repo)) continue;
      s.libs.set(repo, p);
      s.others.delete(repo);
    }
    s.recount();
    for (const p of s.libs.values()) for (const path of p.files.keys()) this.downloads.enqueue(p.repo, path);
    if (s.libs.size) {
      let n = 0;
      for (const p of s.libs.values()) n += p.files.size;
      this.d.log(
        this.d.disk
          ? `pinned: ${n} file(s) in ${s.libs.size} librar${s.libs.size === 1 ? 'y' : 'ies'}; checking them`
          : `pinned: ${n} file(s) kept for a mount with a disk cache; this one has none (--cache-max-size 0)`,
      );
    }
    this.refresher.schedule(s.libs.size ? 0 : undefined);
  }

  // ---- what the xattrs and status ask (status.ts) ----

  /** the pinned path that covers `path` (itself or a folder above it), or null */
  rootOf(repo: string, path: string): string | null {
    return this.s.rootOf(repo, path);
  }

  fileAvailability(repo: string, path: string, e: DirEntry | null): Promise<string> {
    return fileAvailability(this.s, this.d.disk, repo, path, e);
  }

  folderAvailability(repo: string, path: string): string {
    return folderAvailability(this.s, repo, path);
  }

  status(): PinStatus {
    return pinStatus(this.s, this.downloads.partialBytes);
  }

  /** something is pinned here */
  get any(): boolean {
    return this.s.libs.size > 0;
  }

  // ---- pin and unpin ----

  /** Pins the file or folder at the mount path `p`; ENOSPC (nothing changed) when it does not fit. */
  async pin(p: string): Promise<{ files: number; bytes: number; already: boolean }> {
    const s = this.s;
    const disk = this.d.disk;
    const loc = await this.d.resolve(p);
    if (loc.repo === null)
      throw new VfsError('EINVAL', 'the folder of all libraries cannot be pinned: pin a library or something in it');
    const repo = loc.repo;
    const path = loc.path;
    const covering = s.rootOf(repo, path);
    if (covering !== null) {
      const p0 = s.libs.get(repo)!;
      let files = 0;
      let bytes = 0;
      for (const [fp, f] of p0.files)
        if (isWithin(fp, path)) {
          files++;
          bytes += f.size;
        }
      return { files, bytes, already: true };
    }
    if (!disk)
      throw this.refuse(p, new VfsError('ENOSPC', 'the disk cache is off (--cache-max-size 0): nothing can be pinned'));
    const e =
      path === '/' ? ({ type: 'dir', name: '', id: '', mtime: 0 } as DirEntry) : await this.d.lookup(repo, path);
    if (!e) throw new VfsError('ENOENT', p);
    let oid: string | null = null;
    let files: Map<string, DirEntry>;
    if (e.type === 'dir') {
      const since = this.d.meta.changeSeq;
      const l = await this.d.api.listDir(repo, path, { recursive: true });
      if (l.uptodate) throw new VfsError('EIO', `the server answered "uptodate" to a listing of ${p}`);
      oid = l.oid;
      const tree = treeOf(path, l.entries);
      files = tree.files;
      seedTree(this.d.meta, repo, path, oid, tree.dirs, since);
    } else {
      files = new Map([[path, e]]);
    }
    // what it adds to the account's pinned bytes (a file pinned already, or twice, counts once)
    const add = new Map<string, number>();
    for (const f of files.values()) {
      const n = cacheName(f.id);
      if ((f.size ?? 0) > 0 && !s.kept.has(n)) add.set(n, wholeBytes(f.size ?? 0, disk.chunkBytes));
    }
    let needed = 0;
    for (const b of add.values()) needed += b;
    if (s.keptBytes + needed > s.limitBytes) {
      throw this.refuse(
        p,
        new VfsError(
          'ENOSPC',
          `it needs ${fmtSize(needed)} more on disk, pinned files take ${fmtSize(s.keptBytes)} already, and at most ` +
            `${fmtSize(s.limitBytes)} may be pinned (${Math.round(PIN_SHARE * 100)}% of --cache-max-size ` +
            `${fmtSize(this.d.maxBytes)}): unpin something or mount with a larger --cache-max-size`,
        ),
      );
    }
    const lib = s.libOf(repo);
    // pinned folders below it are now part of it
    for (const r of [...lib.roots.keys()]) if (isWithin(r, path)) lib.roots.delete(r);
    lib.roots.set(path, { oid: e.type === 'dir' ? oid : null });
    let bytes = 0;
    for (const [fp, f] of files) {
      lib.files.set(fp, { id: f.id, size: f.size ?? 0 });
      bytes += f.size ?? 0;
    }
    s.recount();
    await s.save(lib);
    for (const fp of files.keys()) this.downloads.enqueue(repo, fp);
    this.d.log(`pinned ${p}: ${files.size} file(s), ${fmtSize(bytes)}; downloading in the background`);
    this.refresher.schedule();
    return { files: files.size, bytes, already: false };
  }

  private refuse(p: string, e: VfsError): VfsError {
    this.d.log(`cannot pin ${p}: ${e.message.replace(/^[A-Z]+: /, '')}`);
    return e;
  }

  /**
   * Unpins `p` (and pinned folders and files below it). A path pinned only
   * through a folder above it cannot be unpinned alone (EINVAL). The data
   * stays in the disk cache as any read file does, for the LRU to evict.
   */
  async unpin(p: string): Promise<number> {
    const s = this.s;
    const loc = await this.d.resolve(p);
    if (loc.repo === null) throw new VfsError('EINVAL', 'the folder of all libraries is not pinned');
    const lib = s.libs.get(loc.repo);
    if (!lib) return 0;
    const gone = [...lib.roots.keys()].filter((r) => isWithin(r, loc.path));
    if (gone.length === 0) {
      const above = s.rootOf(loc.repo, loc.path);
      if (above !== null)
        throw new VfsError('EINVAL', `${p} is pinned through the folder ${above} of its library: unpin that folder`);
      return 0;
    }
    for (const r of gone) {
      lib.roots.delete(r);
      // what did not fit is counted per pinned folder
      s.unfit.delete(pinKey(loc.repo, r));
    }
    const n = s.dropUncovered(lib);
    s.recount();
    await s.save(lib);
    this.d.log(`unpinned ${p}: ${n} file(s) are ordinary cached data again`);
    return n;
  }

  /**
   * A rename through the mount: pinned paths at or below `src` move with it
   * (to another library too), and a file or folder moved into a pinned
   * folder is taken in at the next refresh, which runs soon.
   */
  async moved(src: string, dst: string): Promise<void> {
    const s = this.s;
    try {
      const a = await this.d.resolve(src);
      const b = await this.d.resolve(dst);
      if (a.repo === null || b.repo === null) return;
      const wasIn = s.rootOf(a.repo, a.path) !== null;
      const from = s.libs.get(a.repo);
      const moved = from ? [...from.roots.keys()].filter((r) => isWithin(r, a.path)) : [];
      const rebase = (p: string) =>
        p === a.path ? b.path : b.path === '/' ? p.slice(a.path.length) : b.path + p.slice(a.path.length);
      if (from && moved.length) {
        const to = s.libOf(b.repo);
        for (const r of moved) {
          const root = from.roots.get(r)!;
          from.roots.delete(r);
          // its folder id is the same (the content did not change); a file's parent's is not
          to.roots.set(rebase(r), { oid: from.files.has(r) ? null : root.oid });
        }
        for (const [fp, f] of [...from.files]) {
          if (!isWithin(fp, a.path)) continue;
          from.files.delete(fp);
          to.files.set(rebase(fp), f);
          const done = s.done.get(pinKey(a.repo, fp));
          s.forgetFile(a.repo, fp);
          if (done) s.done.set(pinKey(b.repo, rebase(fp)), done);
        }
        if (from.roots.size === 0) s.libs.delete(a.repo);
        await s.save(from);
        if (to !== from) await s.save(to);
        this.d.log(`pinned ${src} moved to ${dst}; still pinned`);
      }
      if (wasIn || s.rootOf(b.repo, b.path) !== null) this.refresher.schedule(1000);
    } catch (e) {
      this.d.log(`pins: could not follow the move of ${src} to ${dst} (${msgOf(e)}); the next check sorts it out`);
    }
  }

  // ---- downloads and refreshes (downloads.ts, refresh.ts) ----

  /** the server answers again: the downloads it stopped go on */
  retryNow(): void {
    this.downloads.retryFailed(true);
  }

  /** a file under `path` changed through this mount (uploaded): the pin that holds it looks again soon */
  touched(repo: string, path: string): void {
    if (this.s.rootOf(repo, path) !== null) this.refresher.schedule(1000);
  }

  /** the server told of a commit to `repo` (live-changes.ts): its pinned trees look again soon */
  changedOnServer(repo: string): void {
    if (this.s.hasPins(repo)) this.refresher.schedule(1000);
  }

  /** Asks the server about every pinned path (for tests: resolves when done). */
  refresh(): Promise<void> {
    return this.refresher.refresh();
  }

  /** files still to come (queued or fetching) */
  get backlog(): number {
    return this.downloads.backlog;
  }

  /** Resolves once nothing is queued or fetching (for tests). */
  idle(): Promise<void> {
    return this.downloads.idle();
  }

  close(): void {
    this.s.closed = true;
    this.refresher.close();
  }
}
