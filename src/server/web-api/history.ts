// History that falls out of the commit chain: library history (V2, V2.1),
// file history, revision download, revert, and the trash (V2.1). None needs
// an encrypted library's password but a revert (and the V2.1 history, as on
// seahub 10.0): revision downloads are refused by the file server instead.
import type { Ctx, Req } from '../context.js';
import type { RepoMeta, User } from '../store/db.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import { downloadUrl, requireP } from './files.js';
import type { Commit } from '../store/heads.js';
import { putFiles, restoreDir } from '../store/library-changes.js';
import type { Route } from '../router.js';
import { lookup, readDir, splitPath, type DirEnt } from '../store/tree.js';

const MAX_SCAN = 10_000; // commits walked at most per request

export async function* commitsFrom(ctx: Ctx, id: string | null): AsyncGenerator<Commit> {
  let n = 0;
  while (id && n++ < MAX_SCAN) {
    const c = await ctx.heads.readCommit(id);
    yield c;
    id = c.parent_id;
  }
}

function publicCommit(c: Commit, extra: Record<string, unknown> = {}) {
  const { kind: _kind, ...rest } = c;
  // seahub's commit records also carry the desktop client's fields, null for web and API commits
  const sync = { client_version: null, device_name: null, next_start_commit: null };
  return { ...rest, rev_file_size: 0, rev_file_id: null, rev_renamed_old_path: null, ...sync, ...extra };
}

function paging(r: Req, defPer: number): { page: number; per: number } {
  const page = Math.max(1, Number(r.query.get('page') ?? 1) || 1);
  const per = Math.max(1, Number(r.query.get('per_page') ?? defPer) || defPer);
  return { page, per };
}

async function pageOfCommits(
  ctx: Ctx,
  repoId: string,
  page: number,
  per: number,
): Promise<{ list: Commit[]; more: boolean }> {
  const head = await ctx.heads.get(repoId);
  const list: Commit[] = [];
  let i = 0;
  for await (const c of commitsFrom(ctx, head.commit_id)) {
    if (i >= (page - 1) * per && i < page * per) list.push(c);
    i++;
    if (i > page * per) return { list, more: true };
  }
  return { list, more: false };
}

/**
 * The versions of the file at `comps`, newest first: each with the oldest
 * commit of the run holding that content (where that version appeared).
 */
export async function fileRevisions(
  ctx: Ctx,
  startCommit: string,
  comps: string[],
): Promise<{ c: Commit; e: DirEnt }[]> {
  const out: { c: Commit; e: DirEnt }[] = [];
  // `prev` is the oldest commit seen so far holding the same content: where that version appeared.
  let prev: { c: Commit; e: DirEnt } | null = null;
  for await (const c of commitsFrom(ctx, startCommit)) {
    const e = await lookup(ctx.store, c.root_id, comps);
    const present = e && e.type === 'file' ? e : null;
    if (prev && (!present || present.id !== prev.e.id)) out.push(prev);
    if (!present) {
      prev = null;
      break;
    }
    prev = { c, e: present };
  }
  if (prev) out.push(prev);
  return out;
}

async function fileHistory(ctx: Ctx, r: Req): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const comps = splitPath(requireP(r));
  const head = await ctx.heads.get(repo.id);
  const revs = await fileRevisions(ctx, head.commit_id, comps);
  if (revs.length === 0) throw new HttpError(404, 'File not found.');
  // as seahub 10 (api2/views.py FileHistory): each commit names its author in user_info
  const out = revs.map(({ c, e }) =>
    publicCommit(c, {
      rev_file_id: e.id,
      rev_file_size: e.size,
      user_info: {
        email: c.creator_name,
        name: ctx.db.user(c.creator_name)?.name ?? c.creator_name,
        contact_email: ctx.contactOf(c.creator_name),
      },
    }),
  );
  sendJson(r.res, 200, { commits: out });
}

export async function commitOf(ctx: Ctx, repoId: string, id: string | null): Promise<Commit> {
  if (!id || !/^[0-9a-f]{40}$/.test(id)) throw new HttpError(400, 'commit_id invalid.');
  try {
    const c = await ctx.heads.readCommit(id);
    if (c.repo_id === repoId && c.root_id) return c;
  } catch {
    /* missing object */
  }
  throw new HttpError(404, 'Revision not found.');
}

