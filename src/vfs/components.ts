// The parts the vfs is made of (listing cache, reader, write-back, pins,
// xattrs...) and how they call one another: built once per mount. The vfs
// (vfs.ts) dispatches the FUSE operations over them; the few of its own
// methods the parts need (path resolution, lookups) come in as `host`.
import { join } from 'node:path';
import type { DirEntry, Library, SeafileApi } from '../client/types.js';
import { AttrShaper } from './common/stat-attrs.js';
import { Connectivity } from './common/connectivity.js';
import { DEFAULT_DELETE_GUARD, DeleteGuard, type DeleteGuardOptions } from './remove/mass-delete-guard.js';
import { locksSupported } from './common/file-locks.js';
import { HiddenFolders } from './hidden/hidden-folders.js';
import { Libraries, type Loc } from './libraries/library-paths.js';
import { LibraryLocks, watchLocked } from './libraries/encrypted-unlock.js';
import { ListingStore } from './listings/listing-disk-store.js';
import { LocalMtimes } from './mtimes/kept-mtimes.js';
import { ServerRules } from './common/server-rules.js';
import { MetaCache, type Listing } from './listings/listing-cache.js';
import { baseOf, parentOf } from './common/paths.js';
import { ChunkCache } from './read/chunk-cache/chunk-cache.js';
import { LiveChanges, type LiveChangesOptions } from './listings/live-changes.js';
import { RemoteReader, type ReaderOptions } from './read/reader.js';
import { Pins } from './pin/pins.js';
import { Quota } from './write/quota.js';
import { Renamer } from './rename/renamer.js';
import { UnlinkedOpen } from './remove/unlinked-open.js';
import { Journal } from './write/journal.js';
import { type FileState, WriteBack, type WriteBackOptions } from './write/write-back.js';
import { Xattrs } from './xattrs/xattrs.js';
import { ThumbnailFiller, type ThumbnailOptions } from './thumbnails/thumbnail-filler.js';

export interface VfsOptions {
  /** a library name or id; absent: the root lists every library */
  library?: string;
  readOnly?: boolean;
  /** cache dir of this account (journal, temp files) */
  cacheDir: string;
  dirCacheTimeMs?: number;
  /** follow changes the server's notification server pushes (default on where the client offers it) */
  liveChanges?: LiveChangesOptions | false;
  /** lock a document on the server while an Office program's lock file for it exists (default on) */
  officeLocks?: boolean;
  /** symbolic links, kept on the server as NAME.rclonelink files as rclone keeps them (links/; default off) */
  links?: boolean;
  /** owner and group shown for every entry (default: the mounting user's) */
  uid?: number;
  gid?: number;
  /** permission bits taken away from 777 (folders) and 666 (files); default 022 */
  umask?: number;
  reader?: ReaderOptions;
  writeBack?: WriteBackOptions;
  /**
   * the password of the named library when it is encrypted (asked only then);
   * all-libraries mode: what the log tells a user to run to unlock one
   */
  libraryPassword?: (lib: Library) => Promise<string>;
  unlockHint?: (lib: Library) => string;
  /** fsync the journal entries (default true) */
  durableJournal?: boolean;
  /** bytes of downloaded data kept on disk (default 4 GiB; 0: none) */
  diskCacheBytes?: number;
  /** bytes of chunk writes allowed to wait for the disk before it skips some (default 16 MiB; tests lower it) */
  diskQueueBytes?: number;
  /** sub-folder listings fetched ahead, at most this many at once (default 16; 0: none) */
  prefetchDirs?: number;
  /** while offline, the server is asked again after this long, doubling up to probeMaxMs (defaults 1 s, 30 s) */
  probeMinMs?: number;
  probeMaxMs?: number;
  log?: (msg: string) => void;
  /** the server's address (user.seafile.url) */
  serverUrl?: string;
  /** how often pinned folders are asked for changes (default 30 s; src/vfs/pin/) */
  pinRefreshMs?: number;
  /** the mass-delete guard (remove/mass-delete-guard.ts); default 1000 files within 60 s */
  deleteGuard?: Omit<DeleteGuardOptions, 'log'>;
  /** fill the freedesktop thumbnail cache with the server's thumbnails of listed pictures (thumbnails/); absent: off */
  thumbnails?: ThumbnailOptions;
}

/** What the parts ask of the vfs itself. */
export interface VfsHost {
  resolve(p: string): Promise<Loc>;
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  dir(repo: string, dir: string): Promise<Listing>;
  ensureEmpty(repo: string, path: string): Promise<void>;
  removeFile(repo: string, path: string, s: FileState | undefined, e: DirEntry | null): Promise<void>;
  hide(repo: string, src: string, hiddenPath: string): Promise<void>;
  setLock(p: string, on: boolean): Promise<void>;
}

