// The filesystem core: path-based operations as plain async functions, no
// FUSE, speaking errno names through VfsError. Vfs is the vfs's face: the one
// place each FUSE operation is dispatched, and what the CLI asks of a mount
// (drain, shutdown, stats, status, pins, locks, restore). It holds path
// lookups, attributes (getattr and its synchronous forms) and the handles'
// open/create/read/write/flush/release; every other operation is a module of
// its own (rename/, remove/, folders/, copies/, mtimes/, xattrs/, control/,
// links/ for --links),
// and the parts it is made of are built in components.ts. Longer than the
// other modules because it is the face: each method is a few lines of
// dispatch, and splitting it would spread the one table of operations.
import { constants as C } from 'node:fs';
import { type DirEntry, type Library, type SeafileApi } from '../client/types.js';
import { ApiError } from '../client/errors.js';
import { AttrShaper, type Attr, type StatFs } from './common/stat-attrs.js';
import { Connectivity, unreachable } from './common/connectivity.js';
import { restoreFileVersion, setFileLock, unlockByName } from './control/commands.js';
import type { DeleteGuard } from './remove/mass-delete-guard.js';
import { VfsError } from './errors.js';
import { hideOpenFile, removeFile, unlinkFile } from './remove/unlink.js';
import { OfficeLockFiles } from './locks/office-lock-files.js';
import { ensureEmpty, makeFolder, removeFolder } from './folders/mkdir-rmdir.js';
import { HandleTable } from './handles.js';
import { HiddenFolders } from './hidden/hidden-folders.js';
import { Libraries, writable } from './libraries/library-paths.js';
import { LibraryLocks } from './libraries/encrypted-unlock.js';
import { ListingStore } from './listings/listing-disk-store.js';
import { lockedByOther, refuseLocked, remoteFileOf, truncatePath } from './copies/editable-copy.js';
import { LocalMtimes } from './mtimes/kept-mtimes.js';
import { MetaCache, type Listing } from './listings/listing-cache.js';
import {
  drainAll,
  pendingOf,
  statusOf,
  uploadQueueOf,
  type Pending,
  type UploadQueueEntry,
} from './control/drain-and-status.js';
import { baseOf, checkChangeAt, checkName, parentOf } from './common/paths.js';
import { ChunkCache } from './read/chunk-cache/chunk-cache.js';
import { RemoteReader, type RemoteFile } from './read/reader.js';
import { Pins } from './pin/pins.js';
import { buildComponents, type VfsOptions, type VfsComponents } from './components.js';
import { Quota } from './write/quota.js';
import { renamePath } from './rename/rename-path.js';
import { setMtime, setMtimeNow } from './mtimes/set-mtime.js';
import type { UnlinkedOpen } from './remove/unlinked-open.js';
import { type FileState, WriteBack } from './write/write-back.js';
import { Xattrs } from './xattrs/xattrs.js';
import { Symlinks } from './links/symlinks.js';
import { isLinkFileName } from './links/link-names.js';

// The vfs's face: this file and errors.ts are all that the CLI and the FUSE adapter
// may import from src/vfs/ (an eslint rule keeps it so); what they need of its parts is
// handed on here.
export type { Attr, StatFs } from './common/stat-attrs.js';
export type { VfsOptions } from './components.js';
export type { Pending, UploadQueueEntry } from './control/drain-and-status.js';
export { DEFAULT_DELETE_GUARD, type DeleteGuardStatus } from './remove/mass-delete-guard.js';
export { WrongLibraryPassword, LibraryLocks } from './libraries/encrypted-unlock.js';
export type { MtimeStatus } from './mtimes/kept-mtimes.js';
export type { ServerRulesStatus } from './common/server-rules.js';
export type { LiveStatus } from './listings/live-changes.js';
export type { PinStatus } from './pin/status.js';
export { nfc } from './common/paths.js';
export { processAlive } from './common/process-alive.js';

