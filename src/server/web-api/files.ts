// File endpoints, V2 (/api2/repos/{id}/file/...) and V2.1, plus the batch
// operations (/api2/repos/{id}/fileops/..., /api/v2.1/repos/sync-batch-*).
import type { Ctx, Permission, Req } from '../context.js';
import type { RepoMeta, User } from '../store/db.js';
import { HttpError, isoTime, objInfoV21, sendJson } from '../http.js';
import { checkName } from '../store/names.js';
import { ZERO_ID } from '../store/objects.js';
import {
  deleteEntries,
  getEntry,
  putFiles,
  renameEntry,
  transfer,
  UnescapedMoveName,
} from '../store/library-changes.js';
import type { Route } from '../router.js';
import { fileBlockList } from './block-links.js';
import { sendParentListing, wantsReload } from './dirs.js';
import { readDir, splitPath, type DirEnt } from '../store/tree.js';

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
    user: r.user?.email ?? null,
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
    last_modifier_contact_email: ctx.contactOf(e.modifier),
    starred: ctx.db.isStarred(user.email, repo.id, full),
    can_edit: perm === 'rw',
    comment_total: 0, // seahub's file comments: none here
    // seahub 10 CE's api2 file detail has no is_locked
    ...(ctx.pro ? { is_locked: !!ctx.db.lock(repo.id, full) } : {}),
  });
}

async function fileLink(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0]);
  const p = requireP(r);
  const reuse = r.query.get('reuse') ?? '0';
  if (reuse !== '0' && reuse !== '1')
    throw new HttpError(
      400,
      "If you want to reuse file server access token for download file, you should set 'reuse' argument as '1'.",
    );
  const e = await fileAt(ctx, repo.id, p);
  if (r.query.get('op') === 'downloadblks') return fileBlockList(ctx, r, repo, e);
  // given for a locked encrypted library too: the file server refuses the download (fileserver/files.ts)
  sendJson(r.res, 200, downloadUrl(ctx, r, repo, e, reuse === '1'), { oid: e.id });
}

function fileInfoV21(ctx: Ctx, repoId: string, p: string, e: DirEnt) {
  return {
    ...objInfoV21('file', repoId, p, e),
    size: e.size,
    is_locked: !!ctx.db.lock(repoId, normPath(p)),
  };
}

/** POST .../file/?p= with operation create|rename|move|copy (V2 answers 201/301/301/200; V2.1 the file info). */
export async function postFile(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: v21 });
  const op = form.get('operation');
  const p = requireP(r, r.query.get('p') ?? form.get('p'));
  const comps = splitPath(p);
  const parent = '/' + comps.slice(0, -1).join('/');
  const name = comps[comps.length - 1];
  if (op === 'create') {
    const { repo } = ctx.repoFor(user, r.params[0], 'rw');
    const name = ctx.checkDirentName(checkName(comps[comps.length - 1]));
    await ctx.checkFileCount(repo.id);
    const [made] = await putFiles(ctx, user, repo.id, parent, [{ name, id: ZERO_ID, size: 0 }], {
      replace: false,
      desc: `Added "${name}"`,
    });
    const finalPath = (parent === '/' ? '' : parent) + '/' + made.name;
    if (v21) return sendJson(r.res, 200, fileInfoV21(ctx, repo.id, finalPath, await fileAt(ctx, repo.id, finalPath)));
    if (wantsReload(r)) return sendParentListing(ctx, r, user, repo.id, finalPath);
    return sendJson(r.res, 201, 'success', {
      Location: `${r.base}/api2/repos/${repo.id}/file/?p=${encodeURIComponent(finalPath)}`,
    });
  }
  if (op === 'rename') {
    const { repo } = ctx.repoFor(user, r.params[0], 'rw');
    const newName = checkName(form.get('newname'));
    const res = await renameEntry(ctx, user, repo.id, p, newName, 'file').catch((e: unknown) => {
      // seahub's api2 FileView asks the C server, whose failure is a 520 (V2.1 checks first: 404)
      if (!v21 && e instanceof HttpError && e.status === 404 && e.message === 'File not found.')
        throw new HttpError(520, 'Failed to rename file: file does not exist');
      throw e;
    });
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
    await fileAt(ctx, repo.id, p);
    const [moved] = await transfer(ctx, user, op, repo.id, parent, [name], dst.id, dstDir).catch((e: unknown) => {
      throw e instanceof UnescapedMoveName ? new HttpError(500, 'SearpcError:move file failed') : e;
    });
    const dstComps = splitPath(dstDir);
    const finalPath = '/' + [...dstComps, moved.name].join('/');
    if (v21) return sendJson(r.res, 200, fileInfoV21(ctx, dst.id, finalPath, moved.entry));
    const loc = { Location: `${r.base}/api2/repos/${dst.id}/file/?p=${encodeURIComponent(finalPath)}` };
    // seahub names where the file landed (a clash in the destination is renamed)
    const landed = {
      repo_id: dst.id,
      parent_dir: dstComps.length ? `/${dstComps.join('/')}/` : '/',
      obj_name: moved.name,
    };
    return sendJson(r.res, op === 'move' ? 301 : 200, landed, loc);
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
  // seahub 10's V2.1 names the commit of the delete
  sendJson(r.res, 200, v21 ? { success: true, commit_id: (await ctx.heads.get(repo.id)).commit_id } : 'success');
}

