// Pinned files: folders and files the user wants on this machine whatever
// happens (`seafs pin`, setfattr -n user.seafile.pinned -v 1). Pinning asks
// the server for the whole tree once (one recursive listing), refuses what
// the disk cache cannot hold (--cache-max-size counts pinned files; at most
// PIN_SHARE of it may be pinned, the rest stays for files merely read), and
// records the pin (store.ts) before it answers; the files then come in the
// background, a few at a time (fetch.ts), into the disk cache, whose LRU
// never evicts them. Every refreshMs each pinned folder is asked again with
// its folder id ("uptodate" while nothing changed below it): new files are
// added, changed ones fetched again, removed ones dropped. The listings of a
// pinned tree go into the listing cache too, so it reads offline.
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { ZERO_ID } from '../../client/types.js';
import { unreachable } from '../connectivity.js';
import { isNotFound, VfsError } from '../errors.js';
import type { Loc } from '../libraries.js';
import { baseOf, isWithin, joinPath, parentOf } from '../paths.js';
import { cacheName, wholeBytes, type BlockCache } from '../read/block-cache.js';
import { DownloadLinks } from '../read/download-links.js';
import { newReaderStats, type ReaderStats } from '../read/types.js';
import { fetchWhole } from './fetch.js';
import { PinStore, type LibraryPins, type PinnedFile } from './store.js';

/** the share of --cache-max-size pinned files may take (the cache evicts down to 90% of it) */
export const PIN_SHARE = 0.9;

export interface PinDeps {
  api: SeafileApi;
  disk: BlockCache | null;
  /** the account's cache folder (pins/ goes in it) */
  cacheDir: string;
  log(msg: string): void;
  resolve(p: string): Promise<Loc>;
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** the listing cache: a pinned tree's folders are put in it (meta-cache.ts seed) */
  meta: {
    seed(repo: string, dir: string, oid: string | null, entries: DirEntry[], sinceSeq: number): void;
    readonly changeSeq: number;
  };
  /** the disk cache's cap in bytes */
  maxBytes: number;
  /** how often pinned folders are asked for changes (default 30 s) */
  refreshMs?: number;
  /** files fetched at once (default 3, as the reader fills a file with three ranges at a time) */
  concurrency?: number;
  durable?: boolean;
}

/** What `seafs status` shows of the pins. */
export interface PinStatus {
  roots: string[];
  files: number;
  bytes: number;
  /** files (and their bytes) whole on disk */
  doneFiles: number;
  doneBytes: number;
  /** bytes received for files still coming */
  partialBytes: number;
  /** files waiting for the server (offline) or failing */
  waiting: number;
  failed: { path: string; error: string }[];
  /** files under pinned folders that the cache cannot hold */
  unfit: { files: number; bytes: number };
  /** bytes downloaded for pins since the mount */
  fetchedBytes: number;
  /** pinned bytes of every library of the account, and how many may be pinned */
  accountBytes: number;
  limitBytes: number;
}

const key = (repo: string, path: string) => `${repo}\u0000${path}`;
/** as `seafs status` writes sizes */
function fmt(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}
const msgOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** files of a recursive listing: path -> entry, and the folders' entries by folder */
function treeOf(root: string, entries: DirEntry[]): { files: Map<string, DirEntry>; dirs: Map<string, DirEntry[]> } {
  const files = new Map<string, DirEntry>();
  const dirs = new Map<string, DirEntry[]>([[root, []]]);
  for (const e of entries) {
    const parent = e.parent_dir ?? root;
    const path = joinPath(parent, e.name);
    if (!isWithin(path, root)) continue;
    let list = dirs.get(parent);
    if (!list) dirs.set(parent, (list = []));
    list.push(e);
    if (e.type === 'file') files.set(path, e);
    else if (!dirs.has(path)) dirs.set(path, []);
  }
  return { files, dirs };
}

