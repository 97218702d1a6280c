// Extended attributes of the files and folders of a library (getfattr,
// setfattr): what the mount knows about each one, read from the listing cache
// and the write-back table, so `getfattr -d -R` over a large tree asks the
// server nothing per file. Only the share link may need the server: the
// links of a library are listed once (and kept a minute); a link is created
// only when `user.seafile.share_link` is read by name and none exists, and
// that name is listed only once a link exists, so `getfattr -d` (which reads
// every listed name) never creates links. `user.seafile.lock` is writable
// (1/0 locks or unlocks) and readable but not listed, so that copying a file
// with its attributes (cp -a, rsync -X) never locks the copy. A server
// without locks (Community Edition) answers ENOTSUP for both lock names.
import type { DirEntry, Library, SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { VfsError } from '../errors.js';
import { NO_FILE_LOCKS } from '../common/file-locks.js';
import type { Loc } from '../libraries/library-paths.js';
import { baseOf, parentOf } from '../common/paths.js';
import { ShareLinks } from './share-links.js';
import type { FileState } from '../write/file-state.js';

export const XATTR = {
  id: 'user.seafile.id',
  library: 'user.seafile.library',
  modifier: 'user.seafile.modifier',
  status: 'user.seafile.status',
  lockedBy: 'user.seafile.locked_by',
  lock: 'user.seafile.lock',
  shareLink: 'user.seafile.share_link',
  url: 'user.seafile.url',
  pinned: 'user.seafile.pinned',
} as const;

/** what the pins (src/vfs/pin/) answer for the attributes */
export interface PinAttrs {
  pin(p: string): Promise<unknown>;
  unpin(p: string): Promise<unknown>;
  rootOf(repo: string, path: string): string | null;
  fileAvailability(repo: string, path: string, e: DirEntry | null): Promise<string>;
  folderAvailability(repo: string, path: string): string;
}

/** what the attributes are computed from (the vfs passes its own) */
export interface XattrSources {
  api: SeafileApi;
  resolve(p: string): Promise<Loc>;
  /** the remote entry at a library path, from the listing cache (null: not on the server) */
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** something in or below the folder changed here since its parent was listed: the id listed is out of date */
  folderChanged(repo: string, path: string): boolean;
  /** list a folder afresh from the server */
  relist(repo: string, dir: string): Promise<void>;
  library(repo: string): Promise<Library | undefined>;
  /** local data of a file (the write-back table) */
  state(repo: string, path: string): FileState | undefined;
  /** files with local data under a folder */
  under(repo: string, dir: string): FileState[];
  /** bytes sent by the upload that runs while the file is written (null: none) */
  streamed(s: FileState): number | null;
  setLock(p: string, on: boolean): Promise<void>;
  /** whether the server has file locks (Seafile Pro); learned once */
  locksSupported(): Promise<boolean>;
  /** the server's address, for user.seafile.url (absent: not offered) */
  serverUrl?: string;
  pins?: PinAttrs;
}

/** a conflict copy as Seafile's clients name it: `name (SFConflict ... 2026-11-23-10-15-00).ext` */
const CONFLICT_NAME = /\(SFConflict [^)]*\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d(?: \d+)?\)/;

/** how long a value read is answered again unchanged: getfattr asks for its size, then for it */
const STEADY_MS = 1000;

const key = (repo: string, path: string) => `${repo}\u0000${path}`;
const encodePath = (p: string) => p.split('/').map(encodeURIComponent).join('/');

interface Target {
  repo: string;
  path: string;
  isDir: boolean;
  /** the server's entry (null: a file only this mount has yet) */
  entry: DirEntry | null;
  state: FileState | undefined;
}

export class Xattrs {
  /** paths whose upload ended as a conflict copy: path -> the copy's path */
  private readonly conflicts = new Map<string, string>();
  private readonly links: ShareLinks;
  private readonly steady = new Map<string, { at: number; value: Buffer }>();

  constructor(private readonly src: XattrSources) {
    this.links = new ShareLinks(src.api);
  }

  /** calls that created a share link (for tests and the log) */
  get linksCreated(): number {
    return this.links.created;
  }

  /** the server kept `path` and the local version went to `copy` */
  noteConflict(repo: string, path: string, copy: string): void {
    this.conflicts.set(key(repo, path), copy);
  }

