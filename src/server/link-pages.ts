// What a share link serves to anyone holding it, no login: a file link
// (/f/<token>/) answers 302 to a one-time download; a folder link lists its
// folders (GET /api2/d/<token>/dir/?p=) and hands out its files
// (/d/<token>/files/?p=); an upload link hands out a file server upload URL
// into its folder (GET /api/v2.1/upload-links/<token>/upload/). A link with a password needs it (form field
// `password` of a POST, or the query), or the cookie its web page (link-html.ts) sets after the right one; and
// a link serves only while its creator may still read the library (checked on every use). The checks live here
// and the web pages use them too.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Ctx, Req } from './context.js';
import { checkPassword, type RepoMeta, type ShareLinkRec, type UploadLinkRec, type User } from './db.js';
import { HttpError, sendJson } from './http.js';
import { isExpired } from './link-expiry.js';
import { downloadUrl } from './api-file.js';
import { headRoot } from './ops.js';
import type { Route } from './router.js';
import { type DirEnt, lookup, readDir, splitPath } from './tree.js';

/** A share link that may serve now: known, of the right kind, not expired, its creator still reading a plain library. */
export function shareLinkFor(ctx: Ctx, token: string, isDir: boolean): { l: ShareLinkRec; repo: RepoMeta } {
  const found = ctx.db.shareLink(token);
  const l = found && found.isDir === isDir ? found : undefined;
  if (!l || isExpired(l.expire)) throw new HttpError(404, 'Link not found.');
  const repo = ctx.db.repo(l.repoId);
  const creator = ctx.db.user(l.username);
  if (!repo || !creator?.isActive || !ctx.permission(creator, repo) || repo.encrypted) {
    throw new HttpError(404, 'Link not found.');
  }
  return { l, repo };
}

/** An upload link that may serve now: known, not expired, its creator still writing to the library. */
export function uploadLinkFor(ctx: Ctx, token: string): { l: UploadLinkRec; repo: RepoMeta; creator: User } {
  const found = ctx.db.uploadLink(token);
  const l = found && !isExpired(found.expire) ? found : undefined;
  const repo = l ? ctx.db.repo(l.repoId) : undefined;
  const creator = l ? ctx.db.user(l.username) : undefined;
  if (!l || !repo || !creator?.isActive || ctx.permission(creator, repo) !== 'rw')
    throw new HttpError(404, 'Link not found.');
  return { l, repo, creator };
}

// ---- passwords: given with the request, or proved earlier by a signed cookie ----

const PASS_COOKIE = 'seafs_link';
/** Signs pass cookies; a new one at each start, so a restart asks for the passwords again. */
const cookieKey = randomBytes(32);

const cookieMac = (l: { token: string; password: string }, exp: number) =>
  createHmac('sha256', cookieKey).update(`${l.token}\n${exp}\n${l.password}`).digest('base64url');

/**
 * A Set-Cookie header proving the right password of link `l` for `ttlMs`,
 * sent back only under `cookiePath` (the link's page and files). It holds an
 * expiry and a MAC over the link's token and password hash, never the password.
 */
export function passCookie(l: { token: string; password: string }, cookiePath: string, ttlMs: number): string {
  const exp = Date.now() + ttlMs;
  const value = `${exp}.${cookieMac(l, exp)}`;
  const age = Math.floor(ttlMs / 1000);
  return `${PASS_COOKIE}=${value}; Path=${cookiePath}; Max-Age=${age}; HttpOnly; SameSite=Strict`;
}

function hasPassCookie(r: Req, l: { token: string; password: string }): boolean {
  for (const part of (r.raw.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name !== PASS_COOKIE || !value) continue;
    const [exp, mac] = value.split('.', 2);
    if (!mac || !(Number(exp) > Date.now())) continue;
    const want = Buffer.from(cookieMac(l, Number(exp)));
    const got = Buffer.from(mac);
    if (got.length === want.length && timingSafeEqual(got, want)) return true;
  }
  return false;
}

/**
 * Whether a request may use link `l`: it has no password, or `given` is it,
 * or (nothing given) a pass cookie proves it was given before.
 */
export function linkPass(
  r: Req,
  l: { token: string; password: string },
  given: string | undefined,
): 'ok' | 'missing' | 'wrong' {
  if (!l.password) return 'ok';
  if (given) return checkPassword(given, l.password) ? 'ok' : 'wrong';
  return hasPassCookie(r, l) ? 'ok' : 'missing';
}