export class Pins {
  private readonly store: PinStore;
  /** this mount's libraries' pins */
  private readonly libs = new Map<string, LibraryPins>();
  /** the other libraries' pins of the account (other mounts'), as last read */
  private others = new Map<string, LibraryPins>();
  /** cache file names kept, with their bytes on disk (every library of the account) */
  private kept = new Map<string, number>();
  private keptBytes = 0;
  /** files whole on disk (repo\0path -> the id that is) */
  private readonly done = new Map<string, string>();
  private readonly queue: { repo: string; path: string }[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Map<string, { id: string; bytes: number }>();
  /** files that failed: waiting for the server (unreachable) or for the next refresh */
  private readonly failed = new Map<string, { error: string; offline: boolean }>();
  private readonly unfit = new Map<string, Map<string, number>>();
  private readonly links: DownloadLinks;
  private readonly linkStats: ReaderStats = newReaderStats();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private closed = false;
  private mine: (repo: string) => boolean = () => true;
  /** the mount shows every library: paths in status are named with their library's id */
  private allLibraries = true;
  readonly stats = { fetched: 0, fetchedBytes: 0, refreshes: 0 };

  constructor(private readonly d: PinDeps) {
    this.store = new PinStore(`${d.cacheDir}/pins`, d.durable ?? true);
    this.links = new DownloadLinks(d.api, 50 * 60_000, this.linkStats);
    d.disk?.setKeep((name) => this.kept.has(name));
  }

  /** the bytes pinned files may take */
  get limitBytes(): number {
    return Math.floor(this.d.maxBytes * PIN_SHARE);
  }

  /**
   * Reads the pins left on disk; `mine` says which libraries this mount
   * serves (their pins are fetched on and refreshed here). Starts the work.
   */
  async init(mine: (repo: string) => boolean, allLibraries: boolean): Promise<void> {
    this.mine = mine;
    this.allLibraries = allLibraries;
    await this.readOthers();
    for (const [repo, p] of this.others) {
      if (!mine(repo)) continue;
      this.libs.set(repo, p);
      this.others.delete(repo);
    }
    this.recount();
    for (const p of this.libs.values()) for (const path of p.files.keys()) this.enqueue(p.repo, path);
    if (this.libs.size) {
      let n = 0;
      for (const p of this.libs.values()) n += p.files.size;
      this.d.log(
        this.d.disk
          ? `pinned: ${n} file(s) in ${this.libs.size} librar${this.libs.size === 1 ? 'y' : 'ies'}; checking them`
          : `pinned: ${n} file(s) kept for a mount with a disk cache; this one has none (--cache-max-size 0)`,
      );
    }
    this.schedule(this.libs.size ? 0 : undefined);
  }

  private async readOthers(): Promise<void> {
    const all = await this.store.readAll((file, e) =>
      this.d.log(`pins: ${file} is unreadable (${msgOf(e)}); left out`),
    );
    this.others = new Map([...all].filter(([repo]) => !this.libs.has(repo)));
  }

  /** the kept names and bytes, from this mount's pins and the others' */
  private recount(): void {
    const kept = new Map<string, number>();
    const chunk = this.d.disk?.chunkBytes ?? 128 * 1024;
    for (const p of [...this.libs.values(), ...this.others.values()])
      for (const f of p.files.values()) if (f.size > 0) kept.set(cacheName(f.id), wholeBytes(f.size, chunk));
    this.kept = kept;
    this.keptBytes = 0;
    for (const b of kept.values()) this.keptBytes += b;
  }

  // ---- what the xattrs and status ask ----

  /** the pinned path that covers `path` (itself or a folder above it), or null */
  rootOf(repo: string, path: string): string | null {
    const p = this.libs.get(repo);
    if (!p) return null;
    for (const r of p.roots.keys()) if (isWithin(path, r)) return r;
    return null;
  }

  /**
   * How much of a file is on this machine, for user.seafile.status after
   * "synced": "pinned" (whole), "pinned, downloading N%", "cached" (whole,
   * not pinned), "partly cached", or "" (nothing of it: cloud-only).
   */
  async fileAvailability(repo: string, path: string, e: DirEntry | null): Promise<string> {
    const pinned = this.rootOf(repo, path) !== null;
    const disk = this.d.disk;
    if (!disk) return pinned ? 'pinned, not kept (no disk cache: --cache-max-size 0)' : '';
    if (!e || e.type !== 'file') return pinned ? 'pinned' : '';
    const size = e.size ?? 0;
    if (pinned && this.done.get(key(repo, path)) === e.id) return 'pinned';
    if (!disk || size === 0 || !e.id || e.id === ZERO_ID) return pinned ? 'pinned' : '';
    if (!disk.known(e.id)) return pinned ? 'pinned, downloading 0%' : '';
    const { have, of } = await disk.peek(e.id, size);
    if (pinned) return have >= of ? 'pinned' : `pinned, downloading ${Math.min(99, Math.floor((have * 100) / of))}%`;
    return have >= of ? 'cached' : have > 0 ? 'partly cached' : '';
  }

  /** a folder's: "pinned", "pinned, downloading N of M files", or "" */
  folderAvailability(repo: string, path: string): string {
    const p = this.libs.get(repo);
    if (!p || this.rootOf(repo, path) === null) {
      // a folder holding pinned ones is not pinned itself
      return '';
    }
    let total = 0;
    let whole = 0;
    for (const [fp, f] of p.files) {
      if (!isWithin(fp, path)) continue;
      total++;
      if (f.size === 0 || this.done.get(key(repo, fp)) === f.id) whole++;
    }
    return whole === total ? 'pinned' : `pinned, downloading ${total - whole} of ${total} files`;
  }

  status(): PinStatus {
    const s: PinStatus = {
      roots: [],
      files: 0,
      bytes: 0,
      doneFiles: 0,
      doneBytes: 0,
      partialBytes: 0,
      waiting: 0,
      failed: [],
      unfit: { files: 0, bytes: 0 },
      fetchedBytes: this.stats.fetchedBytes,
      accountBytes: this.keptBytes,
      limitBytes: this.limitBytes,
    };
    for (const p of this.libs.values()) {
      for (const r of p.roots.keys()) s.roots.push(this.allLibraries ? `${p.repo}:${r}` : r);
      for (const [path, f] of p.files) {
        s.files++;
        s.bytes += f.size;
        if (f.size === 0 || this.done.get(key(p.repo, path)) === f.id) {
          s.doneFiles++;
          s.doneBytes += f.size;
        }
      }
    }
    for (const a of this.active.values()) s.partialBytes += a.bytes;
    for (const [k, f] of this.failed) {
      if (f.offline) s.waiting++;
      else s.failed.push({ path: k.split('\u0000')[1], error: f.error });
    }
    for (const m of this.unfit.values())
      for (const b of m.values()) {
        s.unfit.files++;
        s.unfit.bytes += b;
      }
    return s;
  }

  // ---- pin and unpin ----

  /** Pins the file or folder at the mount path `p`; ENOSPC (nothing changed) when it does not fit. */
  async pin(p: string): Promise<{ files: number; bytes: number; already: boolean }> {
    const disk = this.d.disk;
    const loc = await this.d.resolve(p);
    if (loc.repo === null)
      throw new VfsError('EINVAL', 'the folder of all libraries cannot be pinned: pin a library or something in it');
    const repo = loc.repo;
    const path = loc.path;
    const covering = this.rootOf(repo, path);
    if (covering !== null) {
      const p0 = this.libs.get(repo)!;
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
      this.seedTree(repo, path, oid, tree.dirs, since);
    } else {
      files = new Map([[path, e]]);
    }
    // what it adds to the account's pinned bytes (a file pinned already, or twice, counts once)
    const add = new Map<string, number>();
    for (const f of files.values()) {
      const n = cacheName(f.id);
      if ((f.size ?? 0) > 0 && !this.kept.has(n)) add.set(n, wholeBytes(f.size ?? 0, disk.chunkBytes));
    }
    let needed = 0;
    for (const b of add.values()) needed += b;
    if (this.keptBytes + needed > this.limitBytes) {
      throw this.refuse(
        p,
        new VfsError(
          'ENOSPC',
          `it needs ${fmt(needed)} more on disk, pinned files take ${fmt(this.keptBytes)} already, and at most ` +
            `${fmt(this.limitBytes)} may be pinned (${Math.round(PIN_SHARE * 100)}% of --cache-max-size ` +
            `${fmt(this.d.maxBytes)}): unpin something or mount with a larger --cache-max-size`,
        ),
      );
    }
    let lib = this.libs.get(repo);
    if (!lib) this.libs.set(repo, (lib = { repo, roots: new Map(), files: new Map() }));
    // pinned folders below it are now part of it
    for (const r of [...lib.roots.keys()]) if (isWithin(r, path)) lib.roots.delete(r);
    lib.roots.set(path, { oid: e.type === 'dir' ? oid : null });
    let bytes = 0;
    for (const [fp, f] of files) {
      lib.files.set(fp, { id: f.id, size: f.size ?? 0 });
      bytes += f.size ?? 0;
    }
    this.recount();
    await this.store.save(lib);
    for (const fp of files.keys()) this.enqueue(repo, fp);
    this.d.log(`pinned ${p}: ${files.size} file(s), ${fmt(bytes)}; downloading in the background`);
    this.schedule();
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
    const loc = await this.d.resolve(p);
    if (loc.repo === null) throw new VfsError('EINVAL', 'the folder of all libraries is not pinned');
    const lib = this.libs.get(loc.repo);
    if (!lib) return 0;
    const gone = [...lib.roots.keys()].filter((r) => isWithin(r, loc.path));
    if (gone.length === 0) {
      const above = this.rootOf(loc.repo, loc.path);
      if (above !== null)
        throw new VfsError('EINVAL', `${p} is pinned through the folder ${above} of its library: unpin that folder`);
      return 0;
    }
    for (const r of gone) lib.roots.delete(r);
    let n = 0;
    for (const fp of [...lib.files.keys()]) {
      if (this.rootOf(loc.repo, fp) !== null) continue;
      lib.files.delete(fp);
      this.forgetFile(loc.repo, fp);
      n++;
    }
    this.unfit.delete(loc.repo);
    if (lib.roots.size === 0) this.libs.delete(loc.repo);
    this.recount();
    await this.store.save(lib);
    this.d.log(`unpinned ${p}: ${n} file(s) are ordinary cached data again`);
    return n;
  }

  /** something is pinned here */
  get any(): boolean {
    return this.libs.size > 0;
  }

  /**
   * A rename through the mount: pinned paths at or below `src` move with it
   * (to another library too), and a file or folder moved into a pinned
   * folder is taken in at the next refresh, which runs soon.
   */
  async moved(src: string, dst: string): Promise<void> {
    try {
      const a = await this.d.resolve(src);
      const b = await this.d.resolve(dst);
      if (a.repo === null || b.repo === null) return;
      const wasIn = this.rootOf(a.repo, a.path) !== null;
      const from = this.libs.get(a.repo);
      const moved = from ? [...from.roots.keys()].filter((r) => isWithin(r, a.path)) : [];
      const rebase = (p: string) =>
        p === a.path ? b.path : b.path === '/' ? p.slice(a.path.length) : b.path + p.slice(a.path.length);
      if (from && moved.length) {
        let to = this.libs.get(b.repo);
        if (!to) this.libs.set(b.repo, (to = { repo: b.repo, roots: new Map(), files: new Map() }));
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
          const k = key(a.repo, fp);
          const done = this.done.get(k);
          this.forgetFile(a.repo, fp);
          if (done) this.done.set(key(b.repo, rebase(fp)), done);
        }
        if (from.roots.size === 0) this.libs.delete(a.repo);
        await this.store.save(from);
        if (to !== from) await this.store.save(to);
        this.d.log(`pinned ${src} moved to ${dst}; still pinned`);
      }
      if (wasIn || this.rootOf(b.repo, b.path) !== null) this.schedule(1000);
    } catch (e) {
      this.d.log(`pins: could not follow the move of ${src} to ${dst} (${msgOf(e)}); the next check sorts it out`);
    }
  }