/**
 * PUT .../file/ with operation lock|unlock (p in the form for V2, in the query
 * for V2.1), answered as seahub 10 does: V2 in api2/views.py FileView.put,
 * V2.1 in api2/endpoints/file.py FileView.put.
 */
async function lockFile(ctx: Ctx, r: Req, v21: boolean): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: v21 });
  if (v21 && !ctx.pro) throw new HttpError(403, 'file lock feature only supported in professional edition.');
  const p = form.get('p') ?? r.query.get('p');
  const op = (form.get('operation') ?? '').toLowerCase();
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const e = await getEntry(ctx, repo.id, p ?? '/').catch(() => null);
  if (!p || e?.type !== 'file') {
    if (v21) throw new HttpError(404, `File ${p} not found.`);
    throw new HttpError(400, 'Path is missing or invalid.');
  }
  if (perm !== 'rw') throw new HttpError(403, 'Permission denied.');
  const full = normPath(p);
  const lock = ctx.db.lock(repo.id, full);
  if (op === 'lock') {
    if (lock) throw v21 ? new HttpError(400, 'File is locked') : new HttpError(403, 'File is already locked');
    // CE seahub calls seafile_api.lock_file, which CE's seaserv lacks: an uncaught AttributeError
    if (!ctx.pro) return sendDjangoServerError(r);
    ctx.db.setLock(repo.id, full, user.email);
  } else if (op === 'unlock') {
    if (!lock) throw v21 ? new HttpError(400, 'File is not locked.') : new HttpError(403, 'File is not locked');
    if (lock.owner !== user.email) throw new HttpError(403, 'You can not unlock this file');
    ctx.db.removeLock(repo.id, full);
  } else {
    throw new HttpError(
      400,
      v21 ? "operation can only be 'lock', 'unlock' or 'refresh-lock'." : 'Operation can only be lock or unlock',
    );
  }
  await ctx.db.save();
  sendJson(r.res, 200, v21 ? fileInfoV21(ctx, repo.id, p, e) : 'success');
}

/** Django's answer to an uncaught exception with DEBUG off: a 500 HTML page. */
function sendDjangoServerError(r: Req): void {
  const page =
    '<!DOCTYPE html>\n<html lang="en">\n<head>\n    <title>Page unavailable</title>\n</head>\n<body>\n' +
    '    <h1>Page unavailable</h1>\n\n    <p>Sorry, but the requested page is unavailable due to a server hiccup.</p>\n' +
    '\n    <p>Our engineers have been notified, so check back later.</p>\n</body>\n</html>\n';
  r.res.writeHead(500, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(page) });
  r.res.end(page);
}

/**
 * POST /api2/repos/{id}/fileops/{copy,move,delete}/ (deprecated in seahub):
 * the names joined with ':' and split again, so a name holding ':' cannot be
 * named here. Move answers as seahub 10 OpMoveView does.
 */
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
  if (op === 'move' && dstRepoId === repo.id && dstDir === p)
    throw new HttpError(400, 'The destination directory is the same as the source.');
  const dst = ctx.repoFor(user, dstRepoId, 'rw').repo;
  const folder = await getEntry(ctx, repo.id, p);
  if (folder?.type !== 'dir') throw new HttpError(404, `Folder ${p} not found.`);
  const there = new Set((await readDir(ctx.store, folder.id)).map((e) => e.name));
  if (!names.every((n) => there.has(n))) throw new HttpError(400, 'file_names invalid.');
  const done = await transfer(ctx, user, op, repo.id, p, names, dst.id, dstDir).catch((e: unknown) => {
    throw e instanceof UnescapedMoveName ? new HttpError(520, 'Failed to move file.') : e;
  });
  // as seahub's OpCopyView/OpMoveView: where each name landed (a clash is renamed)
  sendJson(
    r.res,
    200,
    done.map((m) => ({ repo_id: dst.id, parent_dir: dstDir, obj_name: m.name })),
  );
}