const NEW_PATTERN = () => ({ next: 0, window: 0 });

export class Vfs {
  readonly listingCache: MetaCache;
  readonly reader: RemoteReader;
  readonly chunkCache: ChunkCache | null;
  readonly writeBack: WriteBack;
  readonly libraries: Libraries;
  private readonly handles = new HandleTable();
  private readonly attrs: AttrShaper;
  /** .seafile-history and .seafile-trash (src/vfs/hidden/) */
  private readonly hiddenDirs: HiddenFolders;
  /** statfs and ENOSPC at close (write/quota.ts) */
  private readonly quota: Quota;
  private readonly log: (msg: string) => void;
  /** files unlinked while open, renamed by libfuse to .fuse_hiddenNNN until their last close */
  private readonly unlinked: UnlinkedOpen;

  /** the API as the rest of the vfs uses it: failing at once while offline */
  readonly api: SeafileApi;
  readonly connectivity: Connectivity;
  readonly locks: LibraryLocks;
  /** extended attributes (getfattr/setfattr), xattrs/xattrs.ts */
  readonly xattrs: Xattrs;
  /** the times set here that the server does not keep (mtimes/kept-mtimes.ts) */
  readonly mtimes: LocalMtimes;
  /** the listings seen, kept on disk for a mount started offline (listings/listing-disk-store.ts) */
  readonly listings: ListingStore;
  /** files kept on this machine (seafs pin, user.seafile.pinned): src/vfs/pin/ */
  readonly pins: Pins;
  /** mass deletes held until confirmed (remove/mass-delete-guard.ts) */
  readonly deleteGuard: DeleteGuard;
  /** all of the above, as components.ts built them: what the operations' own modules take */
  private readonly parts: VfsComponents;

  private constructor(
    rawApi: SeafileApi,
    readonly opts: VfsOptions,
  ) {
    const p = (this.parts = buildComponents(rawApi, opts, {
      resolve: (x) => this.resolve(x),
      lookup: (repo, path) => this.lookup(repo, path),
      dir: (repo, dir) => this.dir(repo, dir),
      ensureEmpty: (repo, path) => ensureEmpty(this.parts, repo, path),
      removeFile: (repo, path, st, e) => removeFile(this.parts, repo, path, st, e),
      hide: (repo, src, hiddenPath) => hideOpenFile(this.parts, repo, src, hiddenPath),
      setLock: (x, on) => this.setLock(x, on),
    }));
    this.log = p.log;
    this.deleteGuard = p.deleteGuard;
    this.locks = p.locks;
    this.connectivity = p.connectivity;
    this.api = p.api;
    this.attrs = p.attrs;
    this.listings = p.listings;
    this.libraries = p.libraries;
    this.listingCache = p.listingCache;
    this.quota = p.quota;
    this.mtimes = p.mtimes;
    this.chunkCache = p.chunkCache;
    this.reader = p.reader;
    this.pins = p.pins;
    this.writeBack = p.writeBack;
    this.xattrs = p.xattrs;
    this.hiddenDirs = p.hiddenDirs;
    this.unlinked = p.unlinked;
    this.officeLocks =
      opts.officeLocks === false
        ? null
        : new OfficeLockFiles({
            api: p.api,
            // listed afresh: who holds a lock now is not in a cached listing
            entries: async (repo, dir) => (await this.listingCache.list(repo, dir, true)).entries.values(),
            log: p.log,
          });
    this.links = opts.links
      ? new Symlinks({
          resolve: (x) => this.resolve(x),
          hidden: async (loc) => (await this.hiddenDirs.at(loc)) !== null,
          getattr: (x) => this.getattr(x),
          unlink: (x) => unlinkFile(this.parts, x),
          freshListing: (repo, dir) => {
            const l = this.listingCache.peek(repo, dir);
            return l && this.listingCache.fresh(l) ? l : null;
          },
          lookup: (repo, path) => this.lookup(repo, path),
          state: (repo, path) => this.writeBack.get(repo, path),
          create: (x) => this.createFile(x),
          open: (x) => this.open(x, C.O_RDONLY),
          read: (x, fh, buf, len, pos) => this.read(x, fh, buf, len, pos),
          write: (x, fh, buf, len, pos) => this.write(x, fh, buf, len, pos),
          flush: (x, fh) => this.flush(x, fh),
          release: (x, fh) => this.release(x, fh),
        })
      : null;
  }