function requirePass(r: Req, l: { token: string; password: string }, given: string | undefined): void {
  const pass = linkPass(r, l, given);
  if (pass === 'missing') throw new HttpError(403, 'Password is required.');
  if (pass === 'wrong') throw new HttpError(403, 'Password is not correct.');
}

async function linkAccess(ctx: Ctx, r: Req, isDir: boolean): Promise<{ l: ShareLinkRec; repo: RepoMeta }> {
  const found = shareLinkFor(ctx, r.params[0], isDir);
  if (found.l.password) {
    const given = r.method === 'POST' ? (await r.form({ json: true })).get('password') : r.query.get('password');
    requirePass(r, found.l, given ?? undefined);
  }
  return found;
}

// ---- what links serve ----

function redirect(r: Req, location: string): void {
  r.res.writeHead(302, { Location: location, 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': '0' }); // as Django's redirect
  r.res.end();
}

async function openFileLink(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo } = await linkAccess(ctx, r, false);
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(l.path));
  if (e?.type !== 'file') throw new HttpError(404, 'File not found.');
  l.viewCnt++;
  void ctx.db.save();
  redirect(r, downloadUrl(ctx, r, repo, e, false));
}

/** The path `p` (relative to the link's folder) inside the library. */
const inLink = (l: ShareLinkRec, p: string | null) => [...splitPath(l.path), ...splitPath(p ?? '/')];

/** The entries of folder `p` (relative to the folder link's folder); 404 when it is not a folder. */
export async function folderOfLink(ctx: Ctx, l: ShareLinkRec, repo: RepoMeta, p: string | null): Promise<DirEnt[]> {
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), inLink(l, p));
  if (e?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  return readDir(ctx.store, e.id);
}

async function listFolderLink(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo } = await linkAccess(ctx, r, true);
  const entries = await folderOfLink(ctx, l, repo, r.query.get('p'));
  sendJson(
    r.res,
    200,
    entries.map((x) => ({
      type: x.type,
      name: x.name,
      id: x.id,
      mtime: x.mtime,
      ...(x.type === 'file' ? { size: x.size } : {}),
    })),
  );
}

async function fileOfFolderLink(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo } = await linkAccess(ctx, r, true);
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), inLink(l, r.query.get('p')));
  if (e?.type !== 'file') throw new HttpError(404, 'File not found.');
  l.viewCnt++;
  void ctx.db.save();
  redirect(r, downloadUrl(ctx, r, repo, e, false));
}

/** The library folder an upload link drops into, as '/a/b'; 404 when it is gone. */
export async function uploadLinkDir(ctx: Ctx, l: UploadLinkRec, repo: RepoMeta): Promise<string> {
  const dir = '/' + splitPath(l.path).join('/');
  const folder = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(dir));
  if (folder?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  return dir;
}

/** An upload URL (the file server's) into the upload link's folder, as its creator while the creator may still write there. */
async function uploadThroughLink(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo, creator } = uploadLinkFor(ctx, r.params[0]);
  if (l.password) requirePass(r, l, r.query.get('password') ?? undefined);
  const dir = await uploadLinkDir(ctx, l, repo);
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.uploads.set(token, {
    kind: 'upload',
    repoId: repo.id,
    dir,
    user: creator.email,
    expires: Date.now() + ctx.linkTtlMs,
    link: true,
  });
  sendJson(r.res, 200, { upload_link: `${r.base}/seafhttp/upload-api/${token}` });
}

export const linkPageRoutes: Route[] = [
  { method: 'GET', path: '/api/v2.1/upload-links/:token/upload', auth: 'none', handler: uploadThroughLink },
  { method: 'GET', path: '/f/:token', auth: 'none', handler: openFileLink },
  { method: 'POST', path: '/f/:token', auth: 'none', handler: openFileLink },
  { method: 'GET', path: '/api2/d/:token/dir', auth: 'none', handler: listFolderLink },
  { method: 'GET', path: '/d/:token/files', auth: 'none', handler: fileOfFolderLink },
  { method: 'POST', path: '/d/:token/files', auth: 'none', handler: fileOfFolderLink },
];
