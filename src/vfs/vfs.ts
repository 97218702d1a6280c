// The filesystem core: path-based operations as plain async functions, no
// FUSE. It combines the listing cache (metadata), the remote reader (clean
// files) and the write-back (dirty files in temp files) and speaks errno
// names through VfsError. The FUSE adapter is a thin layer over this.
import { constants as C } from 'node:fs';
import { join } from 'node:path';
import type { DirEntry, Library, SeafileApi } from '../client/types.js';
import { ApiError } from '../client/errors.js';
import { VfsError } from './errors.js';
import { BlockCache } from './read/block-cache.js';
import { Journal } from './write/journal.js';
import { MetaCache, type Listing } from './meta-cache.js';
import { baseOf, checkName, isWithin, joinPath, parentOf, splitPath } from './paths.js';
import { RemoteReader, type ReadPattern, type ReaderOptions, type RemoteFile } from './read/reader.js';
import { FileState, WriteBack, type WriteBackOptions } from './write/write-back.js';

export interface VfsOptions {
  /** a library name or id; absent: the root lists every library */
  library?: string;
  readOnly?: boolean;
  /** cache dir of this account (journal, temp files) */
  cacheDir: string;
  dirCacheTimeMs?: number;
  uid?: number;
  gid?: number;
  reader?: ReaderOptions;
  writeBack?: WriteBackOptions;
  /** fsync the journal entries (default true) */
  durableJournal?: boolean;
  /** bytes of downloaded data kept on disk (default 4 GiB; 0: none) */
  diskCacheBytes?: number;
  /** sub-folder listings fetched ahead, at most this many at once (default 8; 0: none) */
  prefetchDirs?: number;
  log?: (msg: string) => void;
}

export interface Attr {
  mode: number;
  size: number;
  nlink: number;
  uid: number;
  gid: number;
  mtime: Date;
  atime: Date;
  ctime: Date;
  blocks: number;
  blksize: number;
}

export interface StatFs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  namemax: number;
}

interface Loc {
  /** null: the virtual root listing the libraries */
  repo: string | null;
  path: string;
  readOnly: boolean;
}

interface Handle {
  repo: string;
  path: string;
  state: FileState | null;
  remote: RemoteFile | null;
  write: boolean;
  pattern: ReadPattern;
}

const ZERO_ID = '0000000000000000000000000000000000000000';
const BLKSIZE = 128 * 1024;
const STATFS_BSIZE = 1024 * 1024;

export class Vfs {
  readonly meta: MetaCache;
  readonly reader: RemoteReader;
  readonly disk: BlockCache | null;
  readonly wb: WriteBack;
  readonly stats = { ops: 0 };
  private readonly handles = new Map<number, Handle>();
  private nextHandle = 1;
  private lib: Library | null = null;
  private libs: { at: number; byName: Map<string, Library>; p?: Promise<void> } | null = null;
  private statfsCache: { at: number; v: StatFs } | null = null;
  private readonly dirTtl: number;
  private readonly uid: number;
  private readonly gid: number;
  private readonly log: (msg: string) => void;
  private readonly mountTime = new Date();
  /** files unlinked while open, renamed by libfuse to .fuse_hiddenNNN until their last close */
  private readonly hidden = new Map<string, { size: number; mtimeMs: number }>();

