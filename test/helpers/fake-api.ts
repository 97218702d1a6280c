// An in-memory SeafileApi for the vfs unit tests: folders with object ids
// that change when their content changes, content-addressed blobs, ranged
// downloads, auto-rename on clashes like the real API, quota, call counters
// and hooks to delay or fail calls.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { ApiError, type ApiErrorKind } from '../../src/client/errors.js';
import type {
  AccountInfo,
  DirEntry,
  DirListing,
  DownloadLink,
  FileDetail,
  Library,
  LibraryInfo,
  LibraryType,
  RangeDownload,
  SeafileApi,
  ShareLink,
  UploadedFile,
} from '../../src/client/types.js';
import type { CommitRecord, TrashEntry } from '../../src/client/types.js';
import type { FileUploadStream, StartUploadStream, UploadBatch } from '../../src/client/types.js';
import type { StreamControl, StreamSink } from '../../src/client/types.js';

interface FFile {
  type: 'file';
  id: string;
  mtime: number;
  lockedBy?: string;
  /** the last modifier's e-mail, listed as modifier_email when set */
  modifier?: string;
}
interface FDir {
  type: 'dir';
  oid: string;
  mtime: number;
  children: Map<string, FNode>;
}
type FNode = FFile | FDir;

let oidCounter = 0;
const newOid = () => (++oidCounter).toString(16).padStart(40, 'a');
const now = () => Math.floor(Date.now() / 1000);
const ZERO = '0'.repeat(40);

export function apiError(kind: ApiErrorKind, status: number, operation: string, msg = ''): ApiError {
  return new ApiError({ kind, status, operation, serverMessage: msg });
}

const split = (p: string) => p.split('/').filter(Boolean);
const parentOf = (p: string) => {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
};
const baseOf = (p: string) => p.slice(p.lastIndexOf('/') + 1);

export class FakeApi implements SeafileApi {
  readonly calls: Record<string, number> = {};
  readonly blobs = new Map<string, Buffer>();
  readonly repos = new Map<string, { lib: Library; root: FDir }>();
  /** answer downloads with 200 and the whole file, as encrypted libraries do */
  ignoreRange = false;
  quotaTotal = -2;
  /** awaited at the start of every upload/update (to hold uploads in tests) */
  uploadGate: (() => Promise<void>) | null = null;
  /** awaited at the start of every mkdir (to hold folder creations in tests) */
  mkdirGate: (() => Promise<void>) | null = null;
  /** names mkdir refuses with 400 "Folder name invalid." (the newest seahub refuses emoji) */
  refuseMkdirNames: RegExp | null = null;
  /** servers before 12.0.4: uploads ignore last_modify (a file takes its upload's time; the same content is no change) */
  ignoreLastModify = false;
  /** what serverInfo() reports */
  serverVersion = '12.0.4';
  /** the account's id accountInfo() reports as `email` (Seafile 11+: a virtual `<hex>@auth.local`) */
  accountEmail = 'me@example.com';
  /** errors thrown by the next calls of a method */
  readonly failNext = new Map<string, ApiError[]>();
  bytesServed = 0;

  async serverInfo(): Promise<{ version: string; features: string[] }> {
    this.hit('serverInfo');
    return { version: this.serverVersion, features: ['seafile-basic'] };
  }

  /** quotas of other accounts (libraries shared with this one are charged to their owner), bytes */
  readonly ownerQuotas = new Map<string, number>();

