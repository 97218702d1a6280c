// The small database: accounts, library metadata, shares, links, stars and
// locks, kept in memory and persisted as one JSON file (DATA/db.json),
// rewritten atomically after every change. Library heads live elsewhere
// (store/heads.ts) because they change far more often.
//
// Handlers change it only through the methods below (a deleted library takes
// its shares, links, stars and locks with it in one call). Keyed tables are
// Maps, never plain objects: a name like `__proto__` or `constructor` is just
// a key that is not there.
import { promises as fsp } from 'node:fs';
import { pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { writeFileAtomic } from './atomic.js';
import type { LockRec, RepoMeta, Share, ShareLinkRec, Star, UploadLinkRec, User } from './records.js';
import { SecretBox, tokenHash } from '../auth/secret-box.js';
import { Devices, type DeviceLogin, type DevicesFile } from '../auth/devices.js';
import { Groups, type GroupsFile } from './groups.js';
import { FolderShares, type FolderSharesFile } from './folder-shares.js';

export type {
  Group,
  GroupShare,
  LockRec,
  RepoMeta,
  Share,
  ShareLinkRec,
  Star,
  UploadLinkRec,
  User,
} from './records.js';

/** The JSON file's shape (unchanged since the first release). */
interface DbFile extends GroupsFile, DevicesFile, FolderSharesFile {
  nextUserId: number;
  users: Record<string, User>;
  repos: Record<string, RepoMeta>;
  shares: Share[];
  shareLinks: ShareLinkRec[];
  uploadLinks: UploadLinkRec[];
  starred: Star[];
  locks: Record<string, LockRec>; // key `${repoId}:${path}`
}

export function hashPassword(password: string): string {
  const salt = randomBytes(16).toString('hex');
  const hash = pbkdf2Sync(password, salt, 20_000, 32, 'sha256').toString('hex');
  return `pbkdf2$${salt}$${hash}`;
}

export function checkPassword(password: string, stored: string): boolean {
  const [, salt, hash] = stored.split('$');
  if (!salt || !hash) return false;
  const got = pbkdf2Sync(password, salt, 20_000, 32, 'sha256');
  const want = Buffer.from(hash, 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}

const lockKey = (repoId: string, p: string) => `${repoId}:${p}`;
/** `p` is `dir` or lies below it. */
const within = (p: string, dir: string) => dir === '/' || p === dir || p.startsWith(dir + '/');
const rebase = (p: string, from: string, to: string) => (p === from ? to : to + p.slice(from.length));

function mapOf<T>(rec: Record<string, T> | undefined): Map<string, T> {
  return new Map(rec ? Object.entries(rec) : []);
}

export class Db {
  private nextUserId = 1;
  private users = new Map<string, User>();
  private repos = new Map<string, RepoMeta>();
  private shares: Share[] = [];
  private shareLinks: ShareLinkRec[] = [];
  private uploadLinks: UploadLinkRec[] = [];
  private starred: Star[] = [];
  private locks = new Map<string, LockRec>();
  /** told of a lock taken (owner) or released ('') through setLock and removeLock */
  onLockChange: ((repoId: string, p: string, owner: string) => void) | null = null;
  /** groups, their members and the libraries shared to them */
  readonly groups = new Groups();
  /** per-device tokens (logins that name their device) */
  readonly devices = new Devices();
  /** shares of sub-folders (recorded, listed; no access through them) */
  readonly folderShares = new FolderShares();
  private file: string;
  private saving: Promise<void> = Promise.resolve();
  private byToken = new Map<string, User>(); // token hash -> user
  private box: SecretBox = SecretBox.ephemeral();
  /** new accounts get a virtual id (`<32 hex>@auth.local`) with the login e-mail as contact e-mail (11.0) */
  virtualIds = false;

  constructor(dataDir: string) {
    this.file = path.join(dataDir, 'db.json');
  }

  async load(box: SecretBox): Promise<void> {
    this.box = box;
    let d: Partial<DbFile> = {};
    try {
      d = JSON.parse(await fsp.readFile(this.file, 'utf8')) as Partial<DbFile>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    this.nextUserId = d.nextUserId ?? 1;
    this.users = mapOf(d.users);
    this.repos = mapOf(d.repos);
    this.shares = d.shares ?? [];
    this.shareLinks = d.shareLinks ?? [];
    this.uploadLinks = d.uploadLinks ?? [];
    this.starred = d.starred ?? [];
    this.locks = mapOf(d.locks);
    this.groups.load(d);
    this.devices.load(d);
    this.folderShares.load(d);
    // tokens and link passwords were kept in plain text before: hash them
    for (const u of this.users.values()) {
      if (u.token) {
        u.tokenHash = tokenHash(u.token);
        u.tokenSealed = box.seal(u.token);
        delete u.token;
      }
    }
    for (const l of [...this.shareLinks, ...this.uploadLinks]) {
      if (l.password && !l.password.startsWith('pbkdf2$')) l.password = hashPassword(l.password);
    }
    this.reindex();
  }

  private reindex(): void {
    this.byToken.clear();
    for (const u of this.users.values()) this.byToken.set(u.tokenHash, u);
  }

  private toFile(): DbFile {
    return {
      nextUserId: this.nextUserId,
      users: Object.fromEntries(this.users),
      repos: Object.fromEntries(this.repos),
      shares: this.shares,
      shareLinks: this.shareLinks,
      uploadLinks: this.uploadLinks,
      starred: this.starred,
      locks: Object.fromEntries(this.locks),
      ...this.groups.toFile(),
      ...this.devices.toFile(),
      ...this.folderShares.toFile(),
    };
  }

  /** Persists the current state; writes are serialised and each is atomic. */
  save(): Promise<void> {
    this.reindex();
    const text = JSON.stringify(this.toFile());
    const next = this.saving.then(() => writeFileAtomic(this.file, text));
    this.saving = next.catch(() => undefined);
    return next;
  }

  // ---- users ----

  userByToken(token: string): User | undefined {
    const u = this.byToken.get(tokenHash(token));
    if (u) return u;
    const d = this.devices.byToken(token);
    return d ? this.user(d.user) : undefined;
  }

  /**
   * Deletes `token` (seahub's logout-device): a device's token is removed with its device; the
   * account's shared token is replaced by a new one, which the next login without a device gets.
   */
  revokeToken(token: string): void {
    const u = this.byToken.get(tokenHash(token));
    if (u) {
      this.byToken.delete(u.tokenHash);
      Object.assign(u, this.newToken());
      this.byToken.set(u.tokenHash, u);
      return;
    }
    this.devices.removeToken(token);
  }

  /** The token a login from this device gets (kept in the data, sealed). */
  deviceToken(user: User, d: DeviceLogin, ip: string): string {
    return this.devices.tokenFor(user.email, d, ip, this.box);
  }

  /** The user's API token (the same at every login). */
  tokenOf(user: User): string {
    return this.box.unseal(user.tokenSealed);
  }

  /** The account whose id, or else whose contact (login) e-mail, is `email`. */
  user(email: string): User | undefined {
    const byId = this.users.get(email.toLowerCase()) ?? this.users.get(email);
    if (byId) return byId;
    const low = email.toLowerCase();
    for (const u of this.users.values()) if (u.contactEmail?.toLowerCase() === low) return u;
    return undefined;
  }

  /** All accounts in creation order. */
  allUsers(): User[] {
    return [...this.users.values()].sort((a, b) => a.id - b.id);
  }

  createUser(email: string, password: string, isStaff: boolean): User {
    const id = this.virtualIds ? `${randomBytes(16).toString('hex')}@auth.local` : email;
    const u: User = {
      id: this.nextUserId++,
      email: id,
      ...(this.virtualIds ? { contactEmail: email } : {}),
      name: email.split('@')[0],
      note: '',
      passwordHash: hashPassword(password),
      isStaff,
      isActive: true,
      quota: -2,
      totpSecret: '',
      ...this.newToken(),
      createTime: Date.now() * 1000,
    };
    this.users.set(id, u);
    return u;
  }

  private newToken(): { tokenHash: string; tokenSealed: string } {
    const token = randomBytes(20).toString('hex');
    return { tokenHash: tokenHash(token), tokenSealed: this.box.seal(token) };
  }

  /** Removes an account with its libraries (and everything attached to them); returns those library ids. */
  deleteUser(email: string): string[] {
    const gone = this.reposOwnedBy(email).map((r) => r.id);
    for (const id of gone) this.deleteRepo(id);
    this.users.delete(email);
    this.shares = this.shares.filter((s) => s.to !== email && s.from !== email);
    this.starred = this.starred.filter((s) => s.user !== email);
    this.groups.forgetUser(email);
    this.devices.forgetUser(email);
    this.folderShares.forgetUser(email);
    return gone;
  }

  /** Hands every library of `from` to `to`. */
  migrateRepos(from: string, to: string): void {
    for (const r of this.reposOwnedBy(from)) r.owner = to;
  }

  // ---- libraries ----

  repo(id: string): RepoMeta | undefined {
    return this.repos.get(id);
  }

  /** All libraries, oldest first (then by name). */
  allRepos(): RepoMeta[] {
    return [...this.repos.values()].sort((a, b) => a.ctime - b.ctime || a.name.localeCompare(b.name));
  }

  reposOwnedBy(email: string): RepoMeta[] {
    return this.allRepos().filter((r) => r.owner === email);
  }

  addRepo(repo: RepoMeta): void {
    this.repos.set(repo.id, repo);
  }

  /** Forgets a library with its shares, links, stars and locks. */
  deleteRepo(id: string): void {
    this.repos.delete(id);
    this.shares = this.shares.filter((s) => s.repoId !== id);
    this.shareLinks = this.shareLinks.filter((s) => s.repoId !== id);
    this.uploadLinks = this.uploadLinks.filter((s) => s.repoId !== id);
    this.starred = this.starred.filter((s) => s.repoId !== id);
    for (const k of [...this.locks.keys()]) if (k.startsWith(id + ':')) this.locks.delete(k);
    this.groups.forgetRepo(id);
    this.folderShares.forgetRepo(id);
  }

  // ---- shares ----

  shareOf(repoId: string, user: string): Share | undefined {
    return this.shares.find((s) => s.repoId === repoId && s.to === user);
  }

  sharesOfRepo(repoId: string): Share[] {
    return this.shares.filter((s) => s.repoId === repoId);
  }

  sharesTo(user: string): Share[] {
    return this.shares.filter((s) => s.to === user);
  }

  /** Shares of libraries `owner` owns (as they were made). */
  sharesBy(owner: string): Share[] {
    return this.shares.filter((s) => this.repos.get(s.repoId)?.owner === owner);
  }

  setShare(repoId: string, from: string, to: string, permission: 'r' | 'rw'): void {
    const existing = this.shareOf(repoId, to);
    if (existing) existing.permission = permission;
    else this.shares.push({ repoId, from, to, permission });
  }

  /** True when a share existed. */
  removeShare(repoId: string, to: string): boolean {
    const before = this.shares.length;
    this.shares = this.shares.filter((s) => !(s.repoId === repoId && s.to === to));
    return this.shares.length !== before;
  }

  // ---- share links and upload links ----

  shareLink(token: string): ShareLinkRec | undefined {
    return this.shareLinks.find((l) => l.token === token);
  }

  shareLinksOf(user: string): ShareLinkRec[] {
    return this.shareLinks.filter((l) => l.username === user);
  }

  addShareLink(rec: ShareLinkRec): void {
    this.shareLinks.push(rec);
  }

  removeShareLink(token: string, user: string): void {
    this.shareLinks = this.shareLinks.filter((l) => !(l.token === token && l.username === user));
  }

  uploadLink(token: string): UploadLinkRec | undefined {
    return this.uploadLinks.find((l) => l.token === token);
  }

  uploadLinksOf(user: string): UploadLinkRec[] {
    return this.uploadLinks.filter((l) => l.username === user);
  }

  addUploadLink(rec: UploadLinkRec): void {
    this.uploadLinks.push(rec);
  }

  removeUploadLink(token: string, user: string): void {
    this.uploadLinks = this.uploadLinks.filter((l) => !(l.token === token && l.username === user));
  }

  // ---- stars ----

  starsOf(user: string): Star[] {
    return this.starred.filter((s) => s.user === user);
  }

  isStarred(user: string, repoId: string, p: string): boolean {
    return this.starred.some((s) => s.user === user && s.repoId === repoId && s.path === p);
  }

  /** True when the star is new. */
  star(user: string, repoId: string, p: string): boolean {
    if (this.isStarred(user, repoId, p)) return false;
    this.starred.push({ user, repoId, path: p });
    return true;
  }

  unstar(user: string, repoId: string, p: string): void {
    this.starred = this.starred.filter((s) => !(s.user === user && s.repoId === repoId && s.path === p));
  }

  // ---- locks ----

  lock(repoId: string, p: string): LockRec | undefined {
    return this.locks.get(lockKey(repoId, p));
  }

  setLock(repoId: string, p: string, owner: string): void {
    this.locks.set(lockKey(repoId, p), { owner, time: Math.floor(Date.now() / 1000) });
    this.onLockChange?.(repoId, p, owner);
  }

  removeLock(repoId: string, p: string): void {
    const had = this.locks.get(lockKey(repoId, p));
    this.locks.delete(lockKey(repoId, p));
    if (had) this.onLockChange?.(repoId, p, '');
  }

  /** Locks on `p` or anything below it, with their paths. */
  locksUnder(repoId: string, p: string): { path: string; lock: LockRec }[] {
    const out: { path: string; lock: LockRec }[] = [];
    for (const [k, lock] of this.locks) {
      if (!k.startsWith(repoId + ':')) continue;
      const lp = k.slice(repoId.length + 1);
      if (within(lp, p)) out.push({ path: lp, lock });
    }
    return out;
  }

  /** Locks and stars follow a file or folder that was renamed or moved. True when any moved. */
  moveMarks(fromRepo: string, fromPath: string, toRepo: string, toPath: string): boolean {
    let moved = false;
    for (const { path: lp, lock } of this.locksUnder(fromRepo, fromPath)) {
      this.locks.delete(lockKey(fromRepo, lp));
      this.locks.set(lockKey(toRepo, rebase(lp, fromPath, toPath)), lock);
      moved = true;
    }
    for (const s of this.starred) {
      if (s.repoId === fromRepo && within(s.path, fromPath)) {
        s.repoId = toRepo;
        s.path = rebase(s.path, fromPath, toPath);
        moved = true;
      }
    }
    return moved;
  }

  /** Locks on a deleted file or folder go with it. True when any did. */
  dropLocksUnder(repoId: string, p: string): boolean {
    const gone = this.locksUnder(repoId, p);
    for (const { path: lp } of gone) this.locks.delete(lockKey(repoId, lp));
    return gone.length > 0;
  }
}
