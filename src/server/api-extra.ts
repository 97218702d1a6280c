// Starred files, search, share links and upload links (V2.1, and the V2
// shared-links list), plus empty answers for features this server lacks
// (activity) so clients probing them get well-formed replies.
import type { Ctx, Req } from './context.js';
import { hashPassword, type ShareLinkRec, type UploadLinkRec } from './db.js';
import { HttpError, isoTime, sendJson } from './http.js';
import { isExpired, requestedExpiry } from './link-expiry.js';
import { deleteLinkRoute, sendLinks, shareLinks, uploadLinks } from './link-routes.js';
import { headRoot } from './ops.js';
import type { Route } from './router.js';
import { lookup, splitPath, walkTree } from './tree.js';

function cleanPath(p: string | undefined | null): string {
  if (!p) throw new HttpError(400, 'path invalid.');
  return '/' + splitPath(p).join('/');
}

// ---- starred files ----

async function listStarred(ctx: Ctx, r: Req): Promise<void> {
  const out = [];
  for (const s of ctx.db.starsOf(r.user!.email)) {
    const repo = ctx.db.repo(s.repoId);
    if (!repo || !ctx.permission(r.user!, repo)) continue;
    const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(s.path));
    if (!e) continue;
    out.push({
      repo: repo.id,
      repo_name: repo.name,
      mtime: e.mtime,
      org: -1,
      path: s.path,
      dir: e.type === 'dir',
      size: e.type === 'file' ? e.size : 0,
    });
  }
  sendJson(r.res, 200, out);
}

function starArgs(ctx: Ctx, r: Req, repoId: string | undefined, p: string | undefined) {
  if (!repoId || !p || p.endsWith('/')) throw new HttpError(400, 'Invalid arguments.');
  const { repo } = ctx.repoFor(r.user!, repoId);
  return { repo, path: cleanPath(p) };
}

// ---- share links (download) ----

export function shareLinkShape(ctx: Ctx, r: Req, l: ShareLinkRec, list: boolean) {
  const repo = ctx.db.repo(l.repoId);
  const expired = isExpired(l.expire);
  const name = l.path === '/' ? '/' : l.path.split('/').pop()!;
  return {
    username: l.username,
    repo_id: l.repoId,
    ctime: isoTime(l.ctime),
    expire_date: l.expire !== null ? isoTime(l.expire) : '',
    token: l.token,
    view_cnt: l.viewCnt,
    link: `${r.base}/${l.isDir ? 'd' : 'f'}/${l.token}/`,
    // seahub shows a folder link's path with a trailing slash
    path: l.isDir && l.path !== '/' ? l.path + '/' : l.path,
    is_expired: expired,
    ...(list ? { obj_name: name, is_dir: l.isDir, repo_name: repo?.name ?? '' } : {}),
    // what seahub's get_share_link_info adds (links here are view-and-download; the password is stored hashed)
    permissions: { can_edit: false, can_download: true, can_upload: false },
    can_edit: false,
  };
}

async function createShareLink(
  ctx: Ctx,
  r: Req,
  repoId: string | undefined,
  p: string | undefined,
  password?: string,
  /** epoch seconds, or undefined: never */
  expire?: number,
  /** v2.1 refuses a second link for a path (400), an expired one counting; api2 hands the existing one back */
  refuseExisting = false,
) {
  if (!repoId) throw new HttpError(400, 'repo_id invalid.');
  const { repo } = ctx.repoFor(r.user!, repoId);
  const path = cleanPath(p ?? '/');
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(path));
  if (!e) throw new HttpError(404, 'File or folder not found.');
  if (repo.encrypted) throw new HttpError(403, 'Permission denied.');
  const existing = ctx.db.shareLinksOf(r.user!.email).find((l) => l.repoId === repo.id && l.path === path);
  if (existing && refuseExisting) throw new HttpError(400, `Share link ${existing.token} already exists.`);
  if (existing) return existing;
  const now = Math.floor(Date.now() / 1000);
  const rec: ShareLinkRec = {
    token: ctx.newToken().slice(0, 20),
    username: r.user!.email,
    repoId: repo.id,
    path,
    isDir: e.type === 'dir',
    ctime: now,
    expire: expire ?? null,
    password: password ? hashPassword(password) : '',
    viewCnt: 0,
  };
  ctx.db.addShareLink(rec);
  await ctx.db.save();
  return rec;
}

// ---- upload links ----