  addLibrary(
    name: string,
    opts: { permission?: 'r' | 'rw'; type?: Library['type']; id?: string; owner?: string } = {},
  ): string {
    const id = opts.id ?? `${(this.repos.size + 1).toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
    this.repos.set(id, {
      lib: {
        id,
        name,
        owner: opts.owner ?? 'me@example.com',
        permission: opts.permission ?? 'rw',
        encrypted: false,
        mtime: now(),
        size: 0,
        type: opts.type ?? 'repo',
      },
      root: { type: 'dir', oid: newOid(), mtime: now(), children: new Map() },
    });
    return id;
  }

  /** the server is unreachable: every call fails as a refused connection */
  down = false;

  private hit(op: string): void {
    this.calls[op] = (this.calls[op] ?? 0) + 1;
    if (this.down) throw apiError('network', 0, op, 'connect ECONNREFUSED');
    const f = this.failNext.get(op);
    if (f?.length) throw f.shift()!;
  }

  private repo(id: string) {
    const r = this.repos.get(id);
    if (!r) throw apiError('not_found', 404, 'repo', 'Library not found.');
    return r;
  }

  /** the chain of folders from the root to `path`'s folder */
  private chain(repoId: string, path: string): FDir[] {
    const out: FDir[] = [this.repo(repoId).root];
    for (const part of split(path)) {
      const n = out[out.length - 1].children.get(part);
      if (n?.type !== 'dir') throw apiError('not_found', 404, 'dir', `Folder ${path} not found.`);
      out.push(n);
    }
    return out;
  }

  dirAt(repoId: string, path: string): FDir {
    const c = this.chain(repoId, path);
    return c[c.length - 1];
  }

  nodeAt(repoId: string, path: string): FNode | undefined {
    if (path === '/') return this.repo(repoId).root;
    try {
      return this.dirAt(repoId, parentOf(path)).children.get(baseOf(path));
    } catch {
      return undefined;
    }
  }

  private touch(repoId: string, dir: string): void {
    for (const d of this.chain(repoId, dir)) {
      d.oid = newOid();
      d.mtime = now();
    }
  }

  private freeName(d: FDir, name: string): string {
    if (!d.children.has(name)) return name;
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    for (let i = 1; ; i++) {
      const n = `${stem} (${i})${ext}`;
      if (!d.children.has(n)) return n;
    }
  }

  private store(data: Buffer): string {
    if (data.length === 0) return ZERO;
    const id = createHash('sha1').update(data).digest('hex');
    this.blobs.set(id, data);
    // a server with the block path keeps every file as blocks (a copy of it sends none)
    if (this.blocksLink) this.cutBlocks(data);
    return id;
  }

  // ---- test helpers ----
  putFile(repoId: string, path: string, data: Buffer | string): void {
    const d = this.dirAt(repoId, parentOf(path));
    d.children.set(baseOf(path), { type: 'file', id: this.store(Buffer.from(data)), mtime: now() });
    this.touch(repoId, parentOf(path));
    this.noteVersion(repoId, path);
  }

  // ---- history and trash: a commit per change of a file's content, a trash entry per delete ----

  /** the time (seconds) the next commit gets; null: now */
  clockSec: number | null = null;
  private commitCount = 0;
  /** per repo and path: the file's versions, oldest first */
  private readonly versions = new Map<string, { commit: string; ctime: number; id: string; size: number }[]>();
  /** per repo: deleted entries, with the node as it was (restored from) */
  private readonly trashed = new Map<string, { entry: TrashEntry; node: FNode }[]>();

  private newCommit(): { id: string; ctime: number } {
    return { id: (++this.commitCount).toString(16).padStart(40, 'c'), ctime: this.clockSec ?? now() };
  }

  private noteVersion(repoId: string, path: string): void {
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') return;
    const k = `${repoId}\u0000${path}`;
    const list = this.versions.get(k) ?? [];
    if (list.length && list[list.length - 1].id === n.id) return;
    const c = this.newCommit();
    list.push({ commit: c.id, ctime: c.ctime, id: n.id, size: this.content(repoId, path)!.length });
    this.versions.set(k, list);
  }

  private noteDeleted(repoId: string, path: string, node: FNode): void {
    const c = this.newCommit();
    const list = this.trashed.get(repoId) ?? [];
    const size = node.type === 'file' && node.id !== ZERO ? this.blobs.get(node.id)!.length : 0;
    list.push({
      entry: {
        commit_id: c.id,
        obj_id: node.type === 'file' ? node.id : node.oid,
        obj_name: baseOf(path),
        is_dir: node.type === 'dir',
        parent_dir: parentOf(path) === '/' ? '/' : `${parentOf(path)}/`,
        size,
        deleted_time: new Date(c.ctime * 1000).toISOString(),
        scan_stat: null,
      },
      node: structuredClone(node),
    });
    this.trashed.set(repoId, list);
    // the deleted file's history ends; its versions stay readable by commit (with the deletion's commit)
    if (node.type === 'file') {
      const k = `${repoId}\u0000${path}`;
      this.goneVersions.push(...(this.versions.get(k) ?? []).map((v) => ({ ...v, k })));
      this.goneVersions.push({ commit: c.id, ctime: c.ctime, id: node.id, size, k });
      this.versions.delete(k);
    }
  }

  private readonly goneVersions: { commit: string; ctime: number; id: string; size: number; k: string }[] = [];

  private versionAt(repoId: string, path: string, commit: string) {
    const k = `${repoId}\u0000${path}`;
    return (
      (this.versions.get(k) ?? []).find((w) => w.commit === commit) ??
      this.goneVersions.find((w) => w.k === k && w.commit === commit)
    );
  }

  async fileHistory(repoId: string, path: string): Promise<CommitRecord[]> {
    this.hit('fileHistory');
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') throw apiError('not_found', 404, 'file history', 'File not found.');
    return [...(this.versions.get(`${repoId}\u0000${path}`) ?? [])]
      .map((v) => ({
        id: v.commit,
        parent_id: null,
        second_parent_id: null,
        root_id: ZERO,
        repo_id: repoId,
        creator: '',
        creator_name: 'me@example.com',
        ctime: v.ctime,
        desc: 'Modified',
        rev_file_id: v.id,
        rev_file_size: v.size,
      }))
      .reverse();
  }

  async fileRevisionLink(repoId: string, path: string, commitId: string): Promise<string> {
    this.hit('fileRevisionLink');
    const v = this.versionAt(repoId, path, commitId);
    if (!v) throw apiError('not_found', 404, 'file revision link', 'Revision not found.');
    return `fake://files/${v.id}/${encodeURIComponent(baseOf(path))}`;
  }

  async libraryTrash(
    repoId: string,
    opts: { path?: string; perPage?: number; scanStat?: string | null },
  ): Promise<{ data: TrashEntry[]; scan_stat: string | null; more: boolean }> {
    this.hit('libraryTrash');
    this.repo(repoId);
    // as real servers: one entry per path (the latest deletion), none for what is back at its path
    const seen = new Set<string>();
    const all = [...(this.trashed.get(repoId) ?? [])]
      .reverse()
      .map((t) => t.entry)
      .filter((e) => {
        const path = `${e.parent_dir}${e.obj_name}`;
        if (seen.has(path)) return false;
        seen.add(path);
        return this.nodeAt(repoId, path)?.type !== (e.is_dir ? 'dir' : 'file');
      });
    const from = Number(opts.scanStat ?? 0);
    const per = opts.perPage ?? 100;
    const data = all.slice(from, from + per);
    const more = from + per < all.length;
    return { data, scan_stat: more ? String(from + per) : null, more };
  }

  async revertFile(repoId: string, path: string, commitId: string): Promise<void> {
    this.hit('revertFile');
    const v = this.versionAt(repoId, path, commitId);
    if (!v) throw apiError('not_found', 404, 'revert file', 'File not found in that revision.');
    this.putDir(repoId, parentOf(path));
    this.dirAt(repoId, parentOf(path)).children.set(baseOf(path), { type: 'file', id: v.id, mtime: now() });
    this.touch(repoId, parentOf(path));
    this.noteVersion(repoId, path);
  }

