// File endpoints, V2 (/api2/repos/{id}/file/...) and V2.1, plus the batch
// operations (/api2/repos/{id}/fileops/..., /api/v2.1/repos/sync-batch-*).
import type { Ctx, Req } from './context.js';
import type { RepoMeta } from './db.js';
import { HttpError, isoTime, objInfoV21, sendJson } from './http.js';
import { checkName } from './names.js';
import { ZERO_ID } from './objects.js';
import { deleteEntries, getEntry, putFiles, renameEntry, transfer } from './ops.js';
import type { Route } from './router.js';
import { splitPath, type DirEnt } from './tree.js';

export function requireP(r: Req, v?: string | null): string {
  const p = v ?? r.query.get('p');
  if (!p) throw new HttpError(400, 'Path is missing.');
  if (splitPath(p).length === 0) throw new HttpError(400, 'Path invalid.');
  return p;
}

export function normPath(p: string): string {
  return '/' + splitPath(p).join('/');
}

export async function fileAt(ctx: Ctx, repoId: string, p: string): Promise<DirEnt> {
  const e = await getEntry(ctx, repoId, p);
  if (e?.type !== 'file') throw new HttpError(404, 'File not found');
  return e;
}

/** Issues a download token for a file object and returns the link. */
export function downloadUrl(
  ctx: Ctx,
  r: Req,
  repo: RepoMeta,
  e: { id: string; size: number; name: string },
  reuse: boolean,
): string {
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.downloads.set(token, {
    repoId: repo.id,
    fileId: e.id,
    size: e.size,
    name: e.name,
    reuse,
    expires: Date.now() + ctx.linkTtlMs,
    encrypted: repo.encrypted,
  });
  return `${r.base}/seafhttp/files/${token}/${encodeURIComponent(e.name)}`;
}

async function fileDetail(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const p = requireP(r);
  const e = await fileAt(ctx, repo.id, p);
  const full = normPath(p);
  sendJson(r.res, 200, {
    type: 'file',
    id: e.id,
    name: e.name,
    mtime: e.mtime,
    size: e.size,
    permission: perm,
    parent_dir: '/' + splitPath(p).slice(0, -1).join('/'),
    last_modified: isoTime(e.mtime),
    last_modifier_email: e.modifier,
    last_modifier_name: ctx.db.user(e.modifier)?.name ?? e.modifier,
    last_modifier_contact_email: e.modifier,
    starred: ctx.db.isStarred(user.email, repo.id, full),
    can_edit: perm === 'rw',
    is_locked: !!ctx.db.lock(repo.id, full),
  });
}

async function fileLink(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0]);
  const p = requireP(r);
  const e = await fileAt(ctx, repo.id, p);
  ctx.requireUnlocked(user, repo);
  sendJson(r.res, 200, downloadUrl(ctx, r, repo, e, r.query.get('reuse') === '1'), { oid: e.id });
}

function fileInfoV21(ctx: Ctx, repoId: string, p: string, e: DirEnt) {
  return {
    ...objInfoV21('file', repoId, p, e),
    size: e.size,
    is_locked: !!ctx.db.lock(repoId, normPath(p)),
  };
}

