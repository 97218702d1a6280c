// The server's shared state and the checks every endpoint uses: who may see
// or write a library, encrypted-library unlocks, quotas, link tokens.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Db, type RepoMeta, type User } from './store/db.js';
import { Heads } from './store/heads.js';
import { HttpError, type Form } from './http.js';
import { LoginGuard } from './auth/login-guard.js';
import { KeyedMutex } from './store/mutex.js';
import { ObjectStore } from './store/objects.js';
import { NotificationHub } from './notifications/hub.js';
import { BlockStore } from './store/block-store.js';
import { walkTree } from './store/tree.js';
import { behaviourOf, parseServerVersion, strictNameProblem, type VersionBehaviour } from './versions.js';

export interface ServerOptions {
  dataDir: string;
  host?: string;
  port?: number;
  adminEmail: string;
  adminPassword: string;
  latencyMs?: number;
  unlockTtlSec?: number; // default 3600
  linkTtlSec?: number; // default 3600
  /** largest accepted upload in bytes (442 above it); default unlimited */
  maxUploadBytes?: number;
  log?: (line: string) => void;
  /** test knob: web API requests allowed per minute and user (or address when anonymous); 429 above */
  throttlePerMin?: number;
  /** log one line per request through `log` (link tokens and passwords redacted) */
  logRequests?: boolean;
  /** seconds a request body (or a zip download) may stall before the connection is closed; default 30 */
  bodyIdleSec?: number;
  /** wrong logins per account in a window before 429 (an address gets 5 times as many); default 10 */
  loginFailLimit?: number;
  /** that window in seconds; default 300 */
  loginFailWindowSec?: number;
  /**
   * which Seafile edition to answer as (default pro). community: server-info
   * lists only "seafile-basic", listings carry no lock fields, a lock answers
   * 500 (an HTML page) and an unlock 403 "File is not locked", as seahub 10 CE does
   */
  edition?: 'community' | 'pro';
  /**
   * the seafile-server version to behave as, X.Y.Z (versions.ts lists what changes); server-info reports
   * SERVER_VERSION when it is not given
   */
  serverVersion?: string;
  /** which file server to answer as: the C one (default) or the Go one of the official 13+ images */
  fileserver?: 'c' | 'go';
  /** files a library may hold before creating one answers "too many files" (442, 447 from 12.0); default unlimited */
  maxLibraryFiles?: number;
  /** refuse emoji (U+1F300-U+1FAD6) in mkdir, create, rename and library names with 400, as the newest seahub does */
  refuseEmojiNames?: boolean;
  /** offer the notification server (websocket /notification, JWT endpoints); default on */
  notifications?: boolean;
  /** test knobs of the notification server: token lifetime (s), expiry check and ping periods (ms) */
  notificationTokenTtlSec?: number;
  notificationExpiryCheckMs?: number;
  /** seconds a block sent raw waits for a commit that uses it before it is removed; default 3600 */
  blockGraceSec?: number;
}

/** what server-info reports by default: the newest version whose behaviour this server has */
export const SERVER_VERSION = '12.0.4';

export { parseServerVersion };

export interface DownloadToken {
  repoId: string;
  fileId: string;
  size: number;
  name: string;
  reuse: boolean;
  expires: number; // ms
  encrypted: boolean;
  /** who asked for the link: an encrypted library's content needs that account's unlock (null: a share link's) */
  user: string | null;
  /** a block download token (fileserver/blocks.ts), which the file URL does not take */
  op?: 'downloadblks';
}

export interface UploadToken {
  /**
   * the token's operation: a file-server URL takes it when the URL's operation starts with it,
   * as real servers check (upload-file.c check_access_token): 'upload' also fits
   * upload-raw-blks-api and upload-blks-api, 'update' also update-blks-api
   */
  kind: 'upload' | 'update' | 'upload-blks-api' | 'update-blks-api';
  repoId: string;
  dir: string; // normalised '/a/b'
  user: string;
  expires: number;
  /** handed out by an upload link (to anyone holding it): its uploads and commits go into `dir` only */
  link?: boolean;
}

export interface Req {
  raw: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  params: string[];
  /** e.g. http://127.0.0.1:8000 as the client reached us (for links) */
  base: string;
  user: User | null;
  form(opts?: { json?: boolean }): Promise<Form>;
}

export type Permission = 'r' | 'rw';