  private constructor(
    readonly api: SeafileApi,
    readonly opts: VfsOptions,
  ) {
    this.dirTtl = opts.dirCacheTimeMs ?? 10_000;
    this.uid = opts.uid ?? process.getuid?.() ?? 0;
    this.gid = opts.gid ?? process.getgid?.() ?? 0;
    this.log = opts.log ?? (() => {});
    this.meta = new MetaCache(api, this.dirTtl, 20_000, opts.prefetchDirs ?? 8);
    const chunk = opts.reader?.chunkSize ?? 128 * 1024;
    const diskBytes = opts.diskCacheBytes ?? 4 * 1024 ** 3;
    this.disk = diskBytes > 0 ? new BlockCache(join(opts.cacheDir, 'blocks', String(process.pid)), chunk, diskBytes) : null;
    this.reader = new RemoteReader(api, { ...opts.reader, chunkSize: chunk }, this.disk, (f) => {
      this.log(`${f.path} changed on the server; refreshing its folder`);
      this.meta.invalidate(f.repo, parentOf(f.path));
    });
    const journal = new Journal(join(opts.cacheDir, 'journal'), opts.durableJournal ?? true);
    this.wb = new WriteBack(api, journal, join(opts.cacheDir, 'dirty'), {
      log: this.log,
      onUploaded: (s, res, repo, path) => {
        if (s.deleted) return;
        this.meta.upsert(repo, parentOf(path), {
          type: 'file',
          name: baseOf(path),
          id: res.id,
          size: res.size,
          mtime: Math.floor(s.mtime / 1000),
        });
      },
      // the server's version keeps the name: list the folder afresh to show it (and the copy)
      onConflict: (repo, path) => this.meta.invalidate(repo, parentOf(path)),
      folderRecreated: (repo, dir) => {
        this.meta.invalidate(repo, parentOf(dir));
        this.meta.invalidateTree(repo, dir);
      },
    }, opts.writeBack);
  }

  /** Resolve the library (when named), prepare the cache dir, take over orphaned dirty files. */
  static async create(api: SeafileApi, opts: VfsOptions): Promise<Vfs> {
    const v = new Vfs(api, opts);
    if (opts.library !== undefined) v.lib = await v.findLibrary(opts.library);
    await v.wb.init();
    await v.disk?.init();
    const recovered = await v.wb.recover((repo) => (v.lib ? repo === v.lib.id : true));
    if (recovered) v.log(`recovered ${recovered} file(s) left by an earlier mount; uploading them`);
    return v;
  }

  get library(): Library | null {
    return this.lib;
  }

  private async findLibrary(nameOrId: string): Promise<Library> {
    const all = await this.api.listLibraries();
    const hit = all.find((l) => l.id === nameOrId) ?? all.find((l) => l.name === nameOrId);
    if (!hit) throw new VfsError('ENOENT', `no library named or with id "${nameOrId}"`);
    return hit;
  }

  // ---- path resolution ----

