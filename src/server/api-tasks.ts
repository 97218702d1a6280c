// The background tasks of seahub's web interface, done at once here:
// async batch copy/move (/api/v2.1/repos/async-batch-{copy,move}-item/,
// then query-copy-move-progress and copy-move-task), and the zip of a folder
// or several items (repos/{id}/zip-task/, query-zip-progress, cancel-zip-task,
// then the file server's /seafhttp/zip/<token>). Answers as seahub 10 and the
// C server give them: a task id, then {done, total, canceled, failed,
// successful}; a zip token, then {zipped, total}.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Ctx, Req } from './context.js';
import type { User } from './db.js';
import { HttpError, sendFileServerError, sendJson, sendText } from './http.js';
import { getEntry, transfer } from './ops.js';
import type { Route } from './router.js';
import { readDir, splitPath, type DirEnt } from './tree.js';
import { zipLength, zipStream, type ZipEntry } from './zip.js';

/** seahub's MAX_DOWNLOAD_DIR_SIZE: larger folders are refused (400) */
const MAX_ZIP_BYTES = 100 * 1000 * 1000;
const TASK_TTL_MS = 3600_000;
/** archives streamed at once; one more answers 503 with Retry-After and keeps its token */
export const MAX_ZIP_DOWNLOADS = 4;
/** archives being sent, per server */
const zipsSending = new WeakMap<Ctx, number>();

interface CopyTask {
  total: number;
  failed: boolean;
  failedReason: string;
  expires: number;
}

/** What goes in an archive: a file by its object id (read when the archive is made), or an empty folder. */
interface ZipItem {
  name: string;
  id: string | null;
  size: number;
  mtime: number;
}

interface ZipTask {
  user: string;
  repoId: string;
  /** name of the archive (without .zip) */
  name: string;
  items: ZipItem[];
  expires: number;
}

const copyTasks = new Map<string, CopyTask>();
const zipTasks = new Map<string, ZipTask>();

function sweep(): void {
  const now = Date.now();
  for (const [k, t] of copyTasks) if (t.expires <= now) copyTasks.delete(k);
  for (const [k, t] of zipTasks) if (t.expires <= now) zipTasks.delete(k);
}

async function asyncBatch(ctx: Ctx, r: Req, op: 'copy' | 'move'): Promise<void> {
  const user = r.user!;
  const form = await r.form({ json: true });
  const src = form.get('src_repo_id');
  if (!src) throw new HttpError(400, 'src_repo_id invalid.');
  const srcDir = form.get('src_parent_dir');
  if (!srcDir) throw new HttpError(400, 'src_parent_dir invalid.');
  const names = form.getAll('src_dirents');
  if (names.length === 0) throw new HttpError(400, 'src_dirents invalid.');
  const dst = form.get('dst_repo_id');
  if (!dst) throw new HttpError(400, 'dst_repo_id invalid.');
  const dstDir = form.get('dst_parent_dir');
  if (!dstDir) throw new HttpError(400, 'dst_parent_dir invalid.');
  for (const [id, dir] of [
    [src, srcDir],
    [dst, dstDir],
  ]) {
    if (!ctx.visibleRepo(user, id)) throw new HttpError(404, `Library ${id} not found.`);
    if ((await getEntry(ctx, id, dir))?.type !== 'dir') throw new HttpError(404, `Folder ${dir} not found.`);
  }
  const srcRepo = ctx.db.repo(src)!;
  const dstRepo = ctx.db.repo(dst)!;
  const canSrc = ctx.permission(user, srcRepo);
  if (!canSrc || (op === 'move' && canSrc !== 'rw')) throw new HttpError(403, 'Permission denied.');
  if (ctx.permission(user, dstRepo) !== 'rw') throw new HttpError(403, 'Permission denied.');
  if (op === 'move') {
    for (const n of names) {
      const lock = ctx.db.lock(src, '/' + [...splitPath(srcDir), n].join('/'));
      if (lock && lock.owner !== user.email) throw new HttpError(403, `File ${n} is locked.`);
    }
  }
  // between two libraries the content must be readable: an encrypted one needs its password
  if (src !== dst) for (const repo of [srcRepo, dstRepo]) ctx.requireUnlocked(user, repo);
  const task: CopyTask = { total: names.length, failed: false, failedReason: '', expires: Date.now() + TASK_TTL_MS };
  try {
    await transfer(ctx, user, op, src, srcDir, names, dst, dstDir, { sameFolderRenames: true });
  } catch (e) {
    // the C server reports a failure through the progress, not the request
    task.failed = true;
    task.failedReason = (e as Error).message;
  }
  sweep();
  const id = ctx.newToken();
  copyTasks.set(id, task);
  sendJson(r.res, 200, { task_id: id });
}