/** POST .../file/?p= with operation create|rename|move|copy (V2 answers 201/301/301/200; V2.1 the file info). */
async function postFile(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: v21 });
  const op = form.get('operation');
  const p = requireP(r, r.query.get('p') ?? form.get('p'));
  const comps = splitPath(p);
  const parent = '/' + comps.slice(0, -1).join('/');
  const name = comps[comps.length - 1];
  if (op === 'create') {
    const { repo } = ctx.repoFor(user, r.params[0], 'rw');
    const name = checkName(comps[comps.length - 1]);
    const [made] = await putFiles(ctx, user, repo.id, parent, [{ name, id: ZERO_ID, size: 0 }], {
      replace: false,
      desc: `Added "${name}"`,
    });
    const finalPath = (parent === '/' ? '' : parent) + '/' + made.name;
    if (v21) return sendJson(r.res, 200, fileInfoV21(ctx, repo.id, finalPath, await fileAt(ctx, repo.id, finalPath)));
    return sendJson(r.res, 201, 'success', {
      Location: `${r.base}/api2/repos/${repo.id}/file/?p=${encodeURIComponent(finalPath)}`,
    });
  }
  if (op === 'rename') {
    const { repo } = ctx.repoFor(user, r.params[0], 'rw');
    const newName = checkName(form.get('newname'));
    const res = await renameEntry(ctx, user, repo.id, p, newName, 'file');
    if (!res && !v21) throw new HttpError(409, 'The new name is the same to the old');
    const finalPath = (parent === '/' ? '' : parent) + '/' + (res ? res.name : name);
    if (v21) return sendJson(r.res, 200, fileInfoV21(ctx, repo.id, finalPath, await fileAt(ctx, repo.id, finalPath)));
    return sendJson(r.res, 301, 'success', {
      Location: `${r.base}/api2/repos/${repo.id}/file/?p=${encodeURIComponent(finalPath)}`,
    });
  }
  if (op === 'move' || op === 'copy') {
    const { repo } = ctx.repoFor(user, r.params[0], op === 'move' ? 'rw' : 'r');
    const dstRepoId = form.get('dst_repo');
    const dstDir = form.get('dst_dir');
    if (!dstRepoId || !dstDir) throw new HttpError(400, 'Missing arguments.');
    const dst = ctx.repoFor(user, dstRepoId, 'rw').repo;
    if (op === 'copy' && repo.encrypted) ctx.requireUnlocked(user, repo);
    await fileAt(ctx, repo.id, p);
    const [moved] = await transfer(ctx, user, op, repo.id, parent, [name], dst.id, dstDir);
    const dstComps = splitPath(dstDir);
    const finalPath = '/' + [...dstComps, moved.name].join('/');
    if (v21) return sendJson(r.res, 200, fileInfoV21(ctx, dst.id, finalPath, moved.entry));
    const loc = { Location: `${r.base}/api2/repos/${dst.id}/file/?p=${encodeURIComponent(finalPath)}` };
    return sendJson(r.res, op === 'move' ? 301 : 200, 'success', loc);
  }
  throw new HttpError(400, 'operation invalid.');
}

async function deleteFile(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0], 'rw');
  const p = requireP(r);
  const comps = splitPath(p);
  try {
    await deleteEntries(ctx, user, repo.id, '/' + comps.slice(0, -1).join('/'), [comps[comps.length - 1]]);
  } catch (e) {
    // V2.1 tells a file locked by someone else apart: 423
    if (v21 && e instanceof HttpError && e.message === 'File is locked') throw new HttpError(423, e.message);
    throw e;
  }
  sendJson(r.res, 200, v21 ? { success: true } : 'success');
}

/** PUT .../file/ with operation lock|unlock (p in the form for V2, in the query for V2.1). */
async function lockFile(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: v21 });
  const p = requireP(r, form.get('p') ?? r.query.get('p'));
  const op = form.get('operation');
  const { repo } = ctx.repoFor(user, r.params[0], 'rw');
  const e = await fileAt(ctx, repo.id, p);
  const full = normPath(p);
  const lock = ctx.db.lock(repo.id, full);
  if (op === 'lock') {
    if (lock) throw new HttpError(403, 'File is already locked');
    ctx.db.setLock(repo.id, full, user.email);
  } else if (op === 'unlock') {
    if (!lock) throw new HttpError(400, 'File is not locked.');
    if (lock.owner !== user.email) throw new HttpError(403, 'You can not unlock this file.');
    ctx.db.removeLock(repo.id, full);
  } else {
    throw new HttpError(400, 'operation invalid.');
  }
  await ctx.db.save();
  sendJson(r.res, 200, v21 ? fileInfoV21(ctx, repo.id, p, e) : 'success');
}

