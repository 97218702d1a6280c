// The filesystem core: path-based operations as plain async functions, no
// FUSE, speaking errno names through VfsError. Vfs is the vfs's face: the one
// place each FUSE operation is dispatched, and what the CLI asks of a mount
// (drain, shutdown, stats, status, pins, locks, restore). Each method is a few
// lines of dispatch to the module of its operation: attributes/ (lookups,
// getattr, readdir), open/ (open, create, and the handles' I/O), rename/,
// remove/, folders/, copies/, mtimes/, xattrs/, control/, links/ (--links).
// The parts it is made of are built in components.ts, and what its own
// operations take (core.ts) in face-features.ts.
import { type DirEntry, type Library, type SeafileApi } from '../client/types.js';
import type { Attr, StatFs } from './common/stat-attrs.js';
import { Connectivity } from './common/connectivity.js';
import { restoreFileVersion, setFileLock, unlockByName } from './control/commands.js';
import type { DeleteGuard } from './remove/mass-delete-guard.js';
import { VfsError } from './errors.js';
import { hideOpenFile, removeFile, unlinkFile } from './remove/unlink.js';
import { ensureEmpty, makeFolder, removeFolder } from './folders/mkdir-rmdir.js';
import { folderListing, lookupEntry } from './attributes/lookups.js';
import { absentNow, access, getattr, getattrNow, readdir } from './attributes/path-attrs.js';
import { officeChange, type VfsCore } from './core.js';
import { buildCore } from './face-features.js';
import { startMount } from './control/mount-start.js';
import { createFile, createNow, open } from './open/open-create.js';
import { flush, flushNow, fsync, readAt, release, writeState } from './open/handle-io.js';
import { HandleTable } from './handles.js';
import { HiddenFolders } from './hidden/hidden-folders.js';
import { Libraries } from './libraries/library-paths.js';
import { LibraryLocks } from './libraries/encrypted-unlock.js';
import { ListingStore } from './listings/listing-disk-store.js';
import { truncatePath } from './copies/editable-copy.js';
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
import { ChunkCache } from './read/chunk-cache/chunk-cache.js';
import { RemoteReader } from './read/reader.js';
import { Pins } from './pin/pins.js';
import { buildComponents, type VfsOptions, type VfsComponents } from './components.js';
import { Quota } from './write/quota.js';
import { renamePath } from './rename/rename-path.js';
import { setMtime, setMtimeNow } from './mtimes/set-mtime.js';
import { WriteBack } from './write/write-back.js';
import { Xattrs } from './xattrs/xattrs.js';
import type { Symlinks } from './links/symlinks.js';

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

