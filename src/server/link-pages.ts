// What a share link serves to anyone holding it, no login: a file link
// (/f/<token>/) answers 302 to a one-time download; a folder link lists its
// folders (GET /api2/d/<token>/dir/?p=) and hands out its files
// (/d/<token>/files/?p=); an upload link hands out a file server upload URL
// into its folder (GET /api/v2.1/upload-links/<token>/upload/). A link with a password needs it (form field
// `password` of a POST, or the query), and a link serves only while its
// creator may still read the library (checked on every use).
import type { Ctx, Req } from './context.js';
import { checkPassword, type RepoMeta, type ShareLinkRec } from './db.js';
import { HttpError, sendJson } from './http.js';
import { downloadUrl } from './api-file.js';
import { headRoot } from './ops.js';
import type { Route } from './router.js';
import { lookup, readDir, splitPath } from './tree.js';

async function linkAccess(ctx: Ctx, r: Req, isDir: boolean): Promise<{ l: ShareLinkRec; repo: RepoMeta }> {
  const found = ctx.db.shareLink(r.params[0]);
  const l = found && found.isDir === isDir ? found : undefined;
  if (!l || (l.expire !== null && l.expire * 1000 < Date.now())) throw new HttpError(404, 'Link not found.');
  const repo = ctx.db.repo(l.repoId);
  const creator = ctx.db.user(l.username);
  if (!repo || !creator?.isActive || !ctx.permission(creator, repo) || repo.encrypted) {
    throw new HttpError(404, 'Link not found.');
  }
  if (l.password) {
    const given = r.method === 'POST' ? (await r.form({ json: true })).get('password') : r.query.get('password');
    if (!given) throw new HttpError(403, 'Password is required.');
    if (!checkPassword(given, l.password)) throw new HttpError(403, 'Password is not correct.');
  }
  return { l, repo };
}

function redirect(r: Req, location: string): void {
  r.res.writeHead(302, { Location: location, 'Content-Length': '0' });
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

async function listFolderLink(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo } = await linkAccess(ctx, r, true);
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), inLink(l, r.query.get('p')));
  if (e?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  const entries = await readDir(ctx.store, e.id);
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

/** An upload URL (the file server's) into the upload link's folder, as its creator while the creator may still write there. */
async function uploadThroughLink(ctx: Ctx, r: Req): Promise<void> {
  const l = ctx.db.uploadLink(r.params[0]);
  const repo = l ? ctx.db.repo(l.repoId) : undefined;
  const creator = l ? ctx.db.user(l.username) : undefined;
  if (!l || !repo || !creator?.isActive || ctx.permission(creator, repo) !== 'rw')
    throw new HttpError(404, 'Link not found.');
  if (l.password) {
    const given = r.query.get('password');
    if (!given) throw new HttpError(403, 'Password is required.');
    if (!checkPassword(given, l.password)) throw new HttpError(403, 'Password is not correct.');
  }
  const dir = '/' + splitPath(l.path).join('/');
  const folder = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(dir));
  if (folder?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.uploads.set(token, {
    kind: 'upload',
    repoId: repo.id,
    dir,
    user: creator.email,
    expires: Date.now() + ctx.linkTtlMs,
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