  /** symbolic links as NAME.rclonelink files (links/symlinks.ts); null: --links is off */
  private readonly links: Symlinks | null;

  /** with --links, the stored file (`p`.rclonelink) when `p` is a symbolic link; else `p` itself */
  private linkOrSelf(p: string): Promise<string> {
    return this.links ? this.links.storedOrSelf(p) : Promise.resolve(p);
  }

  /** Office programs' lock files lock their documents on the server (locks/office-lock-files.ts); null: off */
  private readonly officeLocks: OfficeLockFiles | null;

  /** tells the Office lock files of a namespace change at `p` (never fails the operation) */
  private async officeChange(p: string, how: 'created' | 'removed'): Promise<void> {
    if (!this.officeLocks) return;
    const loc = await this.resolve(p).catch(() => null);
    if (loc?.repo) await this.officeLocks[how](loc.repo, loc.path);
  }

  /** Resolve the library (when named), prepare the cache dir, take over orphaned dirty files. */
  static async create(api: SeafileApi, opts: VfsOptions): Promise<Vfs> {
    const v = new Vfs(api, opts);
    const lib = opts.library !== undefined ? await v.libraries.choose(opts.library) : null;
    if (lib?.encrypted && opts.libraryPassword) await v.locks.unlock(lib, await opts.libraryPassword(lib));
    await v.writeBack.init();
    await v.chunkCache?.init();
    await v.mtimes.init(v.api);
    await v.pins.init((repo) => !lib || repo === lib.id, !lib);
    const recovered = await v.writeBack.recover((repo) => (lib ? repo === lib.id : true));
    if (recovered) v.log(`recovered ${recovered} file(s) left by an earlier mount; uploading them`);
    v.followChanges(lib);
    return v;
  }

  /** `seafs unlock`: an encrypted library's password, in all-libraries mode (control/commands.ts) */
  unlockLibrary(name: string, password: string): Promise<Library> {
    return unlockByName(this.parts, name, password);
  }

  get library(): Library | null {
    return this.libraries.lib;
  }

  private resolve(p: string, change = false) {
    return this.libraries.resolve(p, change);
  }

  private repoOf(p: string, change = false) {
    return this.libraries.repoOf(p, change);
  }

  /** The listing of a folder, checking that every ancestor is a folder. */
  private async dir(repo: string, dir: string): Promise<Listing> {
    const cached = this.listingCache.peek(repo, dir);
    if (cached && this.listingCache.fresh(cached)) {
      this.listingCache.noteUse(repo, dir, cached);
      return cached;
    }
    if (dir !== '/') {
      const e = await this.lookup(repo, dir);
      if (!e) throw new VfsError('ENOENT', dir);
      if (e.type !== 'dir') throw new VfsError('ENOTDIR', dir);
    }
    return this.listingCache.list(repo, dir);
  }

  /** The remote entry at a path, from its parent's listing; null when absent. */
  private async lookup(repo: string, path: string): Promise<DirEntry | null> {
    if (path === '/') return { type: 'dir', name: '', id: '', mtime: 0 };
    const l = await this.dir(repo, parentOf(path));
    return l.entries.get(baseOf(path)) ?? null;
  }

  // ---- attributes ----

