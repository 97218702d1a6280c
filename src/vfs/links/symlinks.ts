// Symbolic links on the mount (--links): each is a small file NAME.rclonelink
// on the server (link-names.ts says the format). This module answers which
// paths are links, their attributes and targets, and makes new ones through the
// vfs's own create/write/flush/release, so a new link is journaled and uploaded
// like any new file (offline too). The vfs asks it first in the operations a
// link can reach (getattr, readdir, readlink, symlink, unlink, rename, and the
// ones that name a link without following it: lchown, lutimes, lgetxattr).
import { constants as C } from 'node:fs';
import type { DirEntry } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { Attr } from '../common/stat-attrs.js';
import type { Loc } from '../libraries/library-paths.js';
import type { Listing } from '../listings/listing-cache.js';
import type { FileState } from '../write/file-state.js';
import { MAX_TARGET_BYTES, isLinkFileName, shownNames, storedLinkName } from './link-names.js';

/** a link's attributes: size is its target's length in bytes */
export interface LinkStat {
  size: number;
  mtimeMs: number;
  /** the server's file id of its content (absent while only local) */
  id?: string;
}

export interface SymlinksHost {
  resolve(p: string): Promise<Loc>;
  /** whether a location is in a hidden folder (.seafile-history, .seafile-trash) */
  hidden(loc: Loc): Promise<boolean>;
  getattr(p: string): Promise<Attr>;
  /** unlink(2) of a file at a mount path */
  unlink(p: string): Promise<void>;
  /** a fresh listing of a folder, if the mount holds one (nothing asked of the server) */
  freshListing(repo: string, dir: string): Listing | null;
  /** the entry at a path (the listing of its parent, fetched as needed) */
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** the local data of a file being written */
  state(repo: string, path: string): FileState | undefined;
  /** the vfs's own file operations, on mount paths */
  create(p: string): Promise<number>;
  open(p: string): Promise<number>;
  read(p: string, fh: number, buf: Buffer, len: number, pos: number): number | Promise<number>;
  write(p: string, fh: number, buf: Buffer, len: number, pos: number): Promise<number>;
  flush(p: string, fh: number): Promise<void>;
  release(p: string, fh: number): void;
}

/** targets kept by content id (a file id is the hash of its content, so it never goes stale) */
const MAX_KEPT_TARGETS = 10_000;

export class Symlinks {
  private readonly targets = new Map<string, string>();

  constructor(private readonly host: SymlinksHost) {}

  private fromState(s: FileState): LinkStat {
    // whole seconds, as the server keeps them (as getattr shows files)
    return { size: s.size, mtimeMs: Math.floor(s.mtime / 1000) * 1000 };
  }

  private fromEntry(e: DirEntry | null | undefined): LinkStat | null {
    if (!e || e.type !== 'file') return null;
    return { size: e.size ?? 0, mtimeMs: (e.mtime || 0) * 1000, id: e.id };
  }

  /**
   * The link at `path` of a library as the mount knows it now: its attributes,
   * null when there is none, undefined when a listing must be fetched first or
   * the name is a stored link name (the full path decides).
   */
  now(repo: string, path: string): LinkStat | null | undefined {
    if (path === '/') return null;
    if (isLinkFileName(baseOf(path))) return undefined;
    const stored = storedLinkName(path);
    const s = this.host.state(repo, stored);
    if (s) return this.fromState(s);
    // a file being written here is that file (its answer needs no listing)
    if (this.host.state(repo, path)) return null;
    const l = this.host.freshListing(repo, parentOf(path));
    if (!l) return undefined;
    return this.fromEntry(l.entries.get(baseOf(stored)));
  }

  /**
   * The link at `path`, or null. A stored name (`X.rclonelink` as a file) is
   * not there as such: ENOENT. A folder with such a name stays a folder.
   */
  async at(repo: string, path: string): Promise<LinkStat | null> {
    if (path === '/') return null;
    if (isLinkFileName(baseOf(path))) {
      const e = await this.host.lookup(repo, path);
      if (e?.type === 'dir') return null;
      throw new VfsError('ENOENT', `${path}: shown as the symbolic link without its suffix`);
    }
    const stored = storedLinkName(path);
    const s = this.host.state(repo, stored);
    if (s) return this.fromState(s);
    if (this.host.state(repo, path)) return null;
    return this.fromEntry(await this.host.lookup(repo, stored));
  }