  /** listxattr: the names that apply to `p` */
  async list(p: string): Promise<string[]> {
    const t = await this.target(p);
    if (!t) return [];
    const names: string[] = [];
    if (this.idOf(t)) names.push(XATTR.id);
    names.push(XATTR.library);
    if (this.modifierOf(t)) names.push(XATTR.modifier);
    names.push(XATTR.status);
    if (!t.isDir && (await this.src.locksSupported())) names.push(XATTR.lockedBy);
    if (t.entry && (await this.links.existing(t.repo, t.path))) names.push(XATTR.shareLink);
    if (this.src.serverUrl) names.push(XATTR.url);
    return names;
  }

  /** getxattr: ENODATA for a name that does not apply (or outside `user.`) */
  async get(p: string, name: string): Promise<Buffer> {
    const k = `${p}\u0000${name}`;
    const now = Date.now();
    const held = this.steady.get(k);
    if (held && now - held.at < STEADY_MS) return held.value;
    const value = Buffer.from(await this.compute(p, name));
    if (this.steady.size > 4096) for (const [sk, v] of this.steady) if (now - v.at >= STEADY_MS) this.steady.delete(sk);
    this.steady.set(k, { at: now, value });
    return value;
  }

  /** setxattr: user.seafile.lock (1 locks, 0 unlocks) and user.seafile.pinned (1 pins, 0 unpins); else ENOTSUP */
  async set(p: string, name: string, value: Buffer): Promise<void> {
    if (name !== XATTR.lock && (name !== XATTR.pinned || !this.src.pins))
      throw new VfsError('ENOTSUP', `${name} cannot be set`);
    const v = value.toString().trim();
    const what = name === XATTR.lock ? '1 (lock) or 0 (unlock)' : '1 (pin) or 0 (unpin)';
    if (v !== '1' && v !== '0') throw new VfsError('EINVAL', `${name} takes ${what}, not "${v}"`);
    if (name === XATTR.lock) await this.changeLock(p, v === '1');
    else await this.changePin(p, v === '1');
  }

  /** removexattr: removing user.seafile.lock unlocks, user.seafile.pinned unpins; anything else ENOTSUP */
  async remove(p: string, name: string): Promise<void> {
    if (name === XATTR.pinned && this.src.pins) return this.changePin(p, false);
    if (name !== XATTR.lock) throw new VfsError('ENOTSUP', `${name} cannot be removed`);
    await this.changeLock(p, false);
  }

  /**
   * Not listed (as the lock is not): cp -a or rsync -X from one place of the
   * mount to another would otherwise pin every copy.
   */
  private async changePin(p: string, on: boolean): Promise<void> {
    if (on) await this.src.pins!.pin(p);
    else await this.src.pins!.unpin(p);
    this.pinsChanged();
  }

  /** Pins changed (here or by `seafs pin`/`unpin`): the pinned state and status of everything below did, so no answer is held. */
  pinsChanged(): void {
    this.steady.clear();
  }

  private async changeLock(p: string, on: boolean): Promise<void> {
    const t = await this.target(p);
    if (!t) throw new VfsError('ENOTSUP', 'the root of the libraries has no lock');
    await this.src.setLock(p, on);
    for (const k of this.steady.keys()) if (k.startsWith(`${p}\u0000`)) this.steady.delete(k);
  }

  /** a server without locks (Community Edition) has no lock to show: ENOTSUP, as for setting one */
  private async requireLocks(): Promise<void> {
    if (!(await this.src.locksSupported())) throw new VfsError('ENOTSUP', NO_FILE_LOCKS);
  }

  private async compute(p: string, name: string): Promise<string> {
    const none = () => new VfsError('ENODATA', `${p}: no ${name}`);
    if (!name.startsWith('user.')) throw none();
    const t = await this.target(p);
    if (!t) throw none();
    switch (name) {
      case XATTR.id: {
        const id = this.idOf(await this.currentFolder(t));
        if (!id) throw none();
        return id;
      }
      case XATTR.library:
        return t.repo;
      case XATTR.modifier: {
        const m = this.modifierOf(t);
        if (!m) throw none();
        return m;
      }
      case XATTR.status:
        return this.withAvailability(t, t.isDir ? this.folderStatus(t) : await this.fileStatus(t));
      case XATTR.lockedBy:
        if (t.isDir) throw none();
        await this.requireLocks();
        return t.entry?.is_locked ? t.entry.lock_owner || 'another user' : '';
      case XATTR.lock:
        if (t.isDir) throw none();
        await this.requireLocks();
        return t.entry?.is_locked && t.entry.locked_by_me ? '1' : '0';
      case XATTR.shareLink:
        return this.shareLink(t);
      case XATTR.url:
        if (!this.src.serverUrl) throw none();
        return this.urlOf(t);
      case XATTR.pinned:
        if (!this.src.pins) throw none();
        return this.src.pins.rootOf(t.repo, t.path) !== null ? '1' : '0';
      default:
        throw none();
    }
  }

