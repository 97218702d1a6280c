// The records the database keeps (store/db.ts): accounts, library metadata,
// shares, links, stars and locks, as they are stored in DATA/db.json.

export interface User {
  id: number;
  /** the account's id: its e-mail, or from 11.0 a virtual `<hex>@auth.local` */
  email: string;
  /** with a virtual id: the e-mail the account logs in with */
  contactEmail?: string;
  name: string;
  note: string;
  passwordHash: string; // pbkdf2$salt$hash
  isStaff: boolean;
  isActive: boolean;
  quota: number; // bytes; -2 unlimited
  totpSecret: string; // base32, '' when two-factor auth is off
  totpLastStep?: number; // time step of the last code accepted: a code works once
  tokenHash: string; // sha256 of the API token (40 hex, stable per user)
  tokenSealed: string; // the token sealed with the server key, to hand it out again
  token?: string; // before tokens were hashed: read once and converted
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
  historyKeepDays?: number; // history-limit: -1 (or missing) keeps all, 0 none, n days
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
  expire?: number | null; // epoch seconds; missing or null: never (links made before expiries were kept)
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

export interface GroupMember {
  email: string;
  isAdmin: boolean;
}

export interface Group {
  id: number;
  name: string;
  owner: string; // the creator, or whom it was handed to; always an admin
  ctime: number; // epoch seconds
  members: GroupMember[];
}

export interface GroupShare {
  repoId: string;
  groupId: number;
  from: string;
  permission: 'r' | 'rw';
}