export interface VfsComponents {
  log: (msg: string) => void;
  deleteGuard: DeleteGuard;
  locks: LibraryLocks;
  connectivity: Connectivity;
  /** the API as the rest of the vfs uses it: failing at once while offline */
  api: SeafileApi;
  attrs: AttrShaper;
  listings: ListingStore;
  libraries: Libraries;
  listingCache: MetaCache;
  /** changes pushed by the server (listings/live-changes.ts) */
  live: LiveChanges;
  quota: Quota;
  mtimes: LocalMtimes;
  /** the server's version and the account's id, and what they change (common/server-rules.ts) */
  rules: ServerRules;
  chunkCache: ChunkCache | null;
  reader: RemoteReader;
  pins: Pins;
  writeBack: WriteBack;
  xattrs: Xattrs;
  renamer: Renamer;
  hiddenDirs: HiddenFolders;
  /** files unlinked while open (remove/unlinked-open.ts) */
  unlinked: UnlinkedOpen;
  /** the thumbnails of listed pictures (thumbnails/thumbnail-filler.ts); null: off */
  thumbnails: ThumbnailFiller | null;
  /** the vfs's own methods, for the operations' modules (copies/editable-copy.ts, ...) */
  host: VfsHost;
}

export function buildComponents(rawApi: SeafileApi, opts: VfsOptions, host: VfsHost): VfsComponents {
  // filled in order; the callbacks read it when they run, so a part may call one made after it
  const all = {} as VfsComponents;
  all.host = host;
  all.unlinked = new UnlinkedOpen();
  all.log = opts.log ?? (() => {});
  all.deleteGuard = new DeleteGuard({ max: DEFAULT_DELETE_GUARD, ...opts.deleteGuard, log: all.log });
  all.locks = new LibraryLocks(rawApi, all.log, opts.library === undefined ? (opts.unlockHint ?? null) : null);
  const watched = watchLocked(
    rawApi,
    (repo, e) =>
      void all.libraries.byId(repo).then(
        (lib) => all.locks.noteFailure(lib, e),
        () => {},
      ),
  );
  all.connectivity = new Connectivity(watched, {
    log: all.log,
    probeMinMs: opts.probeMinMs,
    probeMaxMs: opts.probeMaxMs,
  });
  all.api = all.connectivity.wrap(watched);
  const api = all.api;
  const dirTtl = opts.dirCacheTimeMs ?? 10_000;
  all.attrs = new AttrShaper(
    opts.uid ?? process.getuid?.() ?? 0,
    opts.gid ?? process.getgid?.() ?? 0,
    opts.umask ?? 0o022,
  );
  // listings and libraries seen, kept on disk: a mount started offline shows them (listings/listing-disk-store.ts)
  all.listings = new ListingStore(join(opts.cacheDir, 'listings'), all.log);
  all.libraries = new Libraries(api, dirTtl, !!opts.readOnly, (l) => all.locks.requireOpen(l), all.listings);
  all.listingCache = new MetaCache(api, dirTtl, 20_000, opts.prefetchDirs ?? 16);
  all.listingCache.setStore(all.listings);
  // the feed keeps its own connection: the raw client, not the offline-aware one
  all.live = new LiveChanges(
    opts.liveChanges === false ? {} : rawApi,
    all.listingCache,
    all.log,
    dirTtl,
    opts.liveChanges || {},
    (repo) => all.pins.changedOnServer(repo),
    () => all.libraries.reread(),
  );
  all.quota = new Quota(api, all.libraries, (s) => {
    const where = s.remotePath;
    return where ? (all.listingCache.peek(s.repo, parentOf(where))?.entries.get(baseOf(where))?.size ?? 0) : 0;
  });
  all.rules = new ServerRules();
  all.rules.learn(api);
  all.mtimes = new LocalMtimes(join(opts.cacheDir, 'mtimes'), { log: all.log, durable: opts.durableJournal });
  all.listingCache.setAdjust((repo, dir, entries, at) => all.mtimes.adjust(repo, dir, entries, at));
  const chunk = opts.reader?.chunkSize ?? 128 * 1024;
  const diskBytes = opts.diskCacheBytes ?? 4 * 1024 ** 3;
  all.chunkCache =
    diskBytes > 0 ? new ChunkCache(join(opts.cacheDir, 'blocks'), chunk, diskBytes, opts.diskQueueBytes) : null;
  all.reader = new RemoteReader(
    api,
    { ...opts.reader, chunkSize: chunk },
    all.chunkCache,
    (f) => {
      all.log(`${f.path} changed on the server; refreshing its folder`);
      all.listingCache.invalidate(f.repo, parentOf(f.path));
    },
    async (repo) => (await all.libraries.byId(repo))?.encrypted === false,
  );
  // Seafile 12.0+: files of unencrypted libraries are read through the file server's direct URL
  all.reader.useDirectUrls(async (f) => {
    if (!all.rules.directDownload || !rawApi.directDownloadUrl) return null;
    if ((await all.libraries.byId(f.repo))?.encrypted !== false) return null;
    return rawApi.directDownloadUrl(f.repo, f.path);
  }, all.log);
  all.pins = new Pins({
    api,
    disk: all.chunkCache,
    reuse: all.reader.reuse,
    cacheDir: opts.cacheDir,
    log: all.log,
    meta: all.listingCache,
    maxBytes: diskBytes,
    resolve: (p) => host.resolve(p),
    lookup: (r, p) => host.lookup(r, p),
    refreshMs: opts.pinRefreshMs,
    durable: opts.durableJournal,
  });
  const journal = new Journal(join(opts.cacheDir, 'journal'), opts.durableJournal ?? true);
  all.writeBack = new WriteBack(
    api,
    journal,
    join(opts.cacheDir, 'dirty'),
    {
      log: all.log,
      onUploaded: (s, res, repo, path) => {
        all.hiddenDirs.changed(repo);
        if (s.deleted) return;
        all.pins.touched(repo, path);
        all.mtimes.uploaded(repo, path, res.id, res.setTime ?? null);
        all.listingCache.upsert(repo, parentOf(path), {
          type: 'file',
          name: baseOf(path),
          id: res.id,
          size: res.size,
          mtime: Math.floor(s.mtime / 1000),
        });
      },
      offline: () => !all.connectivity.online,
      // the server's version keeps the name: list the folder afresh to show it (and the copy)
      onConflict: (repo, path, copy) => {
        all.xattrs.noteConflict(repo, path, copy);
        all.listingCache.invalidate(repo, parentOf(path));
      },
      folderCreated: (repo) => all.hiddenDirs.changed(repo),
      folderRecreated: (repo, dir) => {
        all.listingCache.invalidate(repo, parentOf(dir));
        all.listingCache.invalidateTree(repo, dir);
      },
    },
    // the temp files of files being written count against --cache-max-size too; the read cache gives way to them
    { cacheMaxBytes: all.chunkCache ? diskBytes : 0, readCache: all.chunkCache ?? undefined, ...opts.writeBack },
  );
  if (all.chunkCache) {
    const room = all.writeBack.room;
    all.chunkCache.setReserved(() => room.heldBytes());
  }
  all.listingCache.setLocalFolders(all.writeBack.folders);
  all.xattrs = new Xattrs({
    api,
    resolve: (p) => host.resolve(p),
    lookup: (repo, path) => host.lookup(repo, path),
    folderChanged: (repo, path) => all.listingCache.changedSinceParentListed(repo, path),
    relist: async (repo, dir) => void (await all.listingCache.list(repo, dir, true)),
    library: (repo) => all.libraries.byId(repo),
    state: (repo, path) => all.writeBack.get(repo, path),
    under: (repo, dir) => all.writeBack.under(repo, dir),
    streamed: (s) => all.writeBack.streamedBytes(s),
    setLock: (p, on) => host.setLock(p, on),
    locksSupported: () => locksSupported(api),
    serverUrl: opts.serverUrl,
    pins: all.pins,
  });
  // back online: what waited for the server goes now
  all.connectivity.onBack = () => {
    all.writeBack.retryNow();
    all.pins.retryNow();
  };
  all.renamer = new Renamer({
    api,
    meta: all.listingCache,
    wb: all.writeBack,
    times: all.mtimes,
    checkName: (name) => all.rules.checkName(name),
    resolve: (p, change) => all.libraries.resolve(p, change),
    lookup: (repo, path) => host.lookup(repo, path),
    dir: (repo, dir) => host.dir(repo, dir),
    ensureEmpty: (repo, path) => host.ensureEmpty(repo, path),
    removeFile: (repo, path, st, e) => host.removeFile(repo, path, st, e),
    hide: (repo, src, hiddenPath) => host.hide(repo, src, hiddenPath),
    log: all.log,
  });
  const thumbnail = api.thumbnail?.bind(api);
  all.thumbnails =
    opts.thumbnails && thumbnail
      ? new ThumbnailFiller(opts.thumbnails, {
          thumbnail,
          encrypted: async (repo) => (await all.libraries.byId(repo))?.encrypted !== false,
          local: (repo, path) => !!all.writeBack.get(repo, path),
          log: all.log,
        })
      : null;
  all.hiddenDirs = new HiddenFolders({
    api,
    attrs: all.attrs,
    ttlMs: dirTtl,
    log: all.log,
    resolve: (p) => host.resolve(p),
    lookup: (repo, path) => host.lookup(repo, path),
    names: async (repo, dir) => [...(await host.dir(repo, dir)).entries.keys()],
    invalidate: (repo, dir, tree) =>
      tree ? all.listingCache.invalidateTree(repo, dir) : all.listingCache.invalidate(repo, dir),
    rename: (src, dst) => all.renamer.rename(src, dst),
  });
  return all;
}