  private forgetFile(repo: string, path: string): void {
    const k = key(repo, path);
    this.done.delete(k);
    this.failed.delete(k);
  }

  // ---- fetching ----

  private enqueue(repo: string, path: string): void {
    const k = key(repo, path);
    // no disk cache (--cache-max-size 0): the pins are kept for a later mount with one, nothing is fetched
    if (this.closed || this.queued.has(k) || !this.d.disk) return;
    this.queued.add(k);
    this.queue.push({ repo, path });
    this.pump();
  }

  private pump(): void {
    const max = this.d.concurrency ?? 3;
    while (!this.closed && this.active.size < max && this.queue.length) {
      const t = this.queue.shift()!;
      const k = key(t.repo, t.path);
      this.queued.delete(k);
      const f = this.libs.get(t.repo)?.files.get(t.path);
      if (!f || this.active.has(k)) continue;
      if (f.size === 0 || this.done.get(k) === f.id) continue;
      void this.fetch(t.repo, t.path, f);
    }
  }

  private async fetch(repo: string, path: string, f: PinnedFile): Promise<void> {
    const k = key(repo, path);
    const a = { id: f.id, bytes: 0 };
    this.active.set(k, a);
    const remote = { repo, path, size: f.size, version: f.id };
    const current = () => this.libs.get(repo)?.files.get(path)?.id === f.id;
    try {
      const ok = await fetchWhole(this.d.disk!, this.links, remote, {
        stopped: () => this.closed || !current(),
        onResume: (have, of) => this.d.log(`pinned ${path}: resuming its download (${have} of ${of} chunks here)`),
        onBytes: (n) => {
          a.bytes += n;
          this.stats.fetchedBytes += n;
        },
      });
      if (ok && current()) {
        this.done.set(k, f.id);
        this.failed.delete(k);
        if (a.bytes > 0) this.stats.fetched++;
      }
    } catch (e) {
      if (!current() || this.closed) return;
      const offline = unreachable(e);
      const before = this.failed.get(k);
      this.failed.set(k, { error: msgOf(e), offline });
      if (remote.version !== f.id)
        this.schedule(0); // changed on the server: the refresh fetches the new one
      else if (!offline && !before) this.d.log(`pinned ${path}: download failed (${msgOf(e)}); tried again later`);
    } finally {
      this.active.delete(k);
      // a newer version came while this one was fetched: its turn now
      const now = this.libs.get(repo)?.files.get(path);
      if (now && now.id !== f.id) this.enqueue(repo, path);
      this.pump();
    }
  }

