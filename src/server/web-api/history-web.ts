// History endpoints of seahub's web interface beyond the spec, answered as
// seahub 10 does (api2/endpoints/file_history.py, repo_commit_dir.py,
// repo_commit_revert.py, repo_trash.py): a file's history (new_history and
// the V2.1 history), a folder of an old commit, a library put back to a
// commit, the trash listed by POST, and trash items restored in bulk; plus
// `operation=revert` of the V2.1 file and folder endpoints.
import type { Ctx, Req } from '../context.js';
import type { Form } from '../http.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import { commitOf, fileRevisions, revertDirTo, revertFileTo, trash } from './history.js';
import type { Route } from '../router.js';
import { postFile } from './files.js';
import { postDir } from './dirs.js';
import { lookup, readDir, splitPath } from '../store/tree.js';

const avatar = (r: Req) => `${r.base}/media/avatars/default.png`;

function author(ctx: Ctx, r: Req, email: string) {
  return {
    creator_avatar_url: avatar(r),
    creator_email: email,
    creator_name: ctx.db.user(email)?.name ?? email,
    creator_contact_email: ctx.contactOf(email),
  };
}

function pathArg(r: Req): string[] {
  const p = r.query.get('path');
  if (!p) throw new HttpError(400, 'path invalid.');
  return splitPath(p);
}

/** GET /api/v2.1/repos/{id}/file/new_history/?path=&page=&per_page= */
async function newHistory(ctx: Ctx, r: Req): Promise<void> {
  const comps = pathArg(r);
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const head = await ctx.heads.get(repo.id);
  if ((await lookup(ctx.store, head.root_id, comps))?.type !== 'file')
    throw new HttpError(404, `File ${r.query.get('path')} not found.`);
  const page = Math.max(1, Number(r.query.get('page') ?? 1) || 1);
  const per = Math.max(1, Number(r.query.get('per_page') ?? 25) || 25);
  const revs = await fileRevisions(ctx, head.commit_id, comps);
  const path = '/' + comps.join('/');
  const data = revs.slice((page - 1) * per, page * per).map(({ c, e }, i) => ({
    ...author(ctx, r, c.creator_name),
    // the oldest version was the file's creation
    op_type: (page - 1) * per + i === revs.length - 1 ? 'create' : 'edit',
    ctime: isoTime(c.ctime),
    commit_id: c.id,
    size: e.size,
    rev_file_id: e.id,
    old_path: '',
    path,
  }));
  sendJson(r.res, 200, { data, page, total_count: revs.length });
}

/** GET /api/v2.1/repos/{id}/file/history/?path=&commit_id= (the file history from that commit back) */
async function historyV21(ctx: Ctx, r: Req): Promise<void> {
  const comps = pathArg(r);
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const start = r.query.get('commit_id') || (await ctx.heads.get(repo.id)).commit_id;
  const c0 = await commitOf(ctx, repo.id, start);
  if ((await lookup(ctx.store, c0.root_id, comps))?.type !== 'file')
    throw new HttpError(404, `File ${r.query.get('path')} not found.`);
  const limit = Math.max(1, Number(r.query.get('limit') ?? 50) || 50);
  const revs = await fileRevisions(ctx, c0.id, comps);
  const path = '/' + comps.join('/');
  const data = revs.slice(0, limit).map(({ c, e }) => ({
    ...author(ctx, r, c.creator_name),
    ctime: isoTime(c.ctime),
    description: c.desc,
    commit_id: c.id,
    size: e.size,
    rev_file_id: e.id,
    rev_renamed_old_path: null,
    path,
  }));
  // the next page starts at the parent of the oldest commit shown
  const next = revs.length > limit ? (revs[limit - 1].c.parent_id ?? false) : false;
  sendJson(r.res, 200, { data, next_start_commit: next });
}

async function commitDir(ctx: Ctx, r: Req): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const c = await commitOf(ctx, repo.id, r.params[1]);
  const raw = r.query.get('path') ?? '/';
  const comps = splitPath(raw);
  const dir = await lookup(ctx.store, c.root_id, comps);
  if (dir?.type !== 'dir') throw new HttpError(404, `Folder ${raw} not found.`);
  // seahub shows the folder asked for, normalised with a trailing slash
  const parent = comps.length ? '/' + comps.join('/') + '/' : '/';
  sendJson(r.res, 200, {
    dirent_list: (await readDir(ctx.store, dir.id)).map((e) => ({
      type: e.type,
      ...(e.type === 'file' ? { size: e.size } : {}),
      parent_dir: parent,
      obj_id: e.id,
      name: e.name,
    })),
  });
}