  async revertDir(repoId: string, path: string, commitId: string): Promise<void> {
    this.hit('revertDir');
    const t = this.trashed.get(repoId)?.find((w) => w.entry.commit_id === commitId && w.node.type === 'dir');
    if (!t) throw apiError('not_found', 404, 'revert folder', 'Folder not found in that revision.');
    this.putDir(repoId, parentOf(path));
    const d = this.dirAt(repoId, parentOf(path));
    // a taken name: " (n)" after the whole name, as real servers name a restored folder
    let name = baseOf(path);
    for (let i = 1; d.children.has(name); i++) name = `${baseOf(path)} (${i})`;
    d.children.set(name, structuredClone(t.node));
    this.touch(repoId, parentOf(path));
  }

  /** as seafile-server 10.0: a move within a library fails (500) for a name holding '"' or '\\' */
  unescapedMoveNames = false;

  /** a Community Edition server: no file locks (as the client reports it once it knows) */
  communityEdition = false;

  /** the real client learns this once (server-info), so it is not counted as a call */
  async supportsFileLocks(): Promise<boolean> {
    return !this.communityEdition;
  }

  private noLocks(op: string): void {
    if (this.communityEdition) throw apiError('unsupported', 0, op, 'this server does not support file locks');
  }

  async lockFile(repoId: string, path: string): Promise<void> {
    this.hit('lockFile');
    this.noLocks('lock file');
    const n = this.nodeAt(repoId, path);
    if (!n || n.type !== 'file') throw apiError('not_found', 404, 'lock file');
    if (n.lockedBy && n.lockedBy !== 'me@example.com') throw apiError('forbidden', 403, 'lock file', 'File is locked');
    this.setLockOwner(repoId, path, 'me@example.com');
  }

  async unlockFile(repoId: string, path: string): Promise<void> {
    this.hit('unlockFile');
    this.noLocks('unlock file');
    const n = this.nodeAt(repoId, path);
    if (!n || n.type !== 'file') throw apiError('not_found', 404, 'unlock file');
    if (n.lockedBy && n.lockedBy !== 'me@example.com')
      throw apiError('forbidden', 403, 'unlock file', 'File is locked');
    this.setLockOwner(repoId, path, null);
  }

  /** the file's last modifier as the listing shows it */
  setModifier(repoId: string, path: string, email: string): void {
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') throw new Error(`no file ${path}`);
    n.modifier = email;
    this.touch(repoId, parentOf(path));
  }

  /** share links made so far (by createShareLink or a test) */
  readonly shareLinks: ShareLink[] = [];
  private linkSerial = 0;

  async listShareLinks(opts: { repoId?: string; path?: string } = {}): Promise<ShareLink[]> {
    this.hit('listShareLinks');
    return this.shareLinks.filter(
      // a folder's path is asked without its trailing slash and listed with it, as seahub normalises it
      (l) =>
        (!opts.repoId || l.repo_id === opts.repoId) &&
        (!opts.path || l.path.replace(/(.)\/$/, '$1') === opts.path.replace(/(.)\/$/, '$1')),
    );
  }

  /** as seahub's v2.1 create: any link of the path, an expired one too, refuses a new one */
  async createShareLink(repoId: string, path: string): Promise<ShareLink> {
    this.hit('createShareLink');
    const n = this.nodeAt(repoId, path);
    if (!n) throw apiError('not_found', 404, 'create share link', 'file/folder not found.');
    const have = this.shareLinks.find((l) => l.repo_id === repoId && l.path.replace(/(.)\/$/, '$1') === path);
    if (have) throw apiError('bad_request', 400, 'create share link', `Share link ${have.token} already exists.`);
    const token = (++this.linkSerial).toString(16).padStart(20, '0');
    const link: ShareLink = {
      username: 'me@example.com',
      repo_id: repoId,
      ctime: new Date().toISOString(),
      expire_date: null,
      token,
      view_cnt: 0,
      link: `https://fake.example.com/${n.type === 'dir' ? 'd' : 'f'}/${token}/`,
      // folders are listed with a trailing slash, as real servers list them
      path: n.type === 'dir' ? `${path}/` : path,
      is_expired: false,
      is_dir: n.type === 'dir',
    };
    this.shareLinks.push(link);
    return link;
  }

  async deleteShareLink(token: string): Promise<void> {
    this.hit('deleteShareLink');
    const i = this.shareLinks.findIndex((l) => l.token === token);
    if (i >= 0) this.shareLinks.splice(i, 1);
  }

  /** lock a file as `owner` would (the fake's own account is me@example.com); null unlocks */
  setLockOwner(repoId: string, path: string, owner: string | null): void {
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') throw new Error(`no file ${path}`);
    n.lockedBy = owner ?? undefined;
    this.touch(repoId, parentOf(path));
  }

  putDir(repoId: string, path: string): void {
    let cur = '/';
    for (const part of split(path)) {
      const d = this.dirAt(repoId, cur);
      if (!d.children.has(part))
        d.children.set(part, { type: 'dir', oid: newOid(), mtime: now(), children: new Map() });
      this.touch(repoId, cur);
      cur = cur === '/' ? `/${part}` : `${cur}/${part}`;
    }
  }

  content(repoId: string, path: string): Buffer | undefined {
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') return undefined;
    return n.id === ZERO ? Buffer.alloc(0) : this.blobs.get(n.id);
  }

  names(repoId: string, dir: string): string[] {
    return [...this.dirAt(repoId, dir).children.keys()].sort();
  }