  /** the server answers again: the downloads it stopped go on */
  retryNow(): void {
    for (const [k, f] of [...this.failed]) {
      if (!f.offline) continue;
      const [repo, path] = k.split('\u0000');
      this.enqueue(repo, path);
    }
  }

  // ---- refreshing ----

  /** a file under `path` changed through this mount (uploaded): the pin that holds it looks again soon */
  touched(repo: string, path: string): void {
    if (this.rootOf(repo, path) !== null) this.schedule(1000);
  }

  private schedule(ms = this.d.refreshMs ?? 30_000): void {
    if (this.closed || !this.d.disk) return;
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
    this.refreshing ??= (async () => {
      try {
        this.stats.refreshes++;
        await this.readOthers();
        this.recount();
        for (const lib of [...this.libs.values()])
          for (const [root, r] of [...lib.roots]) {
            if (this.closed) return;
            try {
              await this.refreshRoot(lib, root, r);
            } catch (e) {
              if (unreachable(e)) return; // offline: the next refresh after it is back
              this.d.log(`pinned ${root}: cannot check it for changes (${msgOf(e)})`);
            }
          }
        // failed downloads are tried again at each refresh
        for (const k of this.failed.keys()) {
          const [repo, path] = k.split('\u0000');
          this.enqueue(repo, path);
        }
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
        this.seedTree(repo, root, oid, tree.dirs, since);
      }
    } catch (e) {
      if (!isNotFound(e) && !(e instanceof VfsError && e.code === 'ENOENT')) throw e;
      // gone from the server (deleted or moved there or through the mount): nothing left to keep
      lib.roots.delete(root);
      for (const fp of [...lib.files.keys()])
        if (this.rootOf(repo, fp) === null) {
          lib.files.delete(fp);
          this.forgetFile(repo, fp);
        }
      if (lib.roots.size === 0) this.libs.delete(repo);
      this.recount();
      await this.store.save(lib);
      this.d.log(`pinned ${root} is no longer on the server; unpinned`);
      return;
    }
    this.apply(lib, root, files);
    r.oid = oid;
    this.recount();
    await this.store.save(lib);
  }

  /** the files under `root` are now `files`: drop the removed, take in the new and changed while they fit */
  private apply(lib: LibraryPins, root: string, files: Map<string, DirEntry>): void {
    const repo = lib.repo;
    for (const fp of [...lib.files.keys()]) {
      if (!isWithin(fp, root) || files.has(fp)) continue;
      lib.files.delete(fp);
      this.forgetFile(repo, fp);
    }
    const chunk = this.d.disk?.chunkBytes ?? 128 * 1024;
    const unfit = new Map<string, number>();
    let changed = 0;
    for (const [fp, e] of files) {
      const old = lib.files.get(fp);
      if (old && old.id === e.id) continue;
      const n = cacheName(e.id);
      const need = (e.size ?? 0) > 0 && !this.kept.has(n) ? wholeBytes(e.size ?? 0, chunk) : 0;
      const freed = old && old.size > 0 ? (this.kept.get(cacheName(old.id)) ?? 0) : 0;
      if (this.keptBytes + need - freed > this.limitBytes) {
        unfit.set(fp, e.size ?? 0);
        continue;
      }
      lib.files.set(fp, { id: e.id, size: e.size ?? 0 });
      // counted now for the files after it; the version it replaces is let go by the recount after the loop
      if (need > 0) {
        this.kept.set(n, need);
        this.keptBytes += need;
      }
      this.done.delete(key(repo, fp));
      this.enqueue(repo, fp);
      changed++;
    }
    const before = this.unfit.get(`${repo}\u0000${root}`)?.size ?? 0;
    if (unfit.size) this.unfit.set(`${repo}\u0000${root}`, unfit);
    else this.unfit.delete(`${repo}\u0000${root}`);
    if (unfit.size && unfit.size !== before)
      this.d.log(
        `pinned ${root}: ${unfit.size} new or changed file(s) do not fit in the disk cache (at most ${fmt(this.limitBytes)} may be pinned); they are not kept`,
      );
    if (changed) this.d.log(`pinned ${root}: ${changed} new or changed file(s) on the server; downloading`);
  }

  private seedTree(repo: string, root: string, oid: string | null, dirs: Map<string, DirEntry[]>, since: number) {
    const oids = new Map<string, string | null>([[root, oid]]);
    for (const [dir, list] of dirs)
      for (const e of list) if (e.type === 'dir') oids.set(joinPath(dir, e.name), e.id === ZERO_ID ? ZERO_ID : e.id);
    for (const [dir, list] of dirs) this.d.meta.seed(repo, dir, oids.get(dir) ?? null, list, since);
  }

  /** files still to come (queued or fetching) */
  get backlog(): number {
    return this.queue.length + this.active.size;
  }

  /** Resolves once nothing is queued or fetching (for tests). */
  async idle(): Promise<void> {
    while (this.backlog > 0) await new Promise((r) => setTimeout(r, 10));
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