export class Ctx {
  readonly db: Db;
  readonly store: ObjectStore;
  readonly blocks: BlockStore;
  readonly heads: Heads;
  readonly tmpDir: string;
  readonly downloads = new Map<string, DownloadToken>();
  readonly uploads = new Map<string, UploadToken>();
  private unlocks = new Map<string, number>(); // `${user}\n${repo}` -> expiry ms
  private quotaMutex = new KeyedMutex();
  readonly loginGuard: LoginGuard;
  /** the notification server; null when turned off */
  readonly notifications: NotificationHub | null;
  /** sync tokens handed out by download-info: token -> library and user (kept until a restart) */
  readonly syncTokens = new Map<string, { repo: string; user: string }>();

  /** what the version asked for changes (versions.ts) */
  readonly behaviour: VersionBehaviour;

  constructor(readonly opts: ServerOptions) {
    this.behaviour = behaviourOf(opts.serverVersion);
    this.db = new Db(opts.dataDir);
    this.db.virtualIds = this.behaviour.virtualIds;
    this.store = new ObjectStore(opts.dataDir);
    this.blocks = new BlockStore(opts.dataDir, this.store);
    this.heads = new Heads(opts.dataDir, this.store);
    this.tmpDir = path.join(opts.dataDir, 'tmp');
    this.loginGuard = new LoginGuard({
      failLimit: opts.loginFailLimit ?? 10,
      windowMs: (opts.loginFailWindowSec ?? 300) * 1000,
    });
    this.notifications =
      opts.notifications === false
        ? null
        : new NotificationHub({
            tokenTtlSec: opts.notificationTokenTtlSec,
            expiryCheckMs: opts.notificationExpiryCheckMs,
          });
    const hub = this.notifications;
    if (hub) {
      this.heads.onMove = (repo, commitId) => hub.repoUpdate(repo, commitId);
      this.db.onLockChange = (repo, p, owner) => hub.fileLockChanged(repo, p, owner ? 'locked' : 'unlocked', owner);
    }
  }

  /** the sync token of `user` on `repo` (download-info's token), made at first need */
  syncToken(repo: string, user: string): string {
    for (const [t, v] of this.syncTokens) if (v.repo === repo && v.user === user) return t;
    const t = randomBytes(20).toString('hex');
    this.syncTokens.set(t, { repo, user });
    return t;
  }

  /** Seafile Pro (file locks) rather than Community Edition */
  get pro(): boolean {
    return this.opts.edition !== 'community';
  }

  get serverVersion(): string {
    return this.opts.serverVersion ?? SERVER_VERSION;
  }

  /**
   * Whether uploads keep the time their last_modify field sends: seafile-server
   * 12.0.4 and later; older ones (10.0 here) give a file its upload's time.
   */
  get keepsLastModify(): boolean {
    return this.behaviour.keepsLastModify;
  }

  /** the Go file server rather than the C one */
  get goFileserver(): boolean {
    return this.opts.fileserver === 'go';
  }

  /**
   * `name` (already checked) refused as the newest seahub's is_valid_dirent_name does (emoji), or
   * as 13.0 does in create and rename (strictNames); uploads are not checked
   */
  checkDirentName(name: string): string {
    if (this.opts.refuseEmojiNames && /[\u{1F300}-\u{1FAD6}]/u.test(name)) throw new HttpError(400, 'name invalid.');
    if (this.behaviour.strictNames && strictNameProblem(name)) throw new HttpError(400, 'name invalid.');
    return name;
  }

  /** "too many files in library" when `repo` holds maxLibraryFiles files already (442, 447 from 12.0) */
  async checkFileCount(repoId: string): Promise<void> {
    const max = this.opts.maxLibraryFiles;
    if (max === undefined) return;
    let files = 0;
    await walkTree(this.store, (await this.heads.get(repoId)).root_id, [], (e) => void (e.type === 'file' && files++));
    if (files >= max)
      throw new HttpError(this.behaviour.tooManyFilesStatus, 'The number of files in library exceeds the limit');
  }

  /** the e-mail of account `id`: from 11.0 its contact (login) e-mail, else the id itself */
  contactOf(id: string): string {
    return this.db.user(id)?.contactEmail ?? id;
  }

  get unlockTtlMs(): number {
    return (this.opts.unlockTtlSec ?? 3600) * 1000;
  }
  get linkTtlMs(): number {
    return (this.opts.linkTtlSec ?? 3600) * 1000;
  }
  get blockGraceMs(): number {
    return (this.opts.blockGraceSec ?? 3600) * 1000;
  }

  log(line: string): void {
    this.opts.log?.(line);
  }