async function revision(ctx: Ctx, r: Req): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const p = requireP(r);
  const c = await commitOf(ctx, repo.id, r.query.get('commit_id'));
  const e = await lookup(ctx.store, c.root_id, splitPath(p));
  if (e?.type !== 'file') throw new HttpError(404, 'Revision not found.');
  sendJson(r.res, 200, downloadUrl(ctx, r, repo, e, r.query.get('reuse') === '1'), { oid: e.id });
}

/** Puts the file `p` of commit `commitId` back at its path (a file there is replaced, parents are made). */
export async function revertFileTo(ctx: Ctx, user: User, repo: RepoMeta, p: string, commitId: string | null) {
  ctx.requireUnlocked(user, repo);
  const c = await commitOf(ctx, repo.id, commitId);
  const comps = splitPath(p);
  const e = await lookup(ctx.store, c.root_id, comps);
  if (e?.type !== 'file') throw new HttpError(404, 'File not found in that revision.');
  await putFiles(ctx, user, repo.id, '/' + comps.slice(0, -1).join('/'), [{ name: e.name, id: e.id, size: e.size }], {
    replace: true,
    createParents: true,
    desc: `Reverted file "${e.name}"`,
  });
}

/** Puts the folder `p` of commit `commitId` back, as real servers restore trash folders. */
export async function revertDirTo(ctx: Ctx, user: User, repo: RepoMeta, p: string, commitId: string | null) {
  ctx.requireUnlocked(user, repo);
  const c = await commitOf(ctx, repo.id, commitId);
  const comps = splitPath(p);
  const e = await lookup(ctx.store, c.root_id, comps);
  if (e?.type !== 'dir') throw new HttpError(404, 'Folder not found in that revision.');
  await restoreDir(ctx, user, repo.id, '/' + comps.slice(0, -1).join('/'), e);
}

/** PUT /api2/repos/{id}/file/revert/ (p, commit_id), as a form or JSON (what seafile-js sends), as seahub takes both. */
async function revert(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  const { repo } = ctx.repoFor(r.user!, r.params[0], 'rw');
  const p = requireP(r, form.get('p') ?? r.query.get('p'));
  await revertFileTo(ctx, r.user!, repo, p, form.get('commit_id') ?? null);
  sendJson(r.res, 200, { ret: 0 });
}

/** PUT /api2/repos/{id}/dir/revert/ (p, commit_id), a form or JSON. */
async function revertDir(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  const { repo } = ctx.repoFor(r.user!, r.params[0], 'rw');
  const p = requireP(r, form.get('p') ?? r.query.get('p'));
  await revertDirTo(ctx, r.user!, repo, p, form.get('commit_id') ?? r.query.get('commit_id'));
  sendJson(r.res, 200, { success: true });
}

/** Entries present under `oldId` and gone under `newId`, recursing into changed folders. */
async function removed(
  ctx: Ctx,
  oldId: string,
  newId: string,
  parent: string[],
  out: { e: DirEnt; parent: string[] }[],
) {
  if (oldId === newId) return;
  const now = new Map((await readDir(ctx.store, newId)).map((e) => [e.name, e]));
  for (const e of await readDir(ctx.store, oldId)) {
    const n = now.get(e.name);
    if (!n || n.type !== e.type) out.push({ e, parent });
    else if (e.type === 'dir' && n.id !== e.id) await removed(ctx, e.id, n.id, [...parent, e.name], out);
  }
}