/**
 * POST /api/v2.1/repos/sync-batch-{copy,move}-item/, answered as seahub 10
 * does (api2/endpoints/repos_batch.py, then the C server's
 * copy/move_multiple_files): each missing field is its own 400, a library or
 * folder that does not exist 404, and {"success": true} also when a name is
 * missing (nothing is moved then). A clash in the destination is
 * auto-renamed; a move into the same folder renames ("x (1).txt").
 */
async function syncBatch(ctx: Ctx, r: Req, op: 'copy' | 'move'): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: true });
  const srcRepo = form.get('src_repo_id');
  if (!srcRepo) throw new HttpError(400, 'src_repo_id invalid.');
  const srcDir = form.get('src_parent_dir');
  if (!srcDir) throw new HttpError(400, 'src_parent_dir invalid.');
  const names = form.getAll('src_dirents');
  if (names.length === 0) throw new HttpError(400, 'src_dirents invalid.');
  const dstRepo = form.get('dst_repo_id');
  if (!dstRepo) throw new HttpError(400, 'dst_repo_id invalid.');
  const dstDir = form.get('dst_parent_dir');
  if (!dstDir) throw new HttpError(400, 'dst_parent_dir invalid.');
  for (const [id, dir] of [
    [srcRepo, srcDir],
    [dstRepo, dstDir],
  ]) {
    if (!ctx.visibleRepo(user, id)) throw new HttpError(404, `Library ${id} not found.`);
    if ((await getEntry(ctx, id, dir))?.type !== 'dir') throw new HttpError(404, `Folder ${dir} not found.`);
  }
  const canSrc = permissionOf(ctx, user, srcRepo);
  if (canSrc === null || (op === 'move' && canSrc !== 'rw')) throw new HttpError(403, 'Permission denied.');
  if (permissionOf(ctx, user, dstRepo) !== 'rw') throw new HttpError(403, 'Permission denied.');
  if (op === 'move') {
    for (const n of names) {
      const lock = ctx.db.lock(srcRepo, normPath(`${srcDir}/${n}`));
      if (lock && lock.owner !== user.email) throw new HttpError(403, `File ${n} is locked.`);
    }
  }
  const folder = await getEntry(ctx, srcRepo, srcDir);
  const there = new Set((await readDir(ctx.store, folder!.id)).map((e) => e.name));
  // the C server fails before it changes anything, and seahub still answers success
  if (names.every((n) => there.has(n)))
    await transfer(ctx, user, op, srcRepo, srcDir, names, dstRepo, dstDir, { sameFolderRenames: true });
  sendJson(r.res, 200, { success: true });
}

/**
 * DELETE /api/v2.1/repos/batch-delete-item/ (JSON repo_id, parent_dir,
 * dirents), answered as seahub 10 does: a 400 per missing field, 404 for a
 * missing library or folder, success for names that are not there.
 */
async function batchDeleteItems(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: true });
  const repoId = form.get('repo_id');
  if (!repoId) throw new HttpError(400, 'repo_id invalid.');
  const dir = form.get('parent_dir');
  if (!dir) throw new HttpError(400, 'parent_dir invalid.');
  const names = form.getAll('dirents');
  if (names.length === 0) throw new HttpError(400, 'dirents invalid.');
  if (!ctx.visibleRepo(user, repoId)) throw new HttpError(404, `Library ${repoId} not found.`);
  if ((await getEntry(ctx, repoId, dir))?.type !== 'dir') throw new HttpError(404, `Folder ${dir} not found.`);
  if (permissionOf(ctx, user, repoId) !== 'rw') throw new HttpError(403, 'Permission denied.');
  for (const n of names) {
    const lock = ctx.db.lock(repoId, normPath(`${dir}/${n}`));
    if (lock && lock.owner !== user.email) throw new HttpError(403, `File ${n} is locked.`);
  }
  await deleteEntries(ctx, user, repoId, dir, names);
  sendJson(r.res, 200, { success: true, commit_id: (await ctx.heads.get(repoId)).commit_id });
}

function permissionOf(ctx: Ctx, user: User, repoId: string): Permission | null {
  const repo = ctx.db.repo(repoId);
  return repo ? ctx.permission(user, repo) : null;
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
  { method: 'DELETE', path: '/api/v2.1/repos/batch-delete-item', auth: 'user', handler: batchDeleteItems },
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
