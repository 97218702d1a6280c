// What a mount keeps of its login so that the next one can start while the
// server is unreachable: the account's e-mail (it names the cache folder) and
// the token the server gave, which the mount uses once the server answers
// again. After a password login the token is kept encrypted with a key drawn
// from the password (scrypt, AES-256-GCM): the file alone gives nothing, and
// an offline start with a wrong password fails as a login would. After a
// token login (SEAFS_TOKEN, --token-file) only the e-mail is kept, under a
// hash of the token. One file per server and user, mode 0600, in the cache
// root's logins/ folder (0700); the password itself is never written.
// The e-mail names the cache folder an offline mount uses, so it is bound to
// the secret: authenticated data of the cipher after a password login, an
// HMAC keyed by the token after a token login. A file edited to name another
// account is refused, as is a cut authentication tag.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Secrets } from './secrets.js';
import { UserError } from '../user-error.js';

export interface SavedLogin {
  email: string;
  token: string;
}

const hash = (...parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);

/** The version written; version 1 (no binding of the e-mail) is read only where nothing could have been swapped. */
const VERSION = 2;
const TAG_BYTES = 16;

const serverOf = (url: string) => url.replace(/\/+$/, '');

/** What the e-mail is bound to: the server, the login name and the e-mail, unambiguously joined. */
const bound = (url: string, user: string, email: string) =>
  Buffer.from(JSON.stringify(['seafs offline login', serverOf(url), user, email]), 'utf8');

const macOf = (token: string, url: string, email: string) =>
  createHmac('sha256', token)
    .update(bound(url, '', email))
    .digest('base64');

const loginAgain = (why: string) =>
  new UserError(
    `the server is unreachable and ${why}: mount once with the server reachable to keep a new login for starts offline`,
  );

function fileFor(root: string, url: string, user: string | undefined, secrets: Secrets): string | null {
  const base = serverOf(url);
  if (secrets.token) return join(root, 'logins', `${hash(base, 'token', secrets.token)}.json`);
  if (user && secrets.password !== undefined) return join(root, 'logins', `${hash(base, 'user', user)}.json`);
  return null;
}

function keyOf(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, 32, { N: 1 << 15, r: 8, p: 1, maxmem: 64 << 20 }, (e, k) => (e ? reject(e) : resolve(k))),
  );
}

async function writeSecret(file: string, body: object): Promise<void> {
  await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(body), { mode: 0o600 });
  await rename(tmp, file);
}

/** After a login that the server accepted: keep what an offline start needs. Never throws (logged by the caller). */
export async function saveLogin(
  root: string,
  url: string,
  user: string | undefined,
  secrets: Secrets,
  login: SavedLogin,
): Promise<void> {
  const file = fileFor(root, url, user, secrets);
  if (!file) return;
  if (secrets.token) {
    await writeSecret(file, { v: VERSION, email: login.email, mac: macOf(secrets.token, url, login.email) });
    return;
  }
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', await keyOf(secrets.password!, salt), iv, { authTagLength: TAG_BYTES });
  c.setAAD(bound(url, user!, login.email));
  const data = Buffer.concat([c.update(login.token, 'utf8'), c.final()]);
  await writeSecret(file, {
    v: VERSION,
    email: login.email,
    salt: salt.toString('base64'),
    iv: iv.toString('base64'),
    tag: c.getAuthTag().toString('base64'),
    token: data.toString('base64'),
  });
}

/**
 * The login an earlier mount kept, for a start without the server: null when
 * there is none (or it cannot be read); a UserError when the password does
 * not open it, when it was altered, or when it is of version 1 and names an
 * e-mail other than the login (nothing there tells a swapped e-mail apart).
 */
export async function loadLogin(
  root: string,
  url: string,
  user: string | undefined,
  secrets: Secrets,
): Promise<SavedLogin | null> {
  const file = fileFor(root, url, user, secrets);
  if (!file) return null;
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
  if ((j.v !== 1 && j.v !== VERSION) || typeof j.email !== 'string' || !j.email) return null;
  const email = j.email;
  if (j.v === 1 && email !== user) throw loginAgain('the login kept here is of an older seafs');
  if (secrets.token) {
    if (j.v === 1) return { email, token: secrets.token };
    const want = Buffer.from(macOf(secrets.token, url, email), 'base64');
    const got = Buffer.from(typeof j.mac === 'string' ? j.mac : '', 'base64');
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw loginAgain('the login kept here was altered');
    return { email, token: secrets.token };
  }
  if (
    typeof j.salt !== 'string' ||
    typeof j.iv !== 'string' ||
    typeof j.tag !== 'string' ||
    typeof j.token !== 'string'
  )
    return null;
  // a shorter tag would be checked only as far as it goes (a 4-byte tag is forged in 2^32 tries)
  const tag = Buffer.from(j.tag, 'base64');
  if (tag.length !== TAG_BYTES) throw loginAgain('the login kept here is damaged');
  try {
    const d = createDecipheriv(
      'aes-256-gcm',
      await keyOf(secrets.password!, Buffer.from(j.salt, 'base64')),
      Buffer.from(j.iv, 'base64'),
      { authTagLength: TAG_BYTES },
    );
    if (j.v !== 1) d.setAAD(bound(url, user!, email));
    d.setAuthTag(tag);
    const token = Buffer.concat([d.update(Buffer.from(j.token, 'base64')), d.final()]).toString('utf8');
    return { email, token };
  } catch {
    // GCM cannot tell a wrong password from an altered file
    throw new UserError(
      'the server is unreachable and the password does not match the one of the last login here (or the kept login was altered)',
    );
  }
}

/** The cache root a mount uses (the account folders are below it). */
export function cacheRoot(cacheDir: string | undefined, home: string): string {
  return cacheDir ?? join(home, '.cache', 'seafs');
}