  /** the stored file (`p`.rclonelink) when `p` is a link; else `p` itself */
  async storedOrSelf(p: string): Promise<string> {
    const loc = await this.host.resolve(p).catch(() => null);
    if (!loc?.repo || (await this.host.hidden(loc))) return p;
    return (await this.at(loc.repo, loc.path)) ? storedLinkName(p) : p;
  }

  private exists(p: string): Promise<boolean> {
    return this.host.getattr(p).then(
      () => true,
      (e: unknown) => {
        if (e instanceof VfsError && e.code === 'ENOENT') return false;
        throw e;
      },
    );
  }

  /**
   * The paths a rename(2) moves: a link moves as its stored file. What it
   * replaces goes first (a link over a file, a file over a link: two steps,
   * not one atomic rename).
   */
  async renamePaths(src: string, dst: string): Promise<[string, string]> {
    this.refuseName(dst);
    const from = await this.storedOrSelf(src);
    const to = await this.storedOrSelf(dst);
    if (from !== src) {
      if (to === dst && (await this.exists(dst))) await this.host.unlink(dst);
      return [from, storedLinkName(dst)];
    }
    if (to !== dst) {
      if (((await this.host.getattr(src)).mode & C.S_IFMT) === C.S_IFDIR) throw new VfsError('ENOTDIR', dst);
      await this.host.unlink(to);
    }
    return [src, dst];
  }

  /** readlink(2): EINVAL for anything but a link */
  async readlink(p: string): Promise<string> {
    const loc = await this.host.resolve(p);
    const link = loc.repo !== null ? await this.at(loc.repo, loc.path) : null;
    if (link) return this.target(p, link);
    await this.host.getattr(p);
    throw new VfsError('EINVAL', `${p} is not a symbolic link`);
  }

  /** symlink(2): a link at `p` to `target`, kept as the file `p`.rclonelink */
  async symlink(target: string, p: string): Promise<void> {
    this.refuseName(p);
    if (await this.exists(p)) throw new VfsError('EEXIST', p);
    await this.make(target, p);
  }

  /** a folder's names as shown: `X.rclonelink` files as `X` */
  shown(names: Iterable<string>, l: Listing | null): string[] {
    return shownNames(names, (n) => l?.entries.get(n)?.type !== 'dir');
  }

  /** refuses a new name that is a stored link name: it would show as a link, not as itself */
  refuseName(p: string): void {
    if (isLinkFileName(baseOf(p)))
      throw new VfsError(
        'EINVAL',
        `${p}: with --links a name ending in .rclonelink holds a symbolic link; make one with ln -s`,
      );
  }

  /** the target of the link `l` at mount path `p` */
  private async target(p: string, l: LinkStat): Promise<string> {
    const kept = l.id ? this.targets.get(l.id) : undefined;
    if (kept !== undefined) return kept;
    if (l.size > MAX_TARGET_BYTES) throw new VfsError('ENAMETOOLONG', `${p}: a link target of ${l.size} bytes`);
    const stored = storedLinkName(p);
    const buf = Buffer.alloc(l.size);
    const fh = await this.host.open(stored);
    let got = 0;
    try {
      while (got < l.size) {
        const n = await this.host.read(stored, fh, buf.subarray(got), l.size - got, got);
        if (n <= 0) break;
        got += n;
      }
    } finally {
      this.host.release(stored, fh);
    }
    const target = buf.subarray(0, got).toString('utf8');
    if (l.id) {
      if (this.targets.size >= MAX_KEPT_TARGETS) this.targets.clear();
      this.targets.set(l.id, target);
    }
    return target;
  }

  /** a new file `p`.rclonelink holding `target` */
  private async make(target: string, p: string): Promise<void> {
    const data = Buffer.from(target, 'utf8');
    if (data.length === 0) throw new VfsError('ENOENT', 'an empty link target');
    // what the kernel's bytes become when they are not UTF-8: the real target is lost
    if (target.includes('\uFFFD')) throw new VfsError('EINVAL', `${p}: a link target that is not UTF-8`);
    if (data.length > MAX_TARGET_BYTES) throw new VfsError('ENAMETOOLONG', `a link target of ${data.length} bytes`);
    const stored = storedLinkName(p);
    const fh = await this.host.create(stored);
    try {
      const n = await this.host.write(stored, fh, data, data.length, 0);
      if (n !== data.length) throw new VfsError('EIO', `${stored}: short write of a link target`);
      await this.host.flush(stored, fh);
    } finally {
      this.host.release(stored, fh);
    }
  }
}