  private async libraries(): Promise<Map<string, Library>> {
    const c = this.libs;
    if (c && Date.now() - c.at < this.dirTtl) return c.byName;
    if (c?.p) {
      await c.p;
      return this.libs!.byName;
    }
    const p = (async () => {
      const list = await this.api.listLibraries();
      const byName = new Map<string, Library>();
      const count = new Map<string, number>();
      for (const l of list) count.set(l.name, (count.get(l.name) ?? 0) + 1);
      const seen = new Set<string>();
      for (const l of list) {
        if (seen.has(l.id)) continue; // a library reachable twice (owned and shared to a group)
        seen.add(l.id);
        let name = l.name.replace(/\//g, '_');
        if ((count.get(l.name) ?? 0) > 1 && l.type !== 'repo') name = `${name} (${l.owner || l.id.slice(0, 8)})`;
        if (byName.has(name)) name = `${name} [${l.id.slice(0, 8)}]`;
        byName.set(name, l);
      }
      this.libs = { at: Date.now(), byName };
    })();
    this.libs = { at: 0, byName: c?.byName ?? new Map(), p };
    try {
      await p;
    } catch (e) {
      this.libs = c ?? null;
      throw e;
    }
    return this.libs!.byName;
  }

  /** `change`: the caller creates, deletes or renames `p` (refused at the root with EPERM) */
  private async resolve(p: string, change = false): Promise<Loc> {
    if (this.lib) return { repo: this.lib.id, path: p, readOnly: !!this.opts.readOnly || this.lib.permission === 'r' };
    if (p === '/') return { repo: null, path: '/', readOnly: true };
    const parts = splitPath(p);
    if (change && parts.length === 1) throw new VfsError('EPERM', 'the root holds the libraries');
    const lib = (await this.libraries()).get(parts[0]);
    if (!lib) throw new VfsError('ENOENT', p);
    return {
      repo: lib.id,
      path: parts.length > 1 ? '/' + parts.slice(1).join('/') : '/',
      readOnly: !!this.opts.readOnly || lib.permission === 'r',
    };
  }

  private async repoOf(p: string, change = false): Promise<Loc & { repo: string }> {
    const loc = await this.resolve(p, change);
    if (loc.repo === null) throw new VfsError('EPERM', 'the root holds the libraries');
    return loc as Loc & { repo: string };
  }

  private writable(loc: Loc): void {
    if (loc.readOnly) throw new VfsError('EROFS');
  }

  /** The listing of a folder, checking that every ancestor is a folder. */
  private async dir(repo: string, dir: string): Promise<Listing> {
    const cached = this.meta.peek(repo, dir);
    if (cached && this.meta.fresh(cached)) {
      this.meta.noteUse(repo, dir, cached);
      return cached;
    }
    if (dir !== '/') {
      const e = await this.lookup(repo, dir);
      if (!e) throw new VfsError('ENOENT', dir);
      if (e.type !== 'dir') throw new VfsError('ENOTDIR', dir);
    }
    return this.meta.list(repo, dir);
  }

  /** The remote entry at a path, from its parent's listing; null when absent. */
  private async lookup(repo: string, path: string): Promise<DirEntry | null> {
    if (path === '/') return { type: 'dir', name: '', id: '', mtime: 0 };
    const l = await this.dir(repo, parentOf(path));
    return l.entries.get(baseOf(path)) ?? null;
  }

  // ---- attributes ----

  private dirAttr(mtimeSec: number, readOnly: boolean): Attr {
    const t = mtimeSec ? new Date(mtimeSec * 1000) : this.mountTime;
    return {
      mode: C.S_IFDIR | (readOnly ? 0o555 : 0o755),
      size: 4096,
      nlink: 2,
      uid: this.uid,
      gid: this.gid,
      mtime: t,
      atime: t,
      ctime: t,
      blocks: 8,
      blksize: BLKSIZE,
    };
  }

  private fileAttr(size: number, mtimeMs: number, readOnly: boolean): Attr {
    const t = new Date(mtimeMs);
    return {
      mode: C.S_IFREG | (readOnly ? 0o444 : 0o644),
      size,
      nlink: 1,
      uid: this.uid,
      gid: this.gid,
      mtime: t,
      atime: t,
      ctime: t,
      blocks: Math.ceil(size / 512),
      blksize: BLKSIZE,
    };
  }

  async getattr(p: string): Promise<Attr> {
    const loc = await this.resolve(p);
    if (loc.repo === null) return this.dirAttr(0, true);
    if (loc.path === '/') {
      const lib = this.lib ?? [...(await this.libraries()).values()].find((l) => l.id === loc.repo);
      return this.dirAttr(lib?.mtime ?? 0, loc.readOnly);
    }
    const s = this.wb.get(loc.repo, loc.path);
    // whole seconds, as the server keeps them: no change of mtime once the file is uploaded
    if (s) return this.fileAttr(s.size, Math.floor(s.mtime / 1000) * 1000, loc.readOnly);
    const hid = this.hidden.get(`${loc.repo}\u0000${loc.path}`);
    if (hid) return this.fileAttr(hid.size, hid.mtimeMs, loc.readOnly);
    const e = await this.lookup(loc.repo, loc.path);
    if (!e) throw new VfsError('ENOENT', p);
    if (e.type === 'dir') return this.dirAttr(e.mtime, loc.readOnly);
    return this.fileAttr(e.size ?? 0, (e.mtime || 0) * 1000, loc.readOnly);
  }

  async readdir(p: string): Promise<string[]> {
    const loc = await this.resolve(p);
    if (loc.repo === null) return [...(await this.libraries()).keys()];
    const l = await this.dir(loc.repo, loc.path);
    const names = new Set(l.entries.keys());
    for (const n of this.wb.childrenOf(loc.repo, loc.path)) names.add(n);
    return [...names];
  }

  async access(p: string, mode: number): Promise<void> {
    const loc = await this.resolve(p);
    await this.getattr(p);
    if (mode & C.W_OK && loc.readOnly) throw new VfsError('EROFS');
  }

  async statfs(_p: string): Promise<StatFs> {
    const c = this.statfsCache;
    if (c && Date.now() - c.at < 30_000) return c.v;
    const info = await this.api.accountInfo();
    const unlimited = !(info.total > 0);
    // every statfs field is 32 bits wide: count in MiB blocks
    const totalBlocks = unlimited ? 2 ** 32 - 1 : Math.min(2 ** 32 - 1, Math.floor(info.total / STATFS_BSIZE));
    const used = Math.ceil(Math.max(0, info.usage) / STATFS_BSIZE);
    const free = Math.max(0, totalBlocks - used);
    const v: StatFs = {
      bsize: STATFS_BSIZE,
      frsize: STATFS_BSIZE,
      blocks: totalBlocks,
      bfree: free,
      bavail: free,
      files: 1_000_000,
      ffree: 1_000_000,
      favail: 1_000_000,
      namemax: 255,
    };
    this.statfsCache = { at: Date.now(), v };
    return v;
  }

  // ---- open files ----

  private addHandle(h: Handle): number {
    let id = this.nextHandle;
    while (this.handles.has(id)) id = id >= 0x7fffffff ? 1 : id + 1;
    this.nextHandle = id >= 0x7fffffff ? 1 : id + 1;
    this.handles.set(id, h);
    return id;
  }

  private handle(fh: number): Handle {
    const h = this.handles.get(fh);
    if (!h) throw new VfsError('EBADF');
    return h;
  }

  private remoteOf(repo: string, path: string, e: DirEntry): RemoteFile {
    const size = e.size ?? 0;
    const version = e.id && e.id !== ZERO_ID ? e.id : `${repo}:${path}@${e.mtime}:${size}`;
    return { repo, path, size, version };
  }

  async open(p: string, flags: number): Promise<number> {
    const loc = await this.resolve(p);
    if (loc.repo === null || loc.path === '/') throw new VfsError('EISDIR');
    const repo = loc.repo;
    const acc = flags & 3;
    const trunc = (flags & C.O_TRUNC) !== 0;
    const wantWrite = acc !== C.O_RDONLY || trunc;
    if (wantWrite) this.writable(loc);
    let s = this.wb.get(repo, loc.path);
    if (!wantWrite) {
      if (s) {
        s.opened(false);
        return this.addHandle({ repo, path: loc.path, state: s, remote: null, write: false, pattern: { next: 0, window: 0 } });
      }
      const e = await this.lookup(repo, loc.path);
      if (!e) throw new VfsError('ENOENT', p);
      if (e.type === 'dir') throw new VfsError('EISDIR', p);
      return this.addHandle({ repo, path: loc.path, state: null, remote: this.remoteOf(repo, loc.path, e), write: false, pattern: { next: 0, window: 0 } });
    }
    if (!s) {
      const e = await this.lookup(repo, loc.path);
      if (!e) throw new VfsError('ENOENT', p);
      if (e.type === 'dir') throw new VfsError('EISDIR', p);
      const remote = this.remoteOf(repo, loc.path, e);
      s = await this.wb.openExisting(repo, loc.path, { size: remote.size, mtimeMs: e.mtime * 1000, id: e.id }, trunc, (dest) =>
        this.reader.downloadWhole(remote, dest),
      );
    }
    if (trunc && s.size > 0) await this.wb.truncate(s, 0);
    s.opened(acc !== C.O_RDONLY);
    return this.addHandle({ repo, path: loc.path, state: s, remote: null, write: acc !== C.O_RDONLY, pattern: { next: 0, window: 0 } });
  }

  async create(p: string, _mode: number): Promise<number> {
    const loc = await this.repoOf(p, true);
    this.writable(loc);
    if (loc.path === '/') throw new VfsError('EISDIR');
    checkName(baseOf(loc.path));
    const repo = loc.repo;
    let s = this.wb.get(repo, loc.path);
    if (!s) {
      const e = await this.lookup(repo, loc.path);
      if (e?.type === 'dir') throw new VfsError('EISDIR', p);
      if (e) return this.open(p, C.O_RDWR);
      s = await this.wb.createNew(repo, loc.path);
    }
    s.opened(true);
    return this.addHandle({ repo, path: loc.path, state: s, remote: null, write: true, pattern: { next: 0, window: 0 } });
  }

  /** Synchronous (a number) when the data is in memory, a promise otherwise. */
  read(_p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number> {
    const h = this.handle(fh);
    // a clean file opened for reading that someone has since written to: read the local data
    const s = h.state ?? this.wb.get(h.repo, h.path);
    if (s && !s.deleted) return this.wb.read(s, buf, len, pos);
    if (h.state) return this.wb.read(h.state, buf, len, pos);
    return this.reader.read(h.remote!, buf, len, pos, h.pattern);
  }

  async write(_p: string, fh: number, buf: Buffer, len: number, pos: number): Promise<number> {
    const h = this.handle(fh);
    if (!h.write || !h.state) throw new VfsError('EBADF');
    return this.wb.write(h.state, buf, len, pos);
  }

  async truncate(p: string, size: number): Promise<void> {
    const loc = await this.repoOf(p);
    this.writable(loc);
    let s = this.wb.get(loc.repo, loc.path);
    if (!s) {
      const e = await this.lookup(loc.repo, loc.path);
      if (!e) throw new VfsError('ENOENT', p);
      if (e.type === 'dir') throw new VfsError('EISDIR', p);
      if ((e.size ?? 0) === size) return;
      const remote = this.remoteOf(loc.repo, loc.path, e);
      s = await this.wb.openExisting(loc.repo, loc.path, { size: remote.size, mtimeMs: e.mtime * 1000, id: e.id }, size === 0, (dest) =>
        this.reader.downloadWhole(remote, dest),
      );
    }
    if (s.size !== size || size === 0) await this.wb.truncate(s, size);
    // `> file` truncates and then opens: give the open a moment before uploading
    if (s.writers === 0) this.wb.scheduleSoon(s, 1000);
  }

  async ftruncate(_p: string, fh: number, size: number): Promise<void> {
    const h = this.handle(fh);
    if (!h.write || !h.state) throw new VfsError('EBADF');
    await this.wb.truncate(h.state, size);
  }

  /** close(): record the dirty file in the journal so it survives a crash; report a failed upload. */
  async flush(_p: string, fh: number): Promise<void> {
    const h = this.handle(fh);
    const s = h.state;
    if (!s || !h.write) return;
    await this.wb.persist(s);
    if (s.lastError && s.dirty) {
      const e = s.lastError;
      throw new VfsError(e instanceof ApiError && e.kind === 'quota' ? 'ENOSPC' : 'EIO', 'earlier upload failed', { cause: e });
    }
  }

  async fsync(_p: string, fh: number): Promise<void> {
    const h = this.handle(fh);
    if (h.state && !h.state.deleted) await this.wb.sync(h.state);
  }

  async release(_p: string, fh: number): Promise<void> {
    const h = this.handles.get(fh);
    if (!h) return;
    this.handles.delete(fh);
    if (h.remote) this.reader.closePattern(h.remote, h.pattern);
    const s = h.state;
    if (!s) return;
    s.closed(h.write);
    if (s.dirty && s.writers === 0 && !s.deleted) this.wb.scheduleAfterClose(s);
    else this.wb.maybeDispose(s);
  }

  utimens(p: string): Promise<void> {
    // fuse-native hands over atime twice and never the real mtime: accept and keep ours
    return this.getattr(p).then(() => {});
  }

  chmod(p: string): Promise<void> {
    return this.getattr(p).then(() => {});
  }

  chown(p: string): Promise<void> {
    return this.getattr(p).then(() => {});
  }

  // ---- namespace changes ----

  /** Delete a file (remote and local state) at a location known to hold one. */
  private async removeFile(repo: string, path: string, s: FileState | undefined, e: DirEntry | null): Promise<void> {
    let remote: string | null = e ? path : null;
    if (s) remote = (await this.wb.discard(s)) ?? remote;
    if (remote) await this.api.deleteFile(repo, remote);
    this.meta.remove(repo, parentOf(path), baseOf(path));
  }

  async unlink(p: string): Promise<void> {
    const loc = await this.repoOf(p, true);
    if (loc.path === '/') throw new VfsError('EPERM');
    this.writable(loc);
    if (this.hidden.delete(`${loc.repo}\u0000${loc.path}`)) return;
    const s = this.wb.get(loc.repo, loc.path);
    const e = await this.lookup(loc.repo, loc.path);
    if (!s && !e) throw new VfsError('ENOENT', p);
    if (!s && e?.type === 'dir') throw new VfsError('EISDIR', p);
    await this.removeFile(loc.repo, loc.path, s, e);
  }

  /**
   * libfuse renames a file unlinked while still open to .fuse_hiddenNNN and
   * unlinks that name at the last close. On the server it is deleted at once
   * (never shown under the hidden name, never uploaded again); open handles
   * keep using the local data.
   */
  private async hide(repo: string, src: string, hiddenPath: string): Promise<void> {
    const s = this.wb.get(repo, src);
    const e = await this.lookup(repo, src);
    if (!s && !e) throw new VfsError('ENOENT', src);
    const size = s ? s.size : (e!.size ?? 0);
    const mtimeMs = s ? s.mtime : e!.mtime * 1000;
    this.hidden.set(`${repo}\u0000${hiddenPath}`, { size, mtimeMs });
    await this.removeFile(repo, src, s, e);
  }

  async mkdir(p: string, _mode: number): Promise<void> {
    const loc = await this.repoOf(p, true);
    if (loc.path === '/') throw new VfsError('EEXIST');
    this.writable(loc);
    const name = baseOf(loc.path);
    checkName(name);
    const dir = parentOf(loc.path);
    const l = await this.dir(loc.repo, dir);
    if (l.entries.has(name) || this.wb.get(loc.repo, loc.path)) throw new VfsError('EEXIST', p);
    await this.api.mkdir(loc.repo, loc.path);
    this.meta.upsert(loc.repo, dir, { type: 'dir', name, id: ZERO_ID, mtime: Math.floor(Date.now() / 1000) });
    this.meta.setEmpty(loc.repo, loc.path);
  }

  async rmdir(p: string): Promise<void> {
    const loc = await this.repoOf(p, true);
    if (loc.path === '/') throw new VfsError('EPERM', 'a library is removed on the server, not here');
    this.writable(loc);
    const e = await this.lookup(loc.repo, loc.path);
    if (!e) {
      if (this.wb.get(loc.repo, loc.path)) throw new VfsError('ENOTDIR', p);
      throw new VfsError('ENOENT', p);
    }
    if (e.type !== 'dir') throw new VfsError('ENOTDIR', p);
    await this.ensureEmpty(loc.repo, loc.path);
    await this.api.deleteDir(loc.repo, loc.path);
    this.meta.remove(loc.repo, parentOf(loc.path), baseOf(loc.path));
    this.meta.invalidateTree(loc.repo, loc.path);
  }

  /** ENOTEMPTY unless the folder is empty on the server (checked afresh) and locally. */
  private async ensureEmpty(repo: string, path: string): Promise<void> {
    if (this.wb.childrenOf(repo, path).length > 0) throw new VfsError('ENOTEMPTY', path);
    const l = await this.meta.list(repo, path, true);
    if (l.entries.size > 0) throw new VfsError('ENOTEMPTY', path);
  }

  async rename(src: string, dst: string): Promise<void> {
    const a = await this.resolve(src, true);
    const b = await this.resolve(dst, true);
    if (a.repo === null || b.repo === null || a.path === '/' || b.path === '/') {
      throw new VfsError('EPERM', 'libraries are renamed on the server, not here');
    }
    this.writable(a);
    this.writable(b);
    const aRepo = a.repo;
    const bRepo = b.repo;
    const newName = baseOf(b.path);
    checkName(newName);
    if (aRepo === bRepo && a.path === b.path) return;
    if (aRepo === bRepo && isWithin(b.path, a.path)) throw new VfsError('EINVAL', 'a folder cannot move into itself');
    if (aRepo === bRepo && newName.startsWith('.fuse_hidden') && parentOf(a.path) === parentOf(b.path)) {
      const st = this.wb.get(aRepo, a.path);
      const en = st ? null : await this.lookup(aRepo, a.path);
      if (st || en?.type === 'file') return this.hide(aRepo, a.path, b.path);
    }

    const srcState = this.wb.get(aRepo, a.path);
    const srcEntry = await this.lookup(aRepo, a.path);
    if (!srcState && !srcEntry) throw new VfsError('ENOENT', src);
    const srcIsDir = !srcState && srcEntry!.type === 'dir';
    await this.dir(bRepo, parentOf(b.path));

    // POSIX rename replaces the target; the API would auto-rename instead
    const dstState = this.wb.get(bRepo, b.path);
    const dstEntry = await this.lookup(bRepo, b.path);
    if (dstState || dstEntry) {
      const dstIsDir = !dstState && dstEntry!.type === 'dir';
      if (srcIsDir && !dstIsDir) throw new VfsError('ENOTDIR', dst);
      if (!srcIsDir && dstIsDir) throw new VfsError('EISDIR', dst);
      if (dstIsDir) {
        await this.ensureEmpty(bRepo, b.path);
        await this.api.deleteDir(bRepo, b.path);
        this.meta.remove(bRepo, parentOf(b.path), newName);
        this.meta.invalidateTree(bRepo, b.path);
      } else {
        await this.removeFile(bRepo, b.path, dstState, dstEntry);
      }
    }

    if (srcState) {
      let moved = false;
      await this.wb.retarget(srcState, bRepo, b.path, async (from) => {
        await this.remoteMove(aRepo, from, bRepo, b.path, false);
        moved = true;
      });
      // the entry as the upload that may have finished meanwhile recorded it (with the file id)
      const uploaded = this.meta.peek(aRepo, parentOf(a.path))?.entries.get(baseOf(a.path)) ?? srcEntry;
      this.meta.remove(aRepo, parentOf(a.path), baseOf(a.path));
      if (moved) {
        const e: DirEntry = uploaded ?? {
          type: 'file',
          name: newName,
          id: '',
          size: srcState.size,
          mtime: Math.floor(srcState.mtime / 1000),
        };
        this.meta.upsert(bRepo, parentOf(b.path), { ...e, name: newName });
      }
      return;
    }
    const held = srcIsDir ? await this.wb.holdUnder(aRepo, a.path) : [];
    let ok = false;
    try {
      await this.remoteMove(aRepo, a.path, bRepo, b.path, srcIsDir);
      ok = true;
    } finally {
      await this.wb.releaseUnder(held, aRepo, a.path, bRepo, b.path, ok);
    }
    this.meta.remove(aRepo, parentOf(a.path), baseOf(a.path));
    this.meta.upsert(bRepo, parentOf(b.path), { ...srcEntry!, name: newName });
    if (srcIsDir) {
      this.meta.invalidateTree(aRepo, a.path);
      this.meta.invalidateTree(bRepo, b.path);
    }
  }

  /**
   * Rename or move a file or folder on the server to exactly (dstRepo, dst),
   * whose name must be free. Moves never overwrite on this API and clash
   * names are auto-renamed, so the order of rename and move is chosen to
   * avoid clashes, and the result is checked.
   */
  private async remoteMove(srcRepo: string, src: string, dstRepo: string, dst: string, isDir: boolean): Promise<void> {
    const sDir = parentOf(src);
    const sName = baseOf(src);
    const dDir = parentOf(dst);
    const dName = baseOf(dst);
    const renameIn = (path: string, to: string) =>
      isDir ? this.api.renameDir(srcRepo, path, to) : this.api.renameFile(srcRepo, path, to);
    const moveTo = (repo: string, path: string) =>
      isDir
        ? this.api.batchMove(repo, parentOf(path), [baseOf(path)], dstRepo, dDir)
        : this.api.moveFile(repo, path, dstRepo, dDir);

    if (srcRepo === dstRepo && sDir === dDir) {
      await renameIn(src, dName);
    } else if (sName === dName) {
      await moveTo(srcRepo, src);
    } else {
      const srcList = await this.meta.list(srcRepo, sDir, true);
      const dstList = await this.meta.list(dstRepo, dDir, true);
      if (!srcList.entries.has(dName) && !this.wb.get(srcRepo, joinPath(sDir, dName))) {
        await renameIn(src, dName);
        await moveTo(srcRepo, joinPath(sDir, dName));
      } else if (!dstList.entries.has(sName) && !this.wb.get(dstRepo, joinPath(dDir, sName))) {
        await moveTo(srcRepo, src);
        await (isDir ? this.api.renameDir(dstRepo, joinPath(dDir, sName), dName) : this.api.renameFile(dstRepo, joinPath(dDir, sName), dName));
      } else {
        const tmp = `.seafs-move-${process.pid}-${Date.now().toString(36)}`;
        await renameIn(src, tmp);
        await moveTo(srcRepo, joinPath(sDir, tmp));
        await (isDir ? this.api.renameDir(dstRepo, joinPath(dDir, tmp), dName) : this.api.renameFile(dstRepo, joinPath(dDir, tmp), dName));
      }
    }
    // a file renamed within its folder onto a name just checked free needs no check (the common
    // save-then-rename of editors and rsync); otherwise verify the final name, since an
    // auto-renamed "name (1)" would be a silent failure
    if (!isDir && srcRepo === dstRepo && sDir === dDir) return;
    const after = await this.meta.list(dstRepo, dDir, true);
    if (!after.entries.has(dName)) throw new VfsError('EIO', `rename to ${dst} did not land under that name`);
    if (srcRepo !== dstRepo || sDir !== dDir) this.meta.invalidate(srcRepo, sDir);
  }

  // ---- lifecycle ----

  /** Upload everything pending; returns the files that could not be uploaded. */
  async drain(onStatus: (pending: { path: string; size: number }[]) => void = () => {}, timeoutMs = 0) {
    const failed = await this.wb.drain((list) => onStatus(list.map((s) => ({ path: s.path, size: s.size }))), timeoutMs);
    return failed.map((s) => ({ path: s.path, size: s.size, error: s.lastError instanceof Error ? s.lastError.message : String(s.lastError) }));
  }

  pendingUploads(): { path: string; size: number }[] {
    return this.wb.pending().map((s) => ({ path: s.path, size: s.size }));
  }

  /** The state of the mount's engines, for the control socket's status answer. */
  status() {
    return {
      pending: this.pendingUploads(),
      reader: this.reader.stats,
      readerMemory: this.reader.memory(),
      disk: this.disk?.stats,
      meta: this.meta.stats,
      uploads: this.wb.stats,
    };
  }

  close(): void {
    this.wb.close();
    void this.disk?.close();
  }
}