/** An upload link as seahub's get_upload_link_info shows it (but never its password). */
export function uploadLinkShape(ctx: Ctx, r: Req, l: UploadLinkRec) {
  const name = l.path === '/' ? '/' : (l.path.replace(/\/+$/, '').split('/').pop() ?? '');
  return {
    username: l.username,
    repo_id: l.repoId,
    repo_name: ctx.db.repo(l.repoId)?.name ?? '',
    ctime: isoTime(l.ctime),
    token: l.token,
    link: `${r.base}/u/d/${l.token}/`,
    path: l.path,
    obj_name: name,
    view_cnt: 0,
    expire_date: l.expire ? isoTime(l.expire) : '',
    is_expired: isExpired(l.expire),
  };
}

// ---- search ----

async function search(ctx: Ctx, r: Req): Promise<void> {
  // seahub's api2 Search: full-text search is a Pro feature, refused before the query is read
  if (!ctx.pro) throw new HttpError(404, 'Search not supported.');
  const q = (r.query.get('q') ?? '').trim().toLowerCase();
  if (!q) throw new HttpError(400, 'q invalid.');
  const per = Math.max(1, Number(r.query.get('per_page') ?? 10) || 10);
  const page = Math.max(1, Number(r.query.get('page') ?? 1) || 1);
  const hits: Record<string, unknown>[] = [];
  const wanted = r.query.get('search_repo');
  for (const repo of ctx.db.allRepos()) {
    const id = repo.id;
    if (wanted && wanted !== 'all' && wanted !== id) continue;
    if (!ctx.permission(r.user!, repo) || repo.encrypted) continue;
    await walkTree(ctx.store, await headRoot(ctx, id), [], (e, parent) => {
      if (e.name.toLowerCase().includes(q)) {
        hits.push({
          repo_id: id,
          repo_name: repo.name,
          name: e.name,
          oid: e.id,
          fullpath: '/' + [...parent, e.name].join('/') + (e.type === 'dir' ? '/' : ''),
          is_dir: e.type === 'dir',
          size: e.type === 'file' ? e.size : 0,
          last_modified: e.mtime,
        });
      }
    });
  }
  const slice = hits.slice((page - 1) * per, page * per);
  sendJson(r.res, 200, { total: hits.length, has_more: page * per < hits.length, results: slice });
}