export async function trash(ctx: Ctx, r: Req): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  const base = splitPath(r.query.get('path') ?? '/');
  const per = Math.max(1, Number(r.query.get('per_page') ?? 100) || 100);
  const scan = r.query.get('scan_stat');
  const head = await ctx.heads.get(repo.id);
  const resume = scan && scan !== 'null' ? scan : null;
  // where the last page stopped: a commit of this library, never a path into the store
  if (resume !== null) {
    const c = /^[0-9a-f]{40}$/.test(resume) ? await ctx.heads.readCommit(resume).catch(() => null) : null;
    if (c?.repo_id !== repo.id) throw new HttpError(400, 'scan_stat invalid.');
  }
  const start = resume ?? head.commit_id;
  const data: Record<string, unknown>[] = [];
  const seen = new Set<string>(); // as real servers: one entry per path in an answer, the latest deletion
  let next: string | null = null;
  let scanned = 0;
  for await (const c of commitsFrom(ctx, start)) {
    if (c.id === repo.trashClearedAt) break;
    if (c.repo_id !== repo.id) throw new HttpError(400, 'scan_stat invalid.');
    if (data.length >= per || scanned++ >= 1000) {
      next = c.id; // resume here on the next call
      break;
    }
    if (c.kind !== 'delete' || !c.parent_id) continue;
    const parent = await ctx.heads.readCommit(c.parent_id);
    const out: { e: DirEnt; parent: string[] }[] = [];
    await removed(ctx, parent.root_id, c.root_id, [], out);
    for (const { e, parent: dir } of out) {
      if (!base.every((b, i) => dir[i] === b)) continue;
      const path = '/' + [...dir, e.name].join('/');
      if (seen.has(path)) continue;
      seen.add(path);
      // as real servers: what is back at its path (with its type) is no longer in the trash
      const now = await lookup(ctx.store, head.root_id, [...dir, e.name]);
      if (now?.type === e.type) continue;
      data.push({
        commit_id: parent.id,
        obj_id: e.id,
        obj_name: e.name,
        is_dir: e.type === 'dir',
        parent_dir: '/' + dir.map((d) => d + '/').join(''),
        size: e.type === 'file' ? e.size : 0,
        deleted_time: isoTime(c.ctime),
        scan_stat: null,
      });
    }
  }
  if (data.length) data[data.length - 1].scan_stat = next;
  sendJson(r.res, 200, { data, scan_stat: next, more: next !== null });
}

export const historyRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api2/repos/:repo/history',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      const { page, per } = paging(r, 25);
      const { list, more } = await pageOfCommits(ctx, repo.id, page, per);
      sendJson(r.res, 200, { commits: list.map((c) => publicCommit(c)), page_next: more });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/repos/:repo/history',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      // seahub 10.0 (repo_history.py) refuses this one listing of a locked encrypted library
      if (!ctx.isUnlocked(r.user!.email, repo))
        throw new HttpError(403, 'Library is encrypted, but password is not set in server.');
      const { page, per } = paging(r, 100);
      const { list, more } = await pageOfCommits(ctx, repo.id, page, per);
      sendJson(r.res, 200, {
        data: list.map((c) => ({
          commit_id: c.id,
          time: isoTime(c.ctime),
          description: c.desc,
          // seahub 10 (repo_history.py) names the author by email, name and contact_email
          email: c.creator_name,
          name: ctx.db.user(c.creator_name)?.name ?? c.creator_name,
          contact_email: ctx.contactOf(c.creator_name),
          creator: c.creator_name,
          creator_email: c.creator_name,
          creator_name: ctx.db.user(c.creator_name)?.name ?? c.creator_name,
          client_version: null,
          device_name: null,
          second_parent_id: null,
          tags: [], // snapshot labels: none here
        })),
        more,
      });
    },
  },
  { method: 'GET', path: '/api2/repos/:repo/file/history', auth: 'user', handler: fileHistory },
  { method: 'GET', path: '/api2/repos/:repo/file/revision', auth: 'user', handler: revision },
  { method: 'PUT', path: '/api2/repos/:repo/file/revert', auth: 'user', handler: revert },
  { method: 'PUT', path: '/api2/repos/:repo/dir/revert', auth: 'user', handler: revertDir },
  { method: 'GET', path: '/api/v2.1/repos/:repo/trash', auth: 'user', handler: trash },
  {
    method: 'DELETE',
    path: '/api/v2.1/repos/:repo/trash',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      // keep_days (seafile-js sends it as JSON): what was deleted in the last n days stays, 0 clears all
      const raw = (await r.form({ json: true })).get('keep_days') ?? '0';
      if (!/^-?\d+$/.test(raw.trim())) throw new HttpError(400, 'keep_days invalid.');
      const cutoff = Math.floor(Date.now() / 1000) - Math.max(0, Number(raw)) * 86400;
      let clearAt = (await ctx.heads.get(repo.id)).commit_id;
      if (Number(raw) > 0) {
        for await (const c of commitsFrom(ctx, clearAt)) {
          clearAt = c.id;
          if (c.ctime < cutoff) break;
        }
      }
      repo.trashClearedAt = clearAt;
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
];