export class Vfs {
  readonly listingCache: MetaCache;
  readonly reader: RemoteReader;
  readonly chunkCache: ChunkCache | null;
  readonly writeBack: WriteBack;
  readonly libraries: Libraries;
  private readonly handles = new HandleTable();
  /** .seafile-history and .seafile-trash (src/vfs/hidden/) */
  private readonly hiddenDirs: HiddenFolders;
  /** statfs and ENOSPC at close (write/quota.ts) */
  private readonly quota: Quota;

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
  /** what the operations of attributes/ and open/ take */
  private readonly core: VfsCore;

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
    this.deleteGuard = p.deleteGuard;
    this.locks = p.locks;
    this.connectivity = p.connectivity;
    this.api = p.api;
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
    this.core = buildCore(p, this.handles, opts);
    this.links = this.core.links;
  }

  /** symbolic links as NAME.rclonelink files (links/symlinks.ts); null: --links is off */
  private readonly links: Symlinks | null;

  /** with --links, the stored file (`p`.rclonelink) when `p` is a symbolic link; else `p` itself */
  private linkOrSelf(p: string): Promise<string> {
    return this.links ? this.links.storedOrSelf(p) : Promise.resolve(p);
  }

  /** Resolve the library (when named), prepare the cache dir, take over orphaned dirty files. */
  static async create(api: SeafileApi, opts: VfsOptions): Promise<Vfs> {
    const v = new Vfs(api, opts);
    await startMount(v.parts, opts);
    return v;
  }

  /** `seafs unlock`: an encrypted library's password, in all-libraries mode (control/commands.ts) */
  unlockLibrary(name: string, password: string): Promise<Library> {
    return unlockByName(this.parts, name, password);
  }

  get library(): Library | null {
    return this.libraries.lib;
  }

  private resolve(p: string) {
    return this.libraries.resolve(p);
  }

  /** The listing of a folder, checking that every ancestor is a folder (attributes/lookups.ts). */
  private dir(repo: string, dir: string): Promise<Listing> {
    return folderListing(this.parts, repo, dir);
  }

  /** The remote entry at a path, from its parent's listing; null when absent. */
  private lookup(repo: string, path: string): Promise<DirEntry | null> {
    return lookupEntry(this.parts, repo, path);
  }

  // ---- attributes (attributes/path-attrs.ts) ----

  /** getattr answered at once from what the mount holds, or null when it needs to wait (then getattr) */
  getattrNow(p: string): Attr | null {
    return getattrNow(this.core, p);
  }

  /** Whether the mount knows that nothing is at `p` without asking (a fresh listing of the parent lacks it). */
  absentNow(p: string): boolean {
    return absentNow(this.core, p);
  }

  getattr(p: string): Promise<Attr> {
    return getattr(this.core, p);
  }

  readdir(p: string): Promise<string[]> {
    return readdir(this.core, p);
  }

  access(p: string, mode: number): Promise<void> {
    return access(this.core, p, mode);
  }

  /** statfs: the account's quota (write/quota.ts; in a library shared with the account, that library) */
  async statfs(p: string): Promise<StatFs> {
    const loc = await this.resolve(p).catch(() => null);
    return this.quota.statfs(loc?.repo ?? null);
  }

  // ---- open files (open/open-create.ts, open/handle-io.ts) ----

  open(p: string, flags: number): Promise<number> {
    return open(this.core, p, flags);
  }

  async create(p: string, _mode: number): Promise<number> {
    this.links?.refuseName(p);
    return createFile(this.core, p);
  }

  /** create done at once for a new name a fresh listing lacks; null when create must run */
  createNow(p: string): number | null {
    return createNow(this.core, p);
  }

  /** Synchronous (a number) when the data is in memory, a promise otherwise. */
  read(_p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number> {
    return readAt(this.core, fh, buf, len, pos);
  }

  async write(p: string, fh: number, buf: Buffer, len: number, pos: number): Promise<number> {
    return this.writeNow(p, fh, buf, len, pos);
  }

  /** write, synchronous (a number) when the data stays in memory; a failure may be thrown */
  writeNow(_p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number> {
    return this.writeBack.write(writeState(this.core, fh), buf, len, pos);
  }

  /** truncate(2) of a path (copies/editable-copy.ts) */
  truncate(p: string, size: number): Promise<void> {
    return truncatePath(this.parts, p, size);
  }

  async ftruncate(_p: string, fh: number, size: number): Promise<void> {
    await this.writeBack.truncate(writeState(this.core, fh), size);
  }

  /** close(): record the dirty file in the journal so it survives a crash; report a failed upload. */
  flush(_p: string, fh: number): Promise<void> {
    return flush(this.core, fh);
  }

  /** flush without waiting, for a small file in memory: true when done; false: flush must run */
  flushNow(_p: string, fh: number): boolean {
    return flushNow(this.core, fh);
  }

  fsync(_p: string, fh: number): Promise<void> {
    return fsync(this.core, fh);
  }

  /** synchronous: nothing in it waits */
  release(_p: string, fh: number): void {
    release(this.core, fh);
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
    void officeChange(this.core, p, 'removed');
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
    void officeChange(this.core, src, 'removed').then(() => officeChange(this.core, dst, 'created'));
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
    return this.pins.pin(p).finally(() => this.xattrs.pinsChanged());
  }

  /** `seafs unpin PATH`: the files let go of */
  unpin(p: string) {
    return this.pins.unpin(p).finally(() => this.xattrs.pinsChanged());
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