export const extraRoutes: Route[] = [
  { method: 'GET', path: '/api2/starredfiles', auth: 'user', handler: listStarred },
  {
    method: 'POST',
    path: '/api2/starredfiles',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const { repo, path } = starArgs(ctx, r, form.get('repo_id'), form.get('p'));
      const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(path));
      if (e?.type !== 'file') throw new HttpError(400, 'Invalid file path.');
      if (ctx.db.star(r.user!.email, repo.id, path)) await ctx.db.save();
      sendJson(r.res, 201, 'success', { Location: `${r.base}/api2/starredfiles/` });
    },
  },
  {
    method: 'DELETE',
    path: '/api2/starredfiles',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo, path } = starArgs(ctx, r, r.query.get('repo_id') ?? undefined, r.query.get('p') ?? undefined);
      ctx.db.unstar(r.user!.email, repo.id, path);
      await ctx.db.save();
      sendJson(r.res, 200, 'success');
    },
  },
  { method: 'GET', path: '/api2/search', auth: 'user', handler: search },
  {
    method: 'GET',
    path: '/api/v2.1/share-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const repoId = r.query.get('repo_id');
      const p = r.query.get('path');
      if (repoId) ctx.repoFor(r.user!, repoId);
      const path = p ? cleanPath(p) : null;
      const list = ctx.db
        .shareLinksOf(r.user!.email)
        .filter((l) => (!repoId || l.repoId === repoId) && (!path || l.path === path));
      sendLinks(r, list, (l) => shareLinkShape(ctx, r, l, true));
    },
  },
  {
    method: 'POST',
    path: '/api/v2.1/share-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      // expire_days or expiration_time (what seafile-js sends): a link never loses the expiry asked for
      const expire = requestedExpiry(form);
      const rec = await createShareLink(
        ctx,
        r,
        form.get('repo_id'),
        form.get('path'),
        form.get('password'),
        expire,
        true,
      );
      // seahub answers a new link with the same fields as its list
      sendJson(r.res, 200, shareLinkShape(ctx, r, rec, true));
    },
  },
  deleteLinkRoute(shareLinks),
  {
    method: 'GET',
    path: '/api2/shared-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const list = ctx.db.shareLinksOf(r.user!.email);
      sendJson(r.res, 200, {
        fileshares: list.map((l) => ({
          username: l.username,
          repo_id: l.repoId,
          ctime: l.ctime,
          s_type: l.isDir ? 'd' : 'f',
          token: l.token,
          view_cnt: l.viewCnt,
          path: l.path,
        })),
      });
    },
  },
  {
    method: 'DELETE',
    path: '/api2/shared-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const t = r.query.get('t');
      // seahub refuses a token it does not know
      if (!t || !ctx.db.shareLink(t)) throw new HttpError(400, 'Invalid token');
      ctx.db.removeShareLink(t, r.user!.email);
      await ctx.db.save();
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'PUT',
    path: '/api2/repos/:repo/file/shared-link',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const type = form.get('share_type') ?? 'download';
      const p = form.get('p');
      if (!p) throw new HttpError(400, 'Path is missing.');
      if (type === 'upload') {
        const rec = await createUploadLink(ctx, r, r.params[0], p, form.get('password'));
        r.res.setHeader('Location', uploadLinkShape(ctx, r, rec).link);
      } else {
        const days = form.get('expire') ? Number(form.get('expire')) : undefined;
        const expire = days && days > 0 ? Math.floor(Date.now() / 1000) + days * 86400 : undefined;
        const rec = await createShareLink(ctx, r, r.params[0], p, form.get('password'), expire);
        r.res.setHeader('Location', shareLinkShape(ctx, r, rec, false).link);
      }
      // seahub answers with the Location alone: no body, no Content-Type
      r.res.writeHead(201, { 'Content-Length': '0' });
      r.res.end();
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/upload-links',
    auth: 'user',
    handler: async (ctx, r) => {
      // as seahub: `repo_id` narrows the list to a library, then `path` to a folder
      let list = ctx.db.uploadLinksOf(r.user!.email);
      const repoId = r.query.get('repo_id');
      if (repoId) {
        const { repo } = ctx.repoFor(r.user!, repoId);
        list = list.filter((l) => l.repoId === repo.id);
        const p = r.query.get('path');
        if (p) {
          const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(p));
          if (e?.type !== 'dir') throw new HttpError(404, `folder ${p} not found.`);
          const dir = cleanPath(p);
          list = list.filter((l) => l.path === (dir === '/' ? '/' : dir + '/'));
        }
      }
      sendLinks(r, list, (l) => uploadLinkShape(ctx, r, l));
    },
  },
  {
    method: 'POST',
    path: '/api/v2.1/upload-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const expire = requestedExpiry(form);
      const rec = await createUploadLink(ctx, r, form.get('repo_id'), form.get('path'), form.get('password'), expire);
      sendJson(r.res, 200, uploadLinkShape(ctx, r, rec));
    },
  },
  deleteLinkRoute(uploadLinks),
  {
    method: 'GET',
    path: '/api2/events',
    auth: 'user',
    handler: async (_c, r) => sendJson(r.res, 200, { events: [], more: false, more_offset: 0 }),
  },
];

async function createUploadLink(
  ctx: Ctx,
  r: Req,
  repoId: string | undefined,
  p: string | undefined,
  password?: string,
  /** epoch seconds, or undefined: never */
  expire?: number,
) {
  if (!repoId) throw new HttpError(400, 'repo_id invalid.');
  const { repo } = ctx.repoFor(r.user!, repoId, 'rw');
  // as share links: the server cannot encrypt what an anonymous uploader sends (the page refuses it too)
  if (repo.encrypted) throw new HttpError(403, 'Permission denied.');
  const path = cleanPath(p ?? '/');
  const e = await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(path));
  if (e?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  const linkPath = path === '/' ? '/' : path + '/';
  // as seahub: the user's link for that folder is handed back rather than a second one made
  const existing = ctx.db.uploadLinksOf(r.user!.email).find((l) => l.repoId === repo.id && l.path === linkPath);
  if (existing) return existing;
  const rec: UploadLinkRec = {
    token: ctx.newToken().slice(0, 20),
    username: r.user!.email,
    repoId: repo.id,
    path: linkPath,
    ctime: Math.floor(Date.now() / 1000),
    password: password ? hashPassword(password) : '',
    expire: expire ?? null,
  };
  ctx.db.addUploadLink(rec);
  await ctx.db.save();
  return rec;
}