async function batch(ctx: Ctx, r: Req, op: 'copy' | 'move' | 'delete'): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: false });
  const p = form.get('p') ?? r.query.get('p') ?? '/';
  const names = (form.get('file_names') ?? r.query.get('file_names') ?? '').split(':').filter(Boolean);
  if (names.length === 0) throw new HttpError(400, 'File or directory names are missing.');
  const { repo } = ctx.repoFor(user, r.params[0], op === 'copy' ? 'r' : 'rw');
  if (op === 'delete') {
    await deleteEntries(ctx, user, repo.id, p, names);
    return sendJson(r.res, 200, 'success');
  }
  const dstRepoId = form.get('dst_repo');
  const dstDir = form.get('dst_dir');
  if (!dstRepoId || !dstDir) throw new HttpError(400, 'Missing arguments.');
  const dst = ctx.repoFor(user, dstRepoId, 'rw').repo;
  try {
    await transfer(ctx, user, op, repo.id, p, names, dst.id, dstDir);
  } catch (e) {
    if (e instanceof HttpError && e.status === 404)
      throw new HttpError(502, `Failed to ${op} ${names.join(', ')}: ${e.message}`);
    throw e;
  }
  sendJson(r.res, 200, 'success');
}

async function syncBatch(ctx: Ctx, r: Req, op: 'copy' | 'move'): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: true });
  const srcRepo = form.get('src_repo_id');
  const srcDir = form.get('src_parent_dir');
  const dstRepo = form.get('dst_repo_id');
  const dstDir = form.get('dst_parent_dir');
  const names = form.getAll('src_dirents');
  if (!srcRepo || !srcDir || !dstRepo || !dstDir || names.length === 0) throw new HttpError(400, 'Missing arguments.');
  ctx.repoFor(user, srcRepo, op === 'move' ? 'rw' : 'r');
  ctx.repoFor(user, dstRepo, 'rw');
  await transfer(ctx, user, op, srcRepo, srcDir, names, dstRepo, dstDir);
  sendJson(r.res, 200, { success: true });
}

export const fileRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos/:repo/file/detail', auth: 'user', handler: fileDetail },
  { method: 'GET', path: '/api2/repos/:repo/file', auth: 'user', handler: fileLink },
  { method: 'POST', path: '/api2/repos/:repo/file', auth: 'user', handler: (c, r) => postFile(c, r, false) },
  { method: 'DELETE', path: '/api2/repos/:repo/file', auth: 'user', handler: (c, r) => deleteFile(c, r, false) },
  { method: 'PUT', path: '/api2/repos/:repo/file', auth: 'user', handler: (c, r) => lockFile(c, r, false) },
  {
    method: 'GET',
    path: '/api/v2.1/repos/:repo/file',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      const p = requireP(r);
      sendJson(r.res, 200, fileInfoV21(ctx, repo.id, p, await fileAt(ctx, repo.id, p)));
    },
  },
  { method: 'POST', path: '/api/v2.1/repos/:repo/file', auth: 'user', handler: (c, r) => postFile(c, r, true) },
  { method: 'DELETE', path: '/api/v2.1/repos/:repo/file', auth: 'user', handler: (c, r) => deleteFile(c, r, true) },
  { method: 'PUT', path: '/api/v2.1/repos/:repo/file', auth: 'user', handler: (c, r) => lockFile(c, r, true) },
  { method: 'POST', path: '/api2/repos/:repo/fileops/copy', auth: 'user', handler: (c, r) => batch(c, r, 'copy') },
  { method: 'POST', path: '/api2/repos/:repo/fileops/move', auth: 'user', handler: (c, r) => batch(c, r, 'move') },
  { method: 'POST', path: '/api2/repos/:repo/fileops/delete', auth: 'user', handler: (c, r) => batch(c, r, 'delete') },
  {
    method: 'POST',
    path: '/api/v2.1/repos/sync-batch-move-item',
    auth: 'user',
    handler: (c, r) => syncBatch(c, r, 'move'),
  },
  {
    method: 'POST',
    path: '/api/v2.1/repos/sync-batch-copy-item',
    auth: 'user',
    handler: (c, r) => syncBatch(c, r, 'copy'),
  },
];
