// Folder endpoints, V2 (/api2/repos/{id}/dir/) and V2.1 (/api/v2.1/repos/{id}/dir/).
import type { Ctx, Permission, Req } from '../context.js';
import type { User } from '../store/db.js';
import { HttpError, isoTime, objInfoV21, sendJson } from '../http.js';
import { checkName } from '../store/names.js';
import { deleteEntries, headRoot, listFolder, makeDir, renameEntry } from '../store/library-changes.js';
import type { Route } from '../router.js';
import { lookup, readDir, splitPath, type DirEnt } from '../store/tree.js';

function byListingOrder(a: DirEnt, b: DirEnt): number {
  if (a.type !== b.type) return a.type === 'dir' ? -1 : 1;
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** One entry of a folder listing, with the fields real servers send. */
export function listingEntry(ctx: Ctx, user: User, repoId: string, parentPath: string, e: DirEnt, perm: Permission) {
  if (e.type === 'dir') return { type: 'dir', id: e.id, name: e.name, mtime: e.mtime, permission: perm };
  const full = (parentPath === '/' ? '/' : parentPath + '/') + e.name;
  const lock = ctx.db.lock(repoId, full);
  const modifier = ctx.db.user(e.modifier);
  const entry = {
    type: 'file',
    id: e.id,
    name: e.name,
    mtime: e.mtime,
    permission: perm,
    size: e.size,
    modifier_email: e.modifier,
    modifier_name: modifier?.name ?? e.modifier,
    modifier_contact_email: ctx.contactOf(e.modifier),
    starred: ctx.db.isStarred(user.email, repoId, full),
  };
  // seahub lists the lock fields only `if is_pro_version()`
  if (!ctx.pro) return entry;
  return {
    ...entry,
    is_locked: !!lock,
    lock_owner: lock?.owner ?? '',
    lock_time: lock?.time ?? 0,
    locked_by_me: !!lock && lock.owner === user.email,
  };
}

interface ListOpts {
  t: 'f' | 'd' | null;
  recursive: boolean;
}

function listOpts(r: Req): ListOpts {
  const t = r.query.get('t');
  if (t !== null && t !== 'f' && t !== 'd') throw new HttpError(400, 't invalid.');
  const rec = r.query.get('recursive');
  if (rec !== null && rec !== '0' && rec !== '1') throw new HttpError(400, 'recursive invalid.');
  return { t, recursive: rec === '1' };
}

/**
 * Entries of a folder, or of its whole subtree (flat, each with parent_dir).
 * parent_dir mirrors real servers: the requested path as given at the top
 * level, then joined paths without a trailing slash deeper down.
 */
async function collect(
  ctx: Ctx,
  user: User,
  repoId: string,
  perm: Permission,
  rawP: string,
  dirId: string,
  o: ListOpts,
) {
  const comps = splitPath(rawP);
  const norm = '/' + comps.join('/');
  const out: Record<string, unknown>[] = [];
  const visit = async (id: string, parentShown: string, parentNorm: string) => {
    const entries = [...(await readDir(ctx.store, id))].sort(byListingOrder);
    for (const e of entries) {
      if (!o.t || (o.t === 'f') === (e.type === 'file')) {
        const item: Record<string, unknown> = listingEntry(ctx, user, repoId, parentNorm, e, perm);
        if (o.recursive) item.parent_dir = parentShown;
        out.push(item);
      }
    }
    if (o.recursive) {
      for (const e of entries) {
        if (e.type !== 'dir') continue;
        const childNorm = (parentNorm === '/' ? '' : parentNorm) + '/' + e.name;
        await visit(e.id, childNorm, childNorm);
      }
    }
  };
  await visit(dirId, rawP.startsWith('/') ? rawP : '/' + rawP, norm);
  return out;
}

async function listV2(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const o = listOpts(r);
  const rawP = r.query.get('p') || '/';
  const folder = await listFolder(ctx, await headRoot(ctx, repo.id), splitPath(rawP), rawP);
  const headers = { oid: folder.id, dir_perm: perm };
  if (r.query.get('oid') === folder.id) return sendJson(r.res, 200, 'uptodate', headers);
  sendJson(r.res, 200, await collect(ctx, user, repo.id, perm, rawP, folder.id, o), headers);
}

/**
 * The parent folder's listing, as seahub's `reloaddir` answers a mkdir or a
 * file create asked with `reloaddir=true` (200, the entries, its oid).
 */
export async function sendParentListing(ctx: Ctx, r: Req, user: User, repoId: string, made: string): Promise<void> {
  const { perm } = ctx.repoFor(user, repoId);
  const parent = '/' + splitPath(made).slice(0, -1).join('/');
  const folder = await listFolder(ctx, await headRoot(ctx, repoId), splitPath(parent), parent);
  const o: ListOpts = { t: null, recursive: false };
  sendJson(r.res, 200, await collect(ctx, user, repoId, perm, parent, folder.id, o), {
    oid: folder.id,
    dir_perm: perm,
  });
}

/** `reloaddir=true` in the query (seahub reads it case-blind) */
export function wantsReload(r: Req): boolean {
  return (r.query.get('reloaddir') ?? '').toLowerCase() === 'true';
}

async function listV21(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const o = listOpts(r);
  const rawP = r.query.get('p') || '/';
  const folder = await listFolder(ctx, await headRoot(ctx, repo.id), splitPath(rawP), rawP);
  const items = await collect(ctx, user, repo.id, perm, rawP, folder.id, o);
  const norm = '/' + splitPath(rawP).join('/');
  // V2.1 names the parent of every entry, recursive or not
  if (!o.recursive) for (const it of items) it.parent_dir = norm === '/' ? '/' : norm + '/';
  // (the folder's id is in dir_id: seahub's V2.1 listing sends no oid header)
  sendJson(r.res, 200, { user_perm: perm, dir_id: folder.id, dirent_list: items });
}

function dirInfoV21(repoId: string, p: string, e: DirEnt) {
  return objInfoV21('dir', repoId, p, e);
}

export async function postDir(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0], 'rw');
  const form = await r.form({ json: v21 });
  const p = r.query.get('p') ?? form.get('p');
  if (!p) throw new HttpError(400, 'p invalid.');
  const op = form.get('operation');
  if (op === 'mkdir') {
    const parents = ['true', '1'].includes(
      (form.get('create_parents') ?? r.query.get('create_parents') ?? '').toLowerCase(),
    );
    const made = await makeDir(ctx, user, repo.id, p, parents);
    if (v21) {
      const e = (await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(made)))!;
      return sendJson(r.res, 200, dirInfoV21(repo.id, made, e));
    }
    if (wantsReload(r)) return sendParentListing(ctx, r, user, repo.id, made);
    return sendJson(r.res, 201, 'success', {
      Location: `${r.base}/api2/repos/${repo.id}/dir/?p=${encodeURIComponent(made)}`,
    });
  }
  if (op === 'rename') {
    const newName = checkName(form.get('newname'));
    const res = await renameEntry(ctx, user, repo.id, p, newName, 'dir');
    if (v21) {
      const comps = splitPath(p);
      const finalPath = '/' + [...comps.slice(0, -1), res ? res.name : comps[comps.length - 1]].join('/');
      const e = (await lookup(ctx.store, await headRoot(ctx, repo.id), splitPath(finalPath)))!;
      return sendJson(r.res, 200, dirInfoV21(repo.id, finalPath, e));
    }
    return sendJson(r.res, 200, 'success');
  }
  throw new HttpError(400, 'operation invalid.');
}