  /**
   * getattr answered at once from what the mount holds (a fresh listing of the parent, or a file being
   * written), or null when it needs to wait (then getattr). A tree walk asks this for every file, and the
   * promise chain of getattr cost as much as the binding's own work per call.
   */
  getattrNow(p: string): Attr | null {
    const loc = this.libraries.resolveNow(p);
    if (!loc || loc.path === '/') return null;
    if (this.links) {
      const link = this.links.now(loc.repo, loc.path);
      if (link === undefined) return null;
      if (link) return this.attrs.link(link.size, link.mtimeMs);
    }
    const s = this.writeBack.get(loc.repo, loc.path);
    if (s) return this.attrs.file(s.size, Math.floor(s.mtime / 1000) * 1000, loc.readOnly);
    if (this.unlinked.has(loc.repo, loc.path)) return null;
    const dir = parentOf(loc.path);
    const l = this.listingCache.peek(loc.repo, dir);
    if (!l || !this.listingCache.fresh(l)) return null;
    this.listingCache.noteUse(loc.repo, dir, l);
    const e = l.entries.get(baseOf(loc.path));
    if (!e) return null;
    if (e.type === 'dir') return this.attrs.dir(e.mtime, loc.readOnly);
    return this.attrs.file(e.size ?? 0, (e.mtime || 0) * 1000, loc.readOnly || lockedByOther(e));
  }

  /**
   * Whether the mount knows that nothing is at `p` without asking: a fresh
   * listing of the parent that lacks it, and no local file or hidden folder
   * there (the lookup of every new file's name, before its create).
   */
  absentNow(p: string): boolean {
    const loc = this.libraries.resolveNow(p);
    if (!loc || loc.path === '/' || loc.path.startsWith('/.seafile-')) return false;
    if (this.writeBack.get(loc.repo, loc.path) || this.unlinked.has(loc.repo, loc.path)) return false;
    if (this.links && this.links.now(loc.repo, loc.path) !== null) return false;
    const l = this.listingCache.peek(loc.repo, parentOf(loc.path));
    return !!l && this.listingCache.fresh(l) && !l.entries.has(baseOf(loc.path));
  }

  async getattr(p: string): Promise<Attr> {
    const loc = await this.resolve(p);
    if (loc.repo === null) return this.attrs.dir(0, true);
    if (loc.path === '/') {
      const lib = await this.libraries.byId(loc.repo);
      return this.attrs.dir(lib?.mtime ?? 0, loc.readOnly);
    }
    const hid = await this.hiddenDirs.at(loc);
    if (hid) return hid.attr;
    // a link shadows a file or folder of its name without the suffix, as in rclone's mount
    const link = await this.links?.at(loc.repo, loc.path);
    if (link) return this.attrs.link(link.size, link.mtimeMs);
    const s = this.writeBack.get(loc.repo, loc.path);
    // whole seconds, as the server keeps them: no change of mtime once the file is uploaded
    if (s) return this.attrs.file(s.size, Math.floor(s.mtime / 1000) * 1000, loc.readOnly);
    const gone = this.unlinked.get(loc.repo, loc.path);
    if (gone) return this.attrs.file(gone.size, gone.mtimeMs, loc.readOnly);
    const e = await this.lookup(loc.repo, loc.path);
    if (!e) throw new VfsError('ENOENT', p);
    if (e.type === 'dir') return this.attrs.dir(e.mtime, loc.readOnly);
    return this.attrs.file(e.size ?? 0, (e.mtime || 0) * 1000, loc.readOnly || lockedByOther(e));
  }

  async readdir(p: string): Promise<string[]> {
    const loc = await this.resolve(p);
    if (loc.repo === null) return [...(await this.libraries.byName()).keys()];
    if (loc.path === '/') await this.libraries.guardRoot(p);
    const hid = await this.hiddenDirs.at(loc);
    if (hid?.kind === 'dir') return hid.list();
    if (hid) throw new VfsError('ENOTDIR', p);
    const l = await this.dir(loc.repo, loc.path);
    this.parts.thumbnails?.listed(p, loc.repo, loc.path, l.entries);
    const names = new Set(l.entries.keys());
    for (const n of this.writeBack.childrenOf(loc.repo, loc.path)) names.add(n);
    return this.links ? this.links.shown(names, l) : [...names];
  }