  permission(user: User, repo: RepoMeta): Permission | null {
    if (repo.owner === user.email) return 'rw';
    const personal = this.db.shareOf(repo.id, user.email)?.permission ?? null;
    if (personal === 'rw') return 'rw';
    return this.db.groups.permissionVia(user.email, repo.id) ?? personal;
  }

  /**
   * The library if `user` may see it, else undefined: a library of someone
   * else's answers exactly as one that does not exist, so neither it nor the
   * paths and commits in it can be probed by 403 versus 404.
   */
  visibleRepo(user: User, repoId: string): RepoMeta | undefined {
    const repo = this.db.repo(repoId);
    return repo && this.permission(user, repo) ? repo : undefined;
  }

  /** The library if `user` may access it with `need`; another user's library is invisible (404). */
  repoFor(user: User, repoId: string, need: Permission = 'r'): { repo: RepoMeta; perm: Permission } {
    const repo = this.db.repo(repoId);
    const perm = repo ? this.permission(user, repo) : null;
    if (!repo || !perm) throw new HttpError(404, 'Library not found.');
    if (need === 'rw' && perm !== 'rw') throw new HttpError(403, 'Permission denied.');
    return { repo, perm };
  }

  isUnlocked(user: string, repo: RepoMeta): boolean {
    if (!repo.encrypted) return true;
    const exp = this.unlocks.get(`${user}\n${repo.id}`);
    return exp !== undefined && exp > Date.now();
  }

  /**
   * The password of `repoId` given by `user`: kept unlockTtl (default one
   * hour) from now, not extended by use, as real servers do (passwd-mgr.c
   * REAP_THRESHOLD); a restart forgets it.
   */
  unlock(user: string, repoId: string): void {
    this.unlocks.set(`${user}\n${repoId}`, Date.now() + this.unlockTtlMs);
  }

  /**
   * A web API call that needs the password (a copy or move between two
   * libraries, a revert) is refused (400) until it was given. Listings, file
   * details, history and links never ask for it on real servers: the file
   * server refuses the content instead (fileserver/files.ts).
   */
  requireUnlocked(user: User, repo: RepoMeta): void {
    if (!this.isUnlocked(user.email, repo))
      throw new HttpError(400, 'Library is encrypted, please provide the password first.');
  }

  async usage(email: string): Promise<number> {
    let total = 0;
    for (const r of this.db.reposOwnedBy(email)) total += (await this.heads.get(r.id)).size;
    return total;
  }

  /**
   * Bytes the owner of `repo` may still add; Infinity when unlimited. Blocks sent raw to the
   * owner's libraries that no commit used yet count as used, unless `waiting` is false (the link
   * views: a link may be wanted to commit those very blocks).
   */
  async quotaLeft(repo: RepoMeta, { waiting = true } = {}): Promise<number> {
    const owner = this.db.user(repo.owner);
    if (!owner || owner.quota < 0) return Infinity;
    let sent = 0;
    if (waiting) for (const r of this.db.reposOwnedBy(owner.email)) sent += this.blocks.pendingBytes(r.id);
    return owner.quota - (await this.usage(owner.email)) - sent;
  }

  newToken(): string {
    return randomBytes(16).toString('hex');
  }

  sweepTokens(): void {
    const now = Date.now();
    for (const [k, t] of this.downloads) if (t.expires <= now) this.downloads.delete(k);
    for (const [k, t] of this.uploads) if (t.expires <= now) this.uploads.delete(k);
  }

  /** A file locked by someone else, or a folder holding one, cannot be changed (403). */
  checkNotLocked(user: User, repoId: string, p: string): void {
    for (const { lock } of this.db.locksUnder(repoId, p)) {
      if (lock.owner !== user.email) throw new HttpError(403, 'File is locked');
    }
  }

  /**
   * Runs a change that adds bytes to `owner`'s libraries one at a time per
   * owner when the owner has a quota, so each check sees the usage the last
   * change left (uploads racing each other cannot all pass one stale check).
   */
  underQuota<T>(owner: string | undefined, fn: () => Promise<T>): Promise<T> {
    const u = owner ? this.db.user(owner) : undefined;
    if (!u || u.quota < 0) return fn();
    return this.quotaMutex.run(u.email, fn);
  }

  /** 443 when `added` bytes do not fit in the quota of `repo`'s owner. */
  async requireQuota(repo: RepoMeta, added: number): Promise<void> {
    if (added > 0 && added > (await this.quotaLeft(repo))) throw new HttpError(443, 'Out of quota.');
  }
}