async function deleteDir(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0], 'rw');
  const p = r.query.get('p');
  if (!p) throw new HttpError(400, 'p invalid.');
  const comps = splitPath(p);
  if (comps.length === 0) throw new HttpError(400, 'Can not delete root path.');
  const n = await deleteEntries(ctx, user, repo.id, '/' + comps.slice(0, -1).join('/'), [comps[comps.length - 1]]);
  if (n === 0) throw new HttpError(404, `Folder ${p} not found.`);
  // seahub 10's V2.1 names the commit of the delete
  sendJson(r.res, 200, v21 ? { success: true, commit_id: (await ctx.heads.get(repo.id)).commit_id } : 'success');
}

export const dirRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos/:repo/dir', auth: 'user', handler: listV2 },
  { method: 'POST', path: '/api2/repos/:repo/dir', auth: 'user', handler: (c, r) => postDir(c, r, false) },
  { method: 'DELETE', path: '/api2/repos/:repo/dir', auth: 'user', handler: (c, r) => deleteDir(c, r, false) },
  { method: 'GET', path: '/api/v2.1/repos/:repo/dir', auth: 'user', handler: listV21 },
  { method: 'POST', path: '/api/v2.1/repos/:repo/dir', auth: 'user', handler: (c, r) => postDir(c, r, true) },
  { method: 'DELETE', path: '/api/v2.1/repos/:repo/dir', auth: 'user', handler: (c, r) => deleteDir(c, r, true) },
  {
    method: 'GET',
    path: '/api/v2.1/repos/:repo/dir/detail',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo, perm } = ctx.repoFor(r.user!, r.params[0]);
      const p = r.query.get('path') ?? r.query.get('p') ?? '/';
      const comps = splitPath(p);
      const e = await lookup(ctx.store, await headRoot(ctx, repo.id), comps);
      if (e?.type !== 'dir') throw new HttpError(404, `Folder ${p} not found.`);
      let files = 0;
      let dirs = 0;
      for (const c of await readDir(ctx.store, e.id)) {
        if (c.type === 'dir') dirs++;
        else files++;
      }
      sendJson(r.res, 200, {
        repo_id: repo.id,
        path: '/' + comps.join('/') + (comps.length ? '/' : ''),
        name: comps.length ? comps[comps.length - 1] : repo.name,
        mtime: isoTime(e.mtime || (await ctx.heads.get(repo.id)).mtime),
        permission: perm,
        size: e.size,
        file_count: files,
        dir_count: dirs,
      });
    },
  },
];