/** POST /api/v2.1/repos/{id}/commits/{c}/revert/: the library becomes what it was at that commit, in a new commit. */
async function revertRepo(ctx: Ctx, r: Req): Promise<void> {
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  const c = await commitOf(ctx, repo.id, r.params[1]).catch(() => {
    throw new HttpError(404, `Commit ${r.params[1]} not found.`);
  });
  // as seahub: only the owner (or a repo admin) may put a library back
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  if (!ctx.isUnlocked(r.user!.email, repo)) throw new HttpError(403, 'This library has not been decrypted.');
  const owner = ctx.db.user(repo.owner);
  await ctx.underQuota(owner?.email, async () => {
    const now = await ctx.heads.get(repo.id);
    if (owner && owner.quota >= 0) await ctx.requireQuota(repo, (await readSize(ctx, c.root_id)) - now.size);
    await ctx.heads.change(repo.id, r.user!.email, async () => ({
      root: c.root_id,
      desc: `Reverted repo to status at ${isoTime(c.ctime)}.`,
      result: null,
    }));
  });
  sendJson(r.res, 200, { success: true });
}

async function readSize(ctx: Ctx, rootId: string): Promise<number> {
  return (await readDir(ctx.store, rootId)).reduce((n, e) => n + e.size, 0);
}

/** POST .../trash/revert-dirents/ (path repeated, commit_id): each restored as its type asks. */
async function revertDirents(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  const paths = form.getAll('path');
  if (paths.length === 0) throw new HttpError(400, 'path invalid.');
  const commitId = form.get('commit_id');
  if (!commitId) throw new HttpError(400, 'commit_id invalid.');
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (ctx.permission(r.user!, repo) !== 'rw') throw new HttpError(403, 'Permission denied.');
  const success: { path: string; is_dir: boolean }[] = [];
  const failed: { path: string; error_msg: string }[] = [];
  for (const p of paths) {
    try {
      const c = await commitOf(ctx, repo.id, commitId);
      const e = await lookup(ctx.store, c.root_id, splitPath(p));
      if (e?.type === 'dir') await revertDirTo(ctx, r.user!, repo, p, commitId);
      else if (e?.type === 'file') await revertFileTo(ctx, r.user!, repo, p, commitId);
      else {
        failed.push({ path: p, error_msg: `Dirent ${p} not found.` });
        continue;
      }
      success.push({ path: p, is_dir: e.type === 'dir' });
    } catch (err) {
      failed.push({ path: p, error_msg: (err as Error).message });
    }
  }
  sendJson(r.res, 200, { failed, success });
}

/**
 * `operation=revert` (with commit_id) of POST /api/v2.1/repos/{id}/file/ and
 * .../dir/: the file or folder of that commit put back ({"success": true}).
 */
export async function revertV21(ctx: Ctx, r: Req, form: Form, p: string, kind: 'file' | 'dir'): Promise<void> {
  const commitId = form.get('commit_id');
  if (!commitId) throw new HttpError(400, 'commit_id invalid.');
  const { repo } = ctx.repoFor(r.user!, r.params[0], 'rw');
  if (kind === 'file') {
    ctx.checkNotLocked(r.user!, repo.id, '/' + splitPath(p).join('/'));
    await revertFileTo(ctx, r.user!, repo, p, commitId);
  } else await revertDirTo(ctx, r.user!, repo, p, commitId);
  sendJson(r.res, 200, { success: true });
}

export const historyWebRoutes: Route[] = [
  { method: 'GET', path: '/api/v2.1/repos/:repo/file/new_history', auth: 'user', handler: newHistory },
  { method: 'GET', path: '/api/v2.1/repos/:repo/file/history', auth: 'user', handler: historyV21 },
  { method: 'GET', path: '/api/v2.1/repos/:repo/commits/:commit/dir', auth: 'user', handler: commitDir },
  { method: 'POST', path: '/api/v2.1/repos/:repo/commits/:commit/revert', auth: 'user', handler: revertRepo },
  { method: 'POST', path: '/api/v2.1/repos/:repo/trash/revert-dirents', auth: 'user', handler: revertDirents },
  {
    // seafile-js lists the trash by POST with a JSON body (path, scan_stat), as seahub 10 allows
    method: 'POST',
    path: '/api/v2.1/repos/:repo/trash',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      for (const k of ['path', 'scan_stat', 'per_page']) {
        const v = form.get(k);
        if (v !== undefined) r.query.set(k, v);
      }
      await trash(ctx, r);
    },
  },
];

/**
 * POST /api/v2.1/repos/{id}/file/ and .../dir/ with `operation=revert`; any
 * other operation goes on to web-api/files.ts / web-api/dirs.ts with the form already read.
 * Registered before those routes.
 */
export const revertOpRoutes: Route[] = (['file', 'dir'] as const).map((kind) => ({
  method: 'POST',
  path: `/api/v2.1/repos/:repo/${kind}`,
  auth: 'user' as const,
  handler: async (ctx: Ctx, r: Req) => {
    const form = await r.form({ json: true });
    if (form.get('operation') === 'revert') {
      const p = r.query.get('p');
      if (!p) throw new HttpError(400, 'p invalid.');
      return revertV21(ctx, r, form, p, kind);
    }
    r.form = async () => form;
    return kind === 'file' ? postFile(ctx, r, true) : postDir(ctx, r, true);
  },
}));