  /** the bytes of the libraries `owner` owns (this account's by default) */
  usage(owner = 'me@example.com'): number {
    let total = 0;
    const walk = (d: FDir) => {
      for (const n of d.children.values()) {
        if (n.type === 'dir') walk(n);
        else total += n.id === ZERO ? 0 : this.blobs.get(n.id)!.length;
      }
    };
    for (const r of this.repos.values()) if (r.lib.owner === owner) walk(r.root);
    return total;
  }

  // ---- SeafileApi ----
  async accountInfo(): Promise<AccountInfo> {
    this.hit('accountInfo');
    return { usage: this.usage(), total: this.quotaTotal, email: this.accountEmail };
  }

  async listLibraries(_type?: LibraryType): Promise<Library[]> {
    this.hit('listLibraries');
    return [...this.repos.values()].map((r) => ({ ...r.lib }));
  }

  async getLibrary(repoId: string): Promise<LibraryInfo> {
    this.hit('getLibrary');
    const l = this.repo(repoId).lib;
    return { ...l };
  }

  async unlockLibrary(): Promise<void> {
    this.hit('unlockLibrary');
  }

  /** delay of every folder listing, to model a distant server */
  listDelayMs = 0;

  async listDir(
    repoId: string,
    path: string,
    opts?: { oid?: string; type?: 'f' | 'd'; recursive?: boolean },
  ): Promise<DirListing> {
    this.hit('listDir');
    if (this.listDelayMs) await new Promise((r) => setTimeout(r, this.listDelayMs));
    const d = this.dirAt(repoId, path);
    if (opts?.oid && opts.oid === d.oid) return { uptodate: true, oid: d.oid };
    if (opts?.recursive) {
      // the whole subtree, flat, each entry naming its folder (as the client normalises parent_dir)
      const entries: DirEntry[] = [];
      const walk = (dir: string) => {
        for (const e of this.entriesOf(this.dirAt(repoId, dir))) {
          if (!opts.type || (opts.type === 'f') === (e.type === 'file')) entries.push({ ...e, parent_dir: dir });
          if (e.type === 'dir') walk(dir === '/' ? `/${e.name}` : `${dir}/${e.name}`);
        }
      };
      walk(path);
      return { uptodate: false, oid: d.oid, entries };
    }
    return { uptodate: false, oid: d.oid, entries: this.entriesOf(d) };
  }

  private entriesOf(d: FDir): DirEntry[] {
    const entries: DirEntry[] = [];
    for (const [name, n] of d.children) {
      if (n.type === 'dir') entries.push({ type: 'dir', name, id: n.children.size ? n.oid : ZERO, mtime: n.mtime });
      else {
        const size = n.id === ZERO ? 0 : this.blobs.get(n.id)!.length;
        const lock = n.lockedBy
          ? { is_locked: true, lock_owner: n.lockedBy, locked_by_me: n.lockedBy === 'me@example.com' }
          : {};
        const modifier = n.modifier ? { modifier_email: n.modifier } : {};
        entries.push({ type: 'file', name, id: n.id, mtime: n.mtime, size, ...lock, ...modifier });
      }
    }
    return entries;
  }

  async mkdir(repoId: string, path: string, opts?: { createParents?: boolean }): Promise<void> {
    if (this.mkdirGate) await this.mkdirGate();
    this.hit('mkdir');
    if (this.refuseMkdirNames?.test(baseOf(path))) throw apiError('invalid_name', 400, 'mkdir', 'Folder name invalid.');
    if (opts?.createParents) {
      this.putDir(repoId, path);
      return;
    }
    const d = this.dirAt(repoId, parentOf(path));
    const name = this.freeName(d, nfc(baseOf(path)));
    d.children.set(name, { type: 'dir', oid: newOid(), mtime: now(), children: new Map() });
    this.touch(repoId, parentOf(path));
  }

  private renameNode(op: string, repoId: string, path: string, newName: string, type: 'file' | 'dir'): void {
    const d = this.dirAt(repoId, parentOf(path));
    const n = d.children.get(baseOf(path));
    if (!n || n.type !== type) throw apiError('not_found', 404, op);
    if (newName === baseOf(path)) throw apiError('conflict', 409, op);
    d.children.delete(baseOf(path));
    d.children.set(this.freeName(d, nfc(newName)), n);
    this.touch(repoId, parentOf(path));
  }

  async renameDir(repoId: string, path: string, newName: string): Promise<void> {
    this.hit('renameDir');
    this.renameNode('renameDir', repoId, path, newName, 'dir');
  }

  async deleteDir(repoId: string, path: string): Promise<void> {
    this.hit('deleteDir');
    const d = this.dirAt(repoId, parentOf(path));
    const gone = d.children.get(baseOf(path));
    if (!gone) throw apiError('not_found', 404, 'deleteDir');
    this.noteDeleted(repoId, path, gone);
    d.children.delete(baseOf(path));
    this.touch(repoId, parentOf(path));
  }

  async fileDetail(repoId: string, path: string): Promise<FileDetail> {
    this.hit('fileDetail');
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') throw apiError('not_found', 404, 'fileDetail');
    return { type: 'file', id: n.id, name: baseOf(path), mtime: n.mtime, size: this.content(repoId, path)!.length };
  }

  async downloadLink(repoId: string, path: string): Promise<DownloadLink> {
    this.hit('downloadLink');
    const n = this.nodeAt(repoId, path);
    if (n?.type !== 'file') throw apiError('not_found', 404, 'downloadLink');
    return { url: `fake://files/${n.id}/${encodeURIComponent(baseOf(path))}`, oid: n.id };
  }

  /** offer the file server's direct URL (Seafile 12.0+): `fake://repos/{repo}/files/{path}`, serving what is there now */
  directDownloads = false;
  /** ...which the file server then does not route (404), as a front that passes only /seafhttp/files/ */
  directMissing = false;