  async access(p: string, mode: number): Promise<void> {
    const loc = await this.resolve(p);
    const attr = await this.getattr(p);
    if (mode & C.W_OK && loc.readOnly) throw new VfsError('EROFS');
    if (mode & C.W_OK) await this.hiddenDirs.refuse(loc);
    // a file locked by someone else shows without write bits
    if (mode & C.W_OK && (attr.mode & 0o222) === 0) throw new VfsError('EACCES', `${p} is locked`);
  }

  /** statfs: the account's quota (write/quota.ts; in a library shared with the account, that library) */
  async statfs(p: string): Promise<StatFs> {
    const loc = await this.resolve(p).catch(() => null);
    return this.quota.statfs(loc?.repo ?? null);
  }

  // ---- open files ----

  private remoteOf(repo: string, path: string, e: DirEntry): RemoteFile {
    return remoteFileOf(repo, path, e);
  }

  async open(p: string, flags: number): Promise<number> {
    const loc = await this.resolve(p);
    if (loc.repo === null || loc.path === '/') throw new VfsError('EISDIR');
    const repo = loc.repo;
    const path = loc.path;
    const acc = flags & 3;
    const trunc = (flags & C.O_TRUNC) !== 0;
    const wantWrite = acc !== C.O_RDONLY || trunc;
    const hid = await this.hiddenDirs.at(loc);
    if (hid) {
      if (wantWrite) throw new VfsError('EROFS', p);
      if (hid.kind === 'dir') throw new VfsError('EISDIR', p);
      return this.handles.add({ kind: 'remote', repo, path, remote: hid.remote, pattern: NEW_PATTERN() });
    }
    if (wantWrite) {
      writable(loc);
      checkChangeAt(path);
    }
    let s = this.writeBack.get(repo, path);
    if (!wantWrite) {
      if (s) {
        s.opened(false);
        return this.handles.add({ kind: 'local', repo, path, state: s, write: false });
      }
      const e = await this.lookup(repo, path);
      if (!e) throw new VfsError('ENOENT', p);
      if (e.type === 'dir') throw new VfsError('EISDIR', p);
      return this.handles.add({
        kind: 'remote',
        repo,
        path,
        remote: this.remoteOf(repo, path, e),
        pattern: NEW_PATTERN(),
      });
    }
    if (!s) {
      const e = await this.lookup(repo, path);
      if (!e) throw new VfsError('ENOENT', p);
      if (e.type === 'dir') throw new VfsError('EISDIR', p);
      refuseLocked(p, e);
      const remote = this.remoteOf(repo, path, e);
      s = await this.writeBack.openExisting(
        repo,
        path,
        { size: remote.size, mtimeMs: e.mtime * 1000, id: e.id },
        trunc,
        (dest) => this.reader.downloadWhole(remote, dest),
      );
    }
    if (trunc && s.size > 0) await this.writeBack.truncate(s, 0);
    s.opened(acc !== C.O_RDONLY);
    return this.handles.add({ kind: 'local', repo, path, state: s, write: acc !== C.O_RDONLY });
  }

  async create(p: string, _mode: number): Promise<number> {
    this.links?.refuseName(p);
    return this.createFile(p);
  }

  /** create, for any name (a link's stored file too) */
  private async createFile(p: string): Promise<number> {
    const loc = await this.repoOf(p, true);
    writable(loc);
    if (loc.path === '/') throw new VfsError('EISDIR');
    await this.hiddenDirs.refuse(loc);
    checkName(baseOf(loc.path));
    this.parts.rules.checkName(baseOf(loc.path));
    const repo = loc.repo;
    let s = this.writeBack.get(repo, loc.path);
    if (!s) {
      const e = await this.lookup(repo, loc.path);
      if (e?.type === 'dir') throw new VfsError('EISDIR', p);
      if (e) return this.open(p, C.O_RDWR);
      s = await this.writeBack.createNew(repo, loc.path);
    }
    s.opened(true);
    void this.officeChange(p, 'created');
    return this.handles.add({ kind: 'local', repo, path: loc.path, state: s, write: true });
  }