  /** the file or folder at `p` (null: the virtual root of the libraries); ENOENT when absent */
  private async target(p: string): Promise<Target | null> {
    const loc = await this.src.resolve(p);
    if (loc.repo === null) return null;
    const { repo, path } = loc;
    if (path === '/')
      return { repo, path, isDir: true, entry: { type: 'dir', name: '', id: '', mtime: 0 }, state: undefined };
    const state = this.src.state(repo, path);
    const entry = await this.src.lookup(repo, path);
    if (!state && !entry) throw new VfsError('ENOENT', p);
    return { repo, path, isDir: !state && entry?.type === 'dir', entry, state };
  }

  /**
   * A folder made, or changed inside, through the mount since its parent was
   * listed has a new id on the server (ids hash the content; an upload under
   * way is not in it yet): the parent is listed again to learn it.
   */
  private async currentFolder(t: Target): Promise<Target> {
    if (!t.isDir || t.path === '/' || !this.src.folderChanged(t.repo, t.path)) return t;
    await this.src.relist(t.repo, parentOf(t.path));
    return { ...t, entry: await this.src.lookup(t.repo, t.path) };
  }

  /** the server's object id; none for the library's root (it changes with every commit: the library id names it) */
  private idOf(t: Target): string {
    return t.path === '/' ? '' : (t.entry?.id ?? '');
  }

  private modifierOf(t: Target): string {
    const m = t.entry?.modifier_email;
    return typeof m === 'string' ? m : '';
  }

  private async fileStatus(t: Target): Promise<string> {
    const s = t.state;
    if (s && s.dirty && !s.deleted) {
      const e = s.lastError;
      if (e && !unreachable(e)) return `error: ${e instanceof Error ? e.message : String(e)}`;
      // the share sent is known for a file streamed while it is written (large files); a whole-file
      // upload (or one refused while offline) is pending until the server has it
      const sent = this.src.streamed(s);
      if (sent !== null) return `uploading ${s.size > 0 ? Math.min(99, Math.floor((sent * 100) / s.size)) : 0}%`;
      return 'pending';
    }
    if (CONFLICT_NAME.test(baseOf(t.path))) return 'conflict';
    const copy = this.conflicts.get(key(t.repo, t.path));
    if (copy !== undefined) {
      // the record lasts while the copy is there (deleting the copy resolves it); same folder: no new listing
      if (await this.src.lookup(t.repo, copy)) return 'conflict';
      this.conflicts.delete(key(t.repo, t.path));
    }
    return 'synced';
  }

  /**
   * What of it is on this machine, after the sync state: "synced, pinned",
   * "synced, cached", "2 pending, pinned"...; nothing added for a file none
   * of which is here (cloud-only), nor for one with local data (pending).
   */
  private async withAvailability(t: Target, status: string): Promise<string> {
    const pins = this.src.pins;
    if (!pins || status === 'pending' || status.startsWith('uploading') || status.startsWith('error')) return status;
    const more = t.isDir
      ? pins.folderAvailability(t.repo, t.path)
      : await pins.fileAvailability(t.repo, t.path, t.entry);
    return more ? `${status}, ${more}` : status;
  }

  private folderStatus(t: Target): string {
    let pending = 0;
    let failed = 0;
    for (const s of this.src.under(t.repo, t.path)) {
      if (!s.dirty || s.deleted) continue;
      pending++;
      if (s.lastError && !unreachable(s.lastError)) failed++;
    }
    if (pending === 0) return 'synced';
    return failed > 0 ? `${pending} pending (${failed} failed)` : `${pending} pending`;
  }

  private async urlOf(t: Target): Promise<string> {
    const base = this.src.serverUrl!.replace(/\/+$/, '');
    if (!t.isDir) return `${base}/lib/${t.repo}/file${encodePath(t.path)}`;
    const lib = await this.src.library(t.repo);
    const name = encodeURIComponent(lib?.name ?? t.repo);
    return `${base}/library/${t.repo}/${name}${t.path === '/' ? '/' : `${encodePath(t.path)}/`}`;
  }

  /** the existing link of the file or folder, or a new one */
  private async shareLink(t: Target): Promise<string> {
    if (!t.entry) throw new VfsError('ENODATA', `${t.path} is not on the server yet`);
    return this.links.getOrCreate(t.repo, t.path);
  }
}