  directDownloadUrl(repoId: string, path: string): string | null {
    if (!this.directDownloads) return null;
    return `fake://repos/${repoId}/files/${path.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
  }

  /** the content id a download URL names: a link's, or what the path of a direct URL holds now */
  private blobIdOf(url: string): string | undefined {
    const m = /^fake:\/\/repos\/([^/]+)\/files\/(.*)$/.exec(url);
    if (!m) return url.split('/')[3];
    const n = this.nodeAt(m[1], '/' + m[2].split('/').map(decodeURIComponent).join('/'));
    return n?.type === 'file' ? n.id : undefined;
  }

  async download(url: string, range?: { start: number; end?: number }): Promise<RangeDownload> {
    this.hit(url.startsWith('fake://repos/') ? 'directDownload' : 'download');
    if (this.directMissing && url.startsWith('fake://repos/'))
      throw apiError('not_found', 404, 'download', 'Not Found');
    const id = this.blobIdOf(url) ?? '';
    const data = id === ZERO ? Buffer.alloc(0) : this.blobs.get(id);
    if (!data) throw apiError('forbidden', 403, 'download', 'Bad access token');
    // bytes count as served when the reader takes them (a stream may be dropped early)
    const counted = (b: Buffer) =>
      Readable.from(
        (function* (self: FakeApi) {
          for (const p of pieces(b)) {
            self.bytesServed += p.length;
            yield p;
          }
        })(this),
      );
    if (!range || this.ignoreRange || data.length === 0) {
      return { status: 200, start: 0, totalSize: data.length, etag: id, body: counted(data) };
    }
    const end = Math.min(data.length - 1, range.end ?? data.length - 1);
    const slice = data.subarray(range.start, end + 1);
    return { status: 206, start: range.start, totalSize: data.length, etag: id, body: counted(slice) };
  }

  // ---- optional capability: streaming GET (read path) ----
  /**
   * Like the bare-socket GET: Range from `start` to `end` or the end (200 with the
   * whole file when ignoreRange), the body written straight into the sink's
   * buffers, at most 64 KiB per turn of the event loop, paused and resumed
   * like a socket; a failure (failNext 'streamGet', an unknown blob) comes
   * through sink.end.
   */
  streamGet(url: string, start: number, sink: StreamSink, opts?: { idleMs?: number; end?: number }): StreamControl {
    let paused = false;
    let done = false;
    let queued = false;
    let body: Buffer = Buffer.alloc(0);
    let pos = 0;
    const finish = (err: unknown | null) => {
      if (done) return;
      done = true;
      sink.end(err);
    };
    const pump = () => {
      queued = false;
      if (done || paused) return;
      if (pos < body.length) {
        const dst = sink.space();
        const n = Math.min(dst.length, body.length - pos, 64 * 1024);
        body.copy(dst, 0, pos, pos + n);
        pos += n;
        this.bytesServed += n;
        sink.wrote(n);
      }
      if (pos >= body.length) finish(null);
      else schedule();
    };
    const schedule = () => {
      if (queued || done || paused) return;
      queued = true;
      setImmediate(pump);
    };
    setImmediate(() => {
      try {
        this.hit('streamGet');
      } catch (e) {
        return finish(e);
      }
      if (this.directMissing && url.startsWith('fake://repos/'))
        return finish(apiError('not_found', 404, 'download', 'HTTP 404'));
      const id = this.blobIdOf(url) ?? '';
      const data = id === ZERO ? Buffer.alloc(0) : this.blobs.get(id);
      if (!data) return finish(apiError('forbidden', 403, 'download', 'HTTP 403'));
      try {
        if (this.ignoreRange || data.length === 0) {
          body = data;
          sink.head(200, 0, data.length, id);
        } else {
          if (start >= data.length) return finish(apiError('bad_request', 416, 'download', 'HTTP 416'));
          body = data.subarray(start, Math.min(data.length - 1, opts?.end ?? data.length - 1) + 1);
          sink.head(206, start, body.length, id);
        }
      } catch (e) {
        return finish(e); // the sink refused the answer (another version than it reads)
      }
      if (body.length === 0) return finish(null);
      schedule();
    });
    return {
      pause: () => {
        paused = true;
      },
      resume: () => {
        paused = false;
        schedule();
      },
      destroy: () => finish(null),
    };
  }

  async createFile(repoId: string, path: string): Promise<void> {
    this.hit('createFile');
    const d = this.dirAt(repoId, parentOf(path));
    d.children.set(this.freeName(d, nfc(baseOf(path))), { type: 'file', id: ZERO, mtime: now() });
    this.touch(repoId, parentOf(path));
  }

  async renameFile(repoId: string, path: string, newName: string): Promise<void> {
    this.hit('renameFile');
    this.renameNode('renameFile', repoId, path, newName, 'file');
  }

  private moveNode(
    op: string,
    repoId: string,
    srcDir: string,
    name: string,
    dstRepo: string,
    dstDir: string,
    copy: boolean,
  ): void {
    const s = this.dirAt(repoId, srcDir);
    const n = s.children.get(name);
    if (!n) throw apiError('not_found', 404, op);
    if (this.unescapedMoveNames && !copy && repoId === dstRepo && /["\\]/.test(name))
      throw apiError('server', 500, op, 'Internal Server Error');
    const d = this.dirAt(dstRepo, dstDir);
    if (!copy) s.children.delete(name);
    d.children.set(this.freeName(d, name), copy ? structuredClone(n) : n);
    this.touch(repoId, srcDir);
    this.touch(dstRepo, dstDir);
  }

  async moveFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    this.hit('moveFile');
    this.moveNode('moveFile', repoId, parentOf(path), baseOf(path), dstRepo, dstDir, false);
  }

  async copyFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    this.hit('copyFile');
    this.moveNode('copyFile', repoId, parentOf(path), baseOf(path), dstRepo, dstDir, true);
  }

  async deleteFile(repoId: string, path: string): Promise<void> {
    this.hit('deleteFile');
    const d = this.nodeAt(repoId, parentOf(path));
    const gone = d?.type === 'dir' ? d.children.get(baseOf(path)) : undefined;
    if (gone) this.noteDeleted(repoId, path, gone);
    if (d && d.type === 'dir' && d.children.delete(baseOf(path))) this.touch(repoId, parentOf(path));
  }

  async batchMove(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    this.hit('batchMove');
    for (const n of names) this.moveNode('batchMove', repoId, srcDir, n, dstRepo, dstDir, false);
  }

  async batchCopy(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    this.hit('batchCopy');
    for (const n of names) this.moveNode('batchCopy', repoId, srcDir, n, dstRepo, dstDir, true);
  }

  async batchDelete(repoId: string, srcDir: string, names: string[]): Promise<void> {
    this.hit('batchDelete');
    const d = this.dirAt(repoId, srcDir);
    for (const n of names) {
      const gone = d.children.get(n);
      if (gone) this.noteDeleted(repoId, srcDir === '/' ? `/${n}` : `${srcDir}/${n}`, gone);
      d.children.delete(n);
    }
    this.touch(repoId, srcDir);
  }

  /** as real servers: 443 when the library's owner is over their quota */
  private checkQuota(op: string, repoId: string): void {
    const owner = this.repo(repoId).lib.owner;
    const total = owner === 'me@example.com' ? this.quotaTotal : (this.ownerQuotas.get(owner) ?? -2);
    if (total > 0 && this.usage(owner) >= total) throw apiError('quota', 443, op, 'Out of quota.');
  }

  async uploadLink(repoId: string, dir: string): Promise<string> {
    this.hit('uploadLink');
    this.repo(repoId);
    if (this.repo(repoId).lib.permission === 'r') throw apiError('forbidden', 403, 'uploadLink');
    this.checkQuota('uploadLink', repoId);
    return `fake-upload://${repoId}${dir}`;
  }