  /**
   * create, done at once for a new name that a fresh listing lacks, in a
   * writable library, when the file can start in memory: the new handle,
   * or null when create must run (it decides everything else).
   */
  createNow(p: string): number | null {
    const loc = this.libraries.resolveNow(p);
    if (!loc || loc.readOnly || !this.absentNow(p)) return null;
    if (this.links && isLinkFileName(baseOf(loc.path))) return null;
    try {
      checkName(baseOf(loc.path));
      this.parts.rules.checkName(baseOf(loc.path));
      checkChangeAt(loc.path);
    } catch {
      return null;
    }
    const s = this.writeBack.createInMemory(loc.repo, loc.path);
    if (!s) return null;
    s.opened(true);
    if (this.officeLocks) void this.officeLocks.created(loc.repo, loc.path);
    return this.handles.add({ kind: 'local', repo: loc.repo, path: loc.path, state: s, write: true });
  }

  /** Synchronous (a number) when the data is in memory, a promise otherwise. */
  read(_p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number> {
    const h = this.handles.get(fh);
    if (h.kind === 'local') return this.writeBack.read(h.state, buf, len, pos);
    // a clean file opened for reading that someone has since written to: read the local data
    const s = this.writeBack.get(h.repo, h.path);
    if (s && !s.deleted) return this.writeBack.read(s, buf, len, pos);
    return this.reader.read(h.remote, buf, len, pos, h.pattern);
  }

  /** the local data a handle may write to (EBADF for a read-only handle) */
  private writeState(fh: number): FileState {
    const h = this.handles.get(fh);
    if (h.kind !== 'local' || !h.write) throw new VfsError('EBADF');
    return h.state;
  }

  async write(p: string, fh: number, buf: Buffer, len: number, pos: number): Promise<number> {
    return this.writeNow(p, fh, buf, len, pos);
  }

  /** write, synchronous (a number) when the data stays in memory; a failure may be thrown */
  writeNow(_p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number> {
    return this.writeBack.write(this.writeState(fh), buf, len, pos);
  }

  /** truncate(2) of a path (copies/editable-copy.ts) */
  truncate(p: string, size: number): Promise<void> {
    return truncatePath(this.parts, p, size);
  }

  async ftruncate(_p: string, fh: number, size: number): Promise<void> {
    await this.writeBack.truncate(this.writeState(fh), size);
  }

  /** close(): record the dirty file in the journal so it survives a crash; report a failed upload. */
  async flush(_p: string, fh: number): Promise<void> {
    const h = this.handles.get(fh);
    if (h.kind !== 'local' || !h.write) return;
    const s = h.state;
    await this.writeBack.persist(s);
    if (s.dirty && !s.lastError) await this.quota.checkRoom(s);
    // offline: the data waits in the journal, nothing to report
    if (s.lastError && s.dirty && !unreachable(s.lastError)) {
      const e = s.lastError;
      throw new VfsError(e instanceof ApiError && e.kind === 'quota' ? 'ENOSPC' : 'EIO', 'earlier upload failed', {
        cause: e,
      });
    }
  }

  /**
   * flush without waiting, for the common close of a small file in memory:
   * true when it is done (journaled, fits the quota as last heard, no failure
   * to report); false: nothing was decided, flush must run.
   */
  flushNow(_p: string, fh: number): boolean {
    const h = this.handles.peek(fh);
    if (!h) return false;
    if (h.kind !== 'local' || !h.write) return true;
    const s = h.state;
    if (!this.writeBack.persistNow(s) || s.lastError) return false;
    if (!s.dirty) return true;
    return this.quota.fitsNow(s) === true;
  }

  async fsync(_p: string, fh: number): Promise<void> {
    const h = this.handles.get(fh);
    if (h.kind === 'local' && !h.state.deleted) await this.writeBack.sync(h.state);
  }

  /** synchronous: nothing in it waits */
  release(_p: string, fh: number): void {
    const h = this.handles.take(fh);
    if (!h) return;
    if (h.kind === 'remote') {
      this.reader.closePattern(h.remote, h.pattern);
      return;
    }
    const s = h.state;
    s.closed(h.write);
    if (s.dirty && s.writers === 0 && !s.deleted) this.writeBack.scheduleAfterClose(s);
    else this.writeBack.maybeDispose(s);
  }

  /** utimens of a file with local data, done at once; false: utimens must run (mtimes/set-mtime.ts) */
  utimensNow(p: string, mtimeMs: number): boolean {
    // a path that may be a link waits: lutimes sets its stored file's time
    if (this.links) {
      const loc = this.libraries.resolveNow(p);
      if (!loc || this.links.now(loc.repo, loc.path) !== null) return false;
    }
    return setMtimeNow(this.parts, p, mtimeMs);
  }

  /** a new modification time, uploaded with the file's content (mtimes/set-mtime.ts) */
  async utimens(p: string, mtimeMs: number): Promise<void> {
    return setMtime(this.parts, await this.linkOrSelf(p), mtimeMs);
  }

  /**
   * The server keeps no modes or owners, and the mount shows fixed ones
   * (--uid, --gid, --umask). chmod and chown succeed and change nothing, as
   * in rclone mount, so that cp -p, rsync -a and tar x (which set modes and,
   * as root, owners on every file) work; the README says so. Only a path that
   * does not exist fails.
   */
  async chmod(p: string, _mode: number): Promise<void> {
    await this.getattr(p);
    await this.hiddenDirs.refuse(await this.resolve(p));
  }

  async chown(p: string, _uid: number, _gid: number): Promise<void> {
    await this.getattr(p);
    await this.hiddenDirs.refuse(await this.resolve(p));
  }

  // ---- namespace changes ----

  /** unlink(2) (remove/unlink.ts) */
  async unlink(p: string): Promise<void> {
    await unlinkFile(this.parts, await this.linkOrSelf(p));
    void this.officeChange(p, 'removed');
  }

  /** mkdir(2), rmdir(2): folders/mkdir-rmdir.ts */
  async mkdir(p: string, _mode: number): Promise<void> {
    this.links?.refuseName(p);
    return makeFolder(this.parts, p);
  }

  rmdir(p: string): Promise<void> {
    return removeFolder(this.parts, p);
  }

  /** rename(2): rename/rename-path.ts, moves in rename/renamer.ts */
  async rename(src: string, dst: string): Promise<void> {
    const [from, to] = this.links ? await this.links.renamePaths(src, dst) : [src, dst];
    await renamePath(this.parts, from, to);
    void this.officeChange(src, 'removed').then(() => this.officeChange(dst, 'created'));
  }

  /** readlink(2) (--links): the target of the link at `p`; EINVAL for anything else */
  async readlink(p: string): Promise<string> {
    if (this.links) return this.links.readlink(p);
    await this.getattr(p);
    throw new VfsError('EINVAL', `${p} is not a symbolic link`);
  }

  /** symlink(2) (--links): a link at `p` to `target`, kept as the file `p`.rclonelink (links/symlinks.ts) */
  async symlink(target: string, p: string): Promise<void> {
    if (!this.links) throw new VfsError('ENOSYS', 'symbolic links need --links');
    return this.links.symlink(target, p);
  }

  // ---- lifecycle ----

  /** Upload everything pending; returns the files that could not be uploaded (control/drain-and-status.ts). */
  drain(onStatus: (pending: Pending[]) => void = () => {}, timeoutMs = 0) {
    return drainAll(this.writeBack, onStatus, timeoutMs);
  }

  pendingUploads(): Pending[] {
    return pendingOf(this.writeBack);
  }

  /** What an unmount that stopped waiting leaves in the journal: files, and folders made here (size 0). */
  leftBehind(): Pending[] {
    return [...this.pendingUploads(), ...this.writeBack.folders.pending().map((f) => ({ path: f.path, size: 0 }))];
  }

  /** The state of the mount's engines, for the control socket's status answer. */
  status() {
    return statusOf(this.parts);
  }

  /** Each file not yet on the server, for `seafs status`. */
  uploadQueue(): UploadQueueEntry[] {
    return uploadQueueOf(this.writeBack);
  }

  /** The few figures an unmount watches while it waits for uploads. */
  stats() {
    return {
      uploads: this.writeBack.stats.uploads,
      uploadedBytes: this.writeBack.stats.uploadedBytes,
      failures: this.writeBack.stats.failures,
      online: this.connectivity.online,
      diskCache: this.chunkCache !== null,
    };
  }

  /** Pending uploads go now (a new login was taken). */
  retryUploads(): void {
    this.writeBack.retryNow();
  }

  /** The library with this id, as the mount names it. */
  libraryById(repo: string): Promise<Library | undefined> {
    return this.libraries.byId(repo);
  }

  /** `seafs confirm-delete [--cancel]`: the held mass delete goes on, or ends; whether one was held. */
  answerDeleteGuard(cancel: boolean): boolean {
    return cancel ? this.deleteGuard.cancel() : this.deleteGuard.confirm();
  }

  /** `seafs pin PATH` (src/vfs/pin/) */
  pin(p: string) {
    return this.pins.pin(p);
  }

  /** `seafs unpin PATH`: the files let go of */
  unpin(p: string) {
    return this.pins.unpin(p);
  }

  /** Extended attributes (xattrs/xattrs.ts), for the FUSE adapter. */
  async getxattr(p: string, name: string) {
    return this.xattrs.get(await this.linkOrSelf(p), name);
  }

  async listxattr(p: string) {
    return this.xattrs.list(await this.linkOrSelf(p));
  }

  async setxattr(p: string, name: string, value: Buffer) {
    return this.xattrs.set(await this.linkOrSelf(p), name, value);
  }

  async removexattr(p: string, name: string) {
    return this.xattrs.remove(await this.linkOrSelf(p), name);
  }

  /**
   * The unmount's last step before close(), once the uploads are drained:
   * pinned files stop coming (the next mount goes on with them), and the disk
   * cache's last writes and their markers land, so a next mount reads them.
   */
  async shutdown(): Promise<void> {
    this.parts.thumbnails?.stop();
    this.pins.close();
    await this.reader.closeDisk();
  }

  /** `seafs lock` / `seafs unlock-file` (control/commands.ts) */
  setLock(p: string, on: boolean): Promise<void> {
    return setFileLock(this.parts, p, on);
  }

  /** `seafs restore FILE --at TIME` (control/commands.ts) */
  restoreVersion(p: string, atMs: number) {
    return restoreFileVersion(this.parts, p, atMs);
  }

  /** Drop the downloaded data kept on disk (never data waiting for upload); returns the bytes freed. */
  clearCache(): number {
    return this.chunkCache?.clear() ?? 0;
  }

  /** the mounted library's changes, or every library's the account has at the start */
  private followChanges(lib: Library | null): void {
    if (!this.parts.live.available) return;
    if (lib) return this.parts.live.start([lib.id]);
    // asked directly: the mount's own list of libraries keeps its cache time from its first real use
    this.parts.api.listLibraries().then(
      (all) => this.parts.live.start([...new Set(all.map((l) => l.id))]),
      () => this.log('notifications: the library list is unavailable; changes made elsewhere are polled'),
    );
  }

  close(): void {
    this.parts.thumbnails?.stop();
    this.parts.live.close();
    this.pins.close();
    this.connectivity.close();
    this.listings.close();
    this.writeBack.close();
    this.mtimes.close();
    void this.reader.closeDisk();
  }
}