async function addTree(ctx: Ctx, out: ZipItem[], prefix: string, e: DirEnt, budget: { left: number }) {
  if (e.type === 'file') {
    budget.left -= e.size;
    if (budget.left >= 0) out.push({ name: prefix + e.name, id: e.id, size: e.size, mtime: e.mtime });
    return;
  }
  // as the C server's archives: folders appear through their files; an empty one as an entry of its own
  const children = await readDir(ctx.store, e.id);
  if (children.length === 0) out.push({ name: `${prefix}${e.name}/`, id: null, size: 0, mtime: e.mtime });
  for (const c of children) await addTree(ctx, out, `${prefix}${e.name}/`, c, budget);
}

/**
 * The archive's entries, each read when the archive reaches it as the file
 * server's download reads a file object (fileserver.ts): the one place here
 * that knows how content is stored, to follow it when that changes (blocks).
 */
function zipEntries(ctx: Ctx, items: ZipItem[]): ZipEntry[] {
  return items.map((it) => ({
    name: it.name,
    size: it.id ? it.size : 0,
    mtime: it.mtime,
    open: () => ctx.blocks.open(it.id!, 0, it.size - 1),
  }));
}

/**
 * Sends the archive as it is made; a failure on the way cuts the answer (its
 * length tells the client), and so does a client that takes nothing for the
 * body idle timeout: it would hold one of the few places for good.
 */
async function sendZip(ctx: Ctx, r: Req, t: ZipTask): Promise<void> {
  const entries = zipEntries(ctx, t.items);
  r.res.writeHead(200, {
    'Content-Type': 'application/zip',
    'Content-Length': zipLength(entries),
    'Content-Disposition': `attachment;filename*=UTF-8''${encodeURIComponent(t.name)}.zip`,
  });
  const idleMs = (ctx.opts.bodyIdleSec ?? 30) * 1000;
  let moved = Date.now();
  async function* watched() {
    for await (const piece of zipStream(entries)) {
      moved = Date.now();
      yield piece;
    }
  }
  const stall =
    idleMs > 0
      ? setInterval(
          () => {
            if (Date.now() - moved >= idleMs) r.res.destroy();
          },
          Math.max(10, idleMs / 4),
        ).unref()
      : undefined;
  zipsSending.set(ctx, (zipsSending.get(ctx) ?? 0) + 1);
  try {
    await pipeline(Readable.from(watched()), r.res);
  } catch (e) {
    if (!r.res.destroyed) ctx.log(`zip of ${t.repoId} cut short: ${(e as Error).message}`);
    r.res.destroy();
  } finally {
    clearInterval(stall);
    zipsSending.set(ctx, zipsSending.get(ctx)! - 1);
  }
}

async function zipTask(ctx: Ctx, r: Req, user: User, dir: string | null | undefined, names: string[]) {
  const { repo } = ctx.repoFor(user, r.params[0]);
  if (!dir) throw new HttpError(400, 'parent_dir invalid.');
  if (names.length === 0) throw new HttpError(400, 'dirents invalid.');
  if ((await getEntry(ctx, repo.id, dir))?.type !== 'dir') throw new HttpError(404, `Folder ${dir} not found.`);
  const entries: ZipItem[] = [];
  const budget = { left: MAX_ZIP_BYTES };
  const comps = splitPath(dir);
  const clean = names.map((n) => n.replace(/^\/+|\/+$/g, ''));
  if (clean.length === 1) {
    const e = await getEntry(ctx, repo.id, '/' + [...comps, clean[0]].join('/'));
    if (e?.type !== 'dir') throw new HttpError(404, `Folder ${[...comps, clean[0]].join('/')} not found.`);
  }
  for (const n of clean) {
    const e = await getEntry(ctx, repo.id, '/' + [...comps, n].join('/'));
    if (e) await addTree(ctx, entries, '', e, budget); // missing names are left out, as seahub
  }
  if (budget.left < 0) throw new HttpError(400, 'Unable to download directory: size is too large.');
  sweep();
  const token = ctx.newToken();
  const name = clean.length === 1 ? clean[0] : `documents-export-${new Date().toISOString().slice(0, 10)}`;
  zipTasks.set(token, { user: user.email, repoId: repo.id, name, items: entries, expires: Date.now() + TASK_TTL_MS });
  sendJson(r.res, 200, { zip_token: token });
}