  /** store `"` in uploaded names as %22, as multipart filenames arrive at real file servers */
  mangleQuotes = false;
  /**
   * Names whose next uploads (upload, uploadMany, update; how many) are
   * stored with a stray CR at their end, as Seafile's C fileserver sometimes does.
   */
  readonly storeWithCr = new Map<string, number>();

  /** `data` as the server stores it for the file `name` (see storeWithCr) */
  private asStored(name: string, data: Buffer): Buffer {
    const left = this.storeWithCr.get(name) ?? 0;
    if (left <= 0) return data;
    this.storeWithCr.set(name, left - 1);
    return Buffer.concat([data, Buffer.from('\r')]);
  }

  async upload(
    link: string,
    parentDir: string,
    localFile: string,
    rawName: string,
    opts?: { replace?: boolean },
  ): Promise<UploadedFile[]> {
    this.hit('upload');
    const name = uploadName(this.mangleQuotes ? rawName.replace(/"/g, '%22') : rawName);
    tempNameFits('upload', name);
    if (this.uploadGate) await this.uploadGate();
    const repoId = link.slice('fake-upload://'.length, 'fake-upload://'.length + 36);
    this.checkQuota('upload', repoId);
    const data = this.asStored(name, await readFile(localFile));
    const d = this.dirAt(repoId, parentDir);
    const existing = d.children.get(name);
    const final = opts?.replace && existing?.type === 'file' ? name : this.freeName(d, name);
    const id = this.store(data);
    d.children.set(final, { type: 'file', id, mtime: now() });
    this.touch(repoId, parentDir);
    this.noteVersion(repoId, parentDir === '/' ? `/${final}` : `${parentDir}/${final}`);
    return [{ name: final, id, size: data.length }];
  }

  /** several files in one POST (the vfs' UploadMany capability) */
  uploadMany = async (
    link: string,
    parentDir: string,
    files: { path: string; name: string; data?: Buffer }[],
    opts: { replace: boolean; lastModify?: number },
  ): Promise<UploadedFile[]> => {
    this.hit('uploadMany');
    if (this.uploadGate) await this.uploadGate();
    const repoId = link.slice('fake-upload://'.length, 'fake-upload://'.length + 36);
    this.checkQuota('upload', repoId);
    const d = this.dirAt(repoId, parentDir);
    const out: UploadedFile[] = [];
    for (const f0 of files) {
      const f = { ...f0, name: uploadName(this.mangleQuotes ? f0.name.replace(/"/g, '%22') : f0.name) };
      tempNameFits('upload', f.name);
      const data = this.asStored(f.name, f.data ? Buffer.from(f.data) : await readFile(f.path));
      const existing = d.children.get(f.name);
      const final = opts.replace && existing?.type === 'file' ? f.name : this.freeName(d, f.name);
      const id = this.store(data);
      // the last_modify field, as real servers keep it
      const mtime =
        opts.lastModify !== undefined && !this.ignoreLastModify ? Math.floor(opts.lastModify / 1000) : now();
      d.children.set(final, { type: 'file', id, mtime });
      out.push({ name: final, id, size: data.length });
    }
    this.touch(repoId, parentDir);
    return out;
  };

  // ---- optional capabilities (multi-file and streaming uploads): absent until a test offers them ----

  uploadBatch?: UploadBatch;
  startUploadStream?: StartUploadStream;

  /** offer uploadMany as the uploadBatch capability (new small files of a folder go in one call) */
  offerUploadBatch(): this {
    this.uploadBatch = this.uploadMany;
    return this;
  }

  /**
   * Offer a streaming upload: it keeps the pieces written to it and, at
   * finish, stores them at the link's folder (or the target_file of an update
   * link); an aborted stream stores nothing, as on a real server.
   */
  offerUploadStreams(): this {
    this.startUploadStream = async (link, leading, name) => {
      this.hit('startUploadStream');
      const m = /^fake-(upload|update):\/\/([0-9a-f-]{36})(.*)$/.exec(link);
      if (!m) throw apiError('bad_request', 400, 'upload', `not a fake transfer link: ${link}`);
      const target =
        m[1] === 'update'
          ? leading.find(([k]) => k === 'target_file')?.[1]
          : `${m[3] === '/' ? '' : m[3]}/${uploadName(name)}`;
      if (!target) throw apiError('bad_request', 400, 'upload', 'no target_file');
      const pieces: Buffer[] = [];
      let sent = 0;
      let ended = false;
      const up: FileUploadStream = {
        get sent() {
          return sent;
        },
        write: async (b) => {
          if (ended) throw new Error('write after finish or abort');
          pieces.push(Buffer.from(b)); // the caller reuses its buffers
          sent += b.length;
        },
        finish: async () => {
          if (ended) throw new Error('finished or aborted already');
          ended = true;
          this.hit('streamFinish');
          if (this.uploadGate) await this.uploadGate();
          this.putFile(m[2], target, this.asStored(baseOf(target), Buffer.concat(pieces)));
          return this.fileIdAt(m[2], target);
        },
        abort: () => {
          ended = true;
        },
      };
      return up;
    };
    return this;
  }

  // ---- optional capability: uploads by blocks (absent until a test offers it) ----

  blocksLink?: SeafileApi['blocksLink'];
  uploadBlocks?: SeafileApi['uploadBlocks'];
  commitBlocks?: SeafileApi['commitBlocks'];
  fileBlocks?: SeafileApi['fileBlocks'];
  /** blocks the fake server holds, by SHA-1 */
  readonly blockStore = new Map<string, Buffer>();
  /** bytes of blocks received by uploadBlocks, and the blocks */
  blockBytesIn = 0;
  blocksIn = 0;
  /** the cut of files committed or stored here, as op=downloadblks lists them (a test may change it: a CDC file) */
  blockCut = 8 * 1024 * 1024;
  /** answers of blocksLink: 'ok', or a status to refuse with (404, 405: no such path) */
  blocksAnswer: 'ok' | number = 'ok';

  /** Offer the block path, cutting files into `blockSize` blocks as the server does. */
  offerBlocks(blockSize = 8 * 1024 * 1024): this {
    this.blockCut = blockSize;
    const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
    const repoOfLink = (link: string) => link.replace(/^fake-[a-z]+:\/\//, '').slice(0, 36);
    this.blocksLink = async (repoId, dir, ids) => {
      this.hit('blocksLink');
      if (this.blocksAnswer !== 'ok')
        throw apiError(
          this.blocksAnswer === 404 ? 'not_found' : this.blocksAnswer === 403 ? 'forbidden' : 'bad_request',
          this.blocksAnswer,
          'blocks link',
        );
      this.dirAt(repoId, dir);
      if (this.repo(repoId).lib.permission === 'r') throw apiError('forbidden', 403, 'blocks link');
      this.checkQuota('blocksLink', repoId);
      return {
        rawUrl: `fake-rawblks://${repoId}`,
        commitUrl: `fake-commitblks://${repoId}`,
        missing: ids.filter((id) => !this.blockStore.has(id)),
      };
    };
    this.uploadBlocks = async (_url, pieces) => {
      this.hit('uploadBlocks');
      if (this.uploadGate) await this.uploadGate();
      for (const p of pieces) {
        let data = p.data ? p.data.subarray(0, p.length) : undefined;
        if (!data) {
          const all = await readFile(p.path!);
          data = all.subarray(p.offset, p.offset + p.length);
        }
        // as the real file servers: a block whose bytes are not its id fails the request
        if (sha1(data) !== p.id) throw apiError('server', 500, 'upload blocks', 'Internal error');
        this.blockStore.set(p.id, Buffer.from(data));
        this.blockBytesIn += data.length;
        this.blocksIn++;
      }
    };
    this.commitBlocks = async (url, c) => {
      this.hit('commitBlocks');
      if (this.uploadGate) await this.uploadGate();
      const repoId = repoOfLink(url);
      // as the C fileserver: its quota check stats every block first, so a missing one answers 443
      if (!c.ids.every((id) => this.blockStore.has(id))) throw apiError('quota', 443, 'commit blocks', 'Out of quota.');
      this.checkQuota('commitBlocks', repoId);
      const data = Buffer.concat(c.ids.map((id) => this.blockStore.get(id)!));
      if (data.length !== c.size) throw new Error(`fake: commit of ${data.length} bytes said ${c.size}`);
      const path = c.parentDir === '/' ? `/${c.name}` : `${c.parentDir}/${c.name}`;
      const d = this.dirAt(repoId, c.parentDir);
      const had = d.children.get(c.name);
      if (had && !c.replace) throw new Error('fake: commit without replace');
      const id = this.store(data);
      const mtime = c.lastModify !== undefined && !this.ignoreLastModify ? Math.floor(c.lastModify / 1000) : now();
      d.children.set(c.name, { type: 'file', id, mtime });
      this.touch(repoId, c.parentDir);
      this.noteVersion(repoId, path);
      return id;
    };
    this.fileBlocks = async (repoId, path) => {
      this.hit('fileBlocks');
      const n = this.nodeAt(repoId, path);
      if (n?.type !== 'file') throw apiError('not_found', 404, 'file blocks');
      return { fileId: n.id, ids: this.cutBlocks(this.content(repoId, path)!), encrypted: false };
    };
    return this;
  }

  /** the blocks of `data` in the fake server's cut, stored as the server stores a file's blocks */
  cutBlocks(data: Buffer): string[] {
    const out: string[] = [];
    for (let o = 0; o < data.length; o += this.blockCut) {
      const b = data.subarray(o, o + this.blockCut);
      const id = createHash('sha1').update(b).digest('hex');
      this.blockStore.set(id, Buffer.from(b));
      out.push(id);
    }
    return out;
  }

  /** the id of the file at path ('': none) */
  fileIdAt(repoId: string, path: string): string {
    const n = this.dirAt(repoId, parentOf(path)).children.get(baseOf(path));
    return n && n.type === 'file' ? n.id : '';
  }

  async updateLink(repoId: string, dir: string): Promise<string> {
    this.hit('updateLink');
    if (this.repo(repoId).lib.permission === 'r') throw apiError('forbidden', 403, 'updateLink');
    this.checkQuota('updateLink', repoId);
    return `fake-update://${repoId}${dir}`;
  }

  /** the lastModify (ms) of each update call, in order */
  readonly updateTimes: (number | undefined)[] = [];

  async update(
    link: string,
    targetFile: string,
    localFile: string,
    opts: { lastModify?: number } = {},
  ): Promise<string> {
    this.updateTimes.push(opts.lastModify);
    this.hit('update');
    if (this.uploadGate) await this.uploadGate();
    const repoId = link.slice('fake-update://'.length, 'fake-update://'.length + 36);
    this.checkQuota('update', repoId);
    const n = this.nodeAt(repoId, targetFile);
    if (n?.type !== 'file') throw apiError('target_missing', 441, 'update', 'File does not exist.');
    const id = this.store(this.asStored(baseOf(targetFile), await readFile(localFile)));
    if (this.ignoreLastModify && id === n.id) return id;
    n.id = id;
    n.mtime = opts.lastModify !== undefined && !this.ignoreLastModify ? Math.floor(opts.lastModify / 1000) : now();
    this.touch(repoId, parentOf(targetFile));
    this.noteVersion(repoId, targetFile);
    return n.id;
  }
}

function* pieces(b: Buffer): Generator<Buffer> {
  for (let i = 0; i < b.length; i += 64 * 1024) yield b.subarray(i, i + 64 * 1024);
}

/** A gate that holds every upload until opened. */
export function gate(): { wait: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { wait: () => p, open };
}

// ---- helpers to drive a Vfs the way the FUSE adapter does ----
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants as FC } from 'node:fs';
import { Vfs, type VfsOptions } from '../../src/vfs/vfs.js';
import { errnoOf } from '../../src/vfs/errors.js';

export async function makeVfs(
  api: FakeApi,
  opts: Partial<VfsOptions> = {},
): Promise<{ vfs: Vfs; cacheDir: string; cleanup: () => Promise<void> }> {
  const cacheDir = opts.cacheDir ?? (await mkdtemp(join(tmpdir(), 'seafs-unit-')));
  const vfs = await Vfs.create(api, {
    durableJournal: false,
    writeBack: { retryBaseMs: 10 },
    probeMinMs: 20,
    ...opts,
    cacheDir,
  });
  return {
    vfs,
    cacheDir,
    cleanup: async () => {
      vfs.close();
      // the disk cache's last writes land before its folder goes (else rm meets a file written meanwhile)
      await vfs.reader.closeDisk().catch(() => {});
      await vfs.listings.flush();
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
}

/**
 * A FakeApi holding one library, 'lib', and a vfs mounting it (`opts` over
 * makeVfs's), cleaned up through `cleanups` (test/helpers/cleanup.ts).
 */
export async function vfsOnLibrary(cleanups: (() => Promise<void>)[], opts: Partial<VfsOptions> = {}) {
  const api = new FakeApi();
  const repo = api.addLibrary('lib');
  const m = await makeVfs(api, { library: 'lib', ...opts });
  cleanups.push(m.cleanup);
  return { api, repo, ...m };
}

/** create + write + flush + release, as `cp` does */
export async function writeWhole(vfs: Vfs, path: string, data: Buffer | string): Promise<void> {
  const b = Buffer.from(data);
  const fh = await vfs.create(path, 0o644);
  for (let off = 0; off < b.length; off += 128 * 1024) {
    const piece = b.subarray(off, off + 128 * 1024);
    await vfs.write(path, fh, piece, piece.length, off);
  }
  await vfs.flush(path, fh);
  await vfs.release(path, fh);
}

export async function readWhole(vfs: Vfs, path: string): Promise<Buffer> {
  const size = (await vfs.getattr(path)).size;
  const fh = await vfs.open(path, FC.O_RDONLY);
  const out = Buffer.alloc(size);
  let off = 0;
  while (off < size) {
    const n = await vfs.read(path, fh, out.subarray(off), Math.min(128 * 1024, size - off), off);
    if (n === 0) break;
    off += n;
  }
  await vfs.release(path, fh);
  return out.subarray(0, off);
}

export async function expectErrno(p: Promise<unknown>, code: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    const got = errnoOf(e);
    if (got !== code) throw new Error(`expected ${code}, got ${got}: ${(e as Error).message}`);
    return;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** a new name as real servers store it: NFC (seafile's tree operations and both fileservers normalise) */
function nfc(name: string): string {
  return name.normalize('NFC');
}

/** an upload's stored name: the C fileserver keeps what follows the last `/` or `\` (get_basename), then NFC */
function uploadName(filename: string): string {
  return nfc(filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1));
}

/** the C fileserver's temporary file is named after the upload plus 6 characters: past 255 bytes, 500 */
function tempNameFits(op: string, name: string): void {
  if (Buffer.byteLength(name, 'utf8') > 249) throw apiError('server', 500, op, 'Internal server error');
}
