// The small database: accounts, library metadata, shares, links, stars and
// locks, kept in memory and persisted as one JSON file (DATA/db.json),
// rewritten atomically after every change. Library heads live elsewhere
// (heads.ts) because they change far more often.
import { promises as fsp } from 'node:fs';
import { pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { writeFileAtomic } from './atomic.js';

export interface User {
  id: number;
  email: string;
  name: string;
  note: string;
  passwordHash: string; // pbkdf2$salt$hash
  isStaff: boolean;
  isActive: boolean;
  quota: number; // bytes; -2 unlimited
  totpSecret: string; // base32, '' when two-factor auth is off
  token: string; // 40 hex, stable per user
  createTime: number; // epoch microseconds, as real servers report it
  defaultRepo?: string;
}

export interface RepoMeta {
  id: string;
  name: string;
  desc: string;
  owner: string;
  encrypted: boolean;
  encVersion: number;
  magic: string; // password verifier (hex) for encrypted libraries
  salt: string;
  randomKey: string;
  ctime: number;
  trashClearedAt?: string; // commit id: trash scans stop there
}

export interface Share {
  repoId: string;
  from: string;
  to: string;
  permission: 'r' | 'rw';
}

export interface ShareLinkRec {
  token: string;
  username: string;
  repoId: string;
  path: string;
  isDir: boolean;
  ctime: number;
  expire: number | null; // epoch seconds
  password: string;
  viewCnt: number;
}

export interface UploadLinkRec {
  token: string;
  username: string;
  repoId: string;
  path: string;
  ctime: number;
  password: string;
}

export interface Star {
  user: string;
  repoId: string;
  path: string;
}

export interface LockRec {
  owner: string;
  time: number;
}

interface DbData {
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

export class Db {
  data: DbData = {
    nextUserId: 1,
    users: {},
    repos: {},
    shares: [],
    shareLinks: [],
    uploadLinks: [],
    starred: [],
    locks: {},
  };
  private file: string;
  private saving: Promise<void> = Promise.resolve();
  private byToken = new Map<string, User>();

  constructor(dataDir: string) {
    this.file = path.join(dataDir, 'db.json');
  }

  async load(): Promise<void> {
    try {
      this.data = { ...this.data, ...JSON.parse(await fsp.readFile(this.file, 'utf8')) };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    this.reindex();
  }

  private reindex(): void {
    this.byToken.clear();
    for (const u of Object.values(this.data.users)) this.byToken.set(u.token, u);
  }

  /** Persists the current state; writes are serialised and each is atomic. */
  save(): Promise<void> {
    this.reindex();
    const text = JSON.stringify(this.data);
    const next = this.saving.then(() => writeFileAtomic(this.file, text));
    this.saving = next.catch(() => undefined);
    return next;
  }

  userByToken(token: string): User | undefined {
    return this.byToken.get(token);
  }

  user(email: string): User | undefined {
    return this.data.users[email.toLowerCase()] ?? this.data.users[email];
  }

  createUser(email: string, password: string, isStaff: boolean): User {
    const u: User = {
      id: this.data.nextUserId++,
      email,
      name: email.split('@')[0],
      note: '',
      passwordHash: hashPassword(password),
      isStaff,
      isActive: true,
      quota: -2,
      totpSecret: '',
      token: randomBytes(20).toString('hex'),
      createTime: Date.now() * 1000,
    };
    this.data.users[email] = u;
    return u;
  }

  deleteUser(email: string): void {
    delete this.data.users[email];
    this.data.shares = this.data.shares.filter((s) => s.to !== email && s.from !== email);
    this.data.starred = this.data.starred.filter((s) => s.user !== email);
  }

  repo(id: string): RepoMeta | undefined {
    return this.data.repos[id];
  }

  shareOf(repoId: string, user: string): Share | undefined {
    return this.data.shares.find((s) => s.repoId === repoId && s.to === user);
  }
}