export const taskRoutes: Route[] = [
  {
    method: 'POST',
    path: '/api/v2.1/repos/async-batch-copy-item',
    auth: 'user',
    handler: (c, r) => asyncBatch(c, r, 'copy'),
  },
  {
    method: 'POST',
    path: '/api/v2.1/repos/async-batch-move-item',
    auth: 'user',
    handler: (c, r) => asyncBatch(c, r, 'move'),
  },
  {
    method: 'GET',
    path: '/api/v2.1/query-copy-move-progress',
    auth: 'user',
    handler: async (_c, r) => {
      const id = r.query.get('task_id');
      if (!id) throw new HttpError(400, 'task_id invalid.');
      const t = copyTasks.get(id);
      if (!t) throw new HttpError(500, 'Error');
      // the C server counts files done and in all (ints); a task here is done when its id is handed out
      sendJson(r.res, 200, {
        done: t.total,
        total: t.total,
        canceled: false,
        failed: t.failed,
        successful: !t.failed,
        ...(t.failed ? { failed_reason: t.failedReason } : {}),
      });
    },
  },
  {
    // a task here is over before its id is handed out: nothing is left to cancel
    method: 'DELETE',
    path: '/api/v2.1/copy-move-task',
    auth: 'user',
    handler: async (_c, r) => {
      const form = await r.form({ json: true });
      if (!(form.get('task_id') ?? r.query.get('task_id'))) throw new HttpError(400, 'task_id invalid.');
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'POST',
    path: '/api/v2.1/repos/:repo/zip-task',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      await zipTask(ctx, r, r.user!, form.get('parent_dir'), form.getAll('dirents'));
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/repos/:repo/zip-task',
    auth: 'user',
    handler: (ctx, r) => zipTask(ctx, r, r.user!, r.query.get('parent_dir'), r.query.getAll('dirents')),
  },
  {
    method: 'GET',
    path: '/api/v2.1/query-zip-progress',
    auth: 'user',
    handler: async (_c, r) => {
      const token = r.query.get('token');
      if (!token) throw new HttpError(400, 'token invalid.');
      const t = zipTasks.get(token);
      if (!t) throw new HttpError(404, 'progress not found.');
      const n = t.items.length;
      sendJson(r.res, 200, { zipped: n, total: n, failed: 0, failed_reason: '', canceled: 0 });
    },
  },
  {
    method: 'POST',
    path: '/api/v2.1/cancel-zip-task',
    auth: 'user',
    handler: async (_c, r) => {
      const token = (await r.form({ json: true })).get('token');
      if (!token) throw new HttpError(400, 'token invalid.');
      zipTasks.delete(token);
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    // the file server's answer to a zip token: the archive, once (the token is spent)
    method: 'GET',
    path: '/seafhttp/zip/:token',
    auth: 'none',
    handler: async (ctx, r) => {
      const t = zipTasks.get(r.params[0]);
      // the C server's words (plain text) for a token it does not know or that was spent
      if (!t || t.expires <= Date.now()) return sendText(r.res, 403, 'Access token not found\n');
      // a bound on the disk reads and sockets archives hold: the token stays good for a retry
      if ((zipsSending.get(ctx) ?? 0) >= MAX_ZIP_DOWNLOADS)
        return sendText(r.res, 503, 'Too many archives are being downloaded, try again later.\n', {
          'Retry-After': '5',
        });
      zipTasks.delete(r.params[0]);
      const repo = ctx.db.repo(t.repoId);
      if (repo && !ctx.isUnlocked(t.user, repo))
        return sendFileServerError(r.res, 400, 'Repo is encrypted. Please provide password to view it.');
      await sendZip(ctx, r, t);
    },
  },
];
