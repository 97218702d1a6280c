// Account, library and lookup endpoints of seahub's web interface (what
// seafile-js calls) beyond the spec, answered as seahub 10 does: the V2.1
// user, avatars, user search, a library's history limit, the V2.1 library
// (get, delete), an encrypted library's password change, file search in a
// library, smart links, resumable-upload offsets, and V2.1 starred items.
import { createHash } from 'node:crypto';
import type { Ctx, Req } from '../context.js';
import type { RepoMeta } from '../store/db.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import { getEntry, headRoot } from '../store/library-changes.js';
import { magicOf, passwordMatches } from '../auth/repo-crypto.js';
import type { Route } from '../router.js';
import { lookup, splitPath, walkTree } from '../store/tree.js';

const avatar = (r: Req) => `${r.base}/media/avatars/default.png`;

function userInfo(ctx: Ctx, email: string) {
  const u = ctx.db.user(email);
  return {
    email,
    name: u?.name ?? email,
    contact_email: ctx.contactOf(email),
    telephone: '',
    login_id: '',
    list_in_address_book: false,
  };
}

/** The owner of a library: 404 when the caller cannot see it, 403 for anyone else. */
function ownedRepo(ctx: Ctx, r: Req): RepoMeta {
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  return repo;
}

async function repoV21(ctx: Ctx, r: Req): Promise<void> {
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  const perm = ctx.permission(r.user!, repo)!;
  const head = await ctx.heads.get(repo.id);
  let files = 0;
  await walkTree(ctx.store, head.root_id, [], (e) => {
    if (e.type === 'file') files++;
  });
  const owner = ctx.db.user(repo.owner);
  sendJson(r.res, 200, {
    repo_id: repo.id,
    repo_name: repo.name,
    owner_email: repo.owner,
    owner_name: owner?.name ?? repo.owner,
    owner_contact_email: ctx.contactOf(repo.owner),
    size: head.size,
    encrypted: repo.encrypted,
    file_count: files,
    permission: perm,
    no_quota: (await ctx.quotaLeft(repo)) < 0,
    is_admin: repo.owner === r.user!.email,
    is_virtual: false,
    has_been_shared_out: ctx.db.sharesOfRepo(repo.id).length + ctx.db.groups.sharesOfRepo(repo.id).length > 0,
    lib_need_decrypt: repo.encrypted && !ctx.isUnlocked(r.user!.email, repo),
    last_modified: isoTime(head.mtime),
    status: 'normal',
  });
}

/** PUT /api/v2.1/repos/{id}/set-password/ (old_password, new_password): the owner changes it. */
async function changePassword(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  const op = form.get('operation') ?? 'change-password';
  if (op !== 'change-password') throw new HttpError(400, 'operation invalid.');
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (!repo.encrypted) throw new HttpError(400, `Library ${repo.id} is not encrypted.`);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  const old = form.get('old_password');
  if (!old) throw new HttpError(400, 'old_password invalid.');
  const fresh = form.get('new_password');
  if (!fresh) throw new HttpError(400, 'new_password invalid.');
  if (!passwordMatches(repo, old)) throw new HttpError(403, 'Wrong old password');
  repo.magic = magicOf(repo.id, fresh, repo.salt);
  await ctx.db.save();
  sendJson(r.res, 200, { success: true });
}

/** A stable uuid for a file or folder of a library (seahub keeps one per dirent in FileUUIDMap). */
function direntUuid(repoId: string, p: string, isDir: boolean): string {
  const h = createHash('sha1').update(`${repoId}\n${p}\n${isDir}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const webRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/v2.1/user',
    auth: 'user',
    handler: async (ctx, r) => sendJson(r.res, 200, userInfo(ctx, r.user!.email)),
  },
  {
    method: 'PUT',
    path: '/api/v2.1/user',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const name = form.get('name');
      if (name !== undefined) {
        if (name.length > 64) throw new HttpError(400, 'Name is too long (maximum is 64 characters)');
        if (name.includes('/')) throw new HttpError(400, "Name should not include '/'.");
        r.user!.name = name;
        await ctx.db.save();
      }
      sendJson(r.res, 200, userInfo(ctx, r.user!.email));
    },
  },
  {
    // no uploaded avatars here: every account has seahub's default one
    method: 'GET',
    path: '/api2/avatars/user/:user/resized/:size',
    auth: 'user',
    handler: async (_c, r) => {
      if (!/^\d+$/.test(r.params[1])) throw new HttpError(404, 'Not found.');
      sendJson(r.res, 200, { url: avatar(r), is_default: true, mtime: 0 });
    },
  },
  {
    method: 'GET',
    path: '/api2/avatars/group/:group/resized/:size',
    auth: 'user',
    handler: async (_c, r) => {
      if (!/^\d+$/.test(r.params[1])) throw new HttpError(404, 'Not found.');
      sendJson(r.res, 200, { url: `${r.base}/media/avatars/groups/default.png`, is_default: true, mtime: 0 });
    },
  },
  {
    method: 'GET',
    path: '/api2/search-user',
    auth: 'user',
    handler: async (ctx, r) => {
      const q = (r.query.get('q') ?? '').trim().toLowerCase();
      if (!q) throw new HttpError(400, 'q invalid.');
      const self = r.query.get('include_self') !== '0';
      const hits = ctx.db
        .allUsers()
        .filter((u) => u.isActive && (u.email.toLowerCase().includes(q) || u.name.toLowerCase().includes(q)))
        .filter((u) => self || u.email !== r.user!.email)
        .slice(0, 10);
      sendJson(r.res, 200, {
        users: hits.map((u) => ({
          email: u.email,
          avatar_url: avatar(r),
          name: u.name,
          contact_email: u.contactEmail ?? u.email,
        })),
      });
    },
  },
  {
    method: 'GET',
    path: '/api2/repos/:repo/history-limit',
    auth: 'user',
    handler: async (ctx, r) => sendJson(r.res, 200, { keep_days: ownedRepo(ctx, r).historyKeepDays ?? -1 }),
  },
  {
    method: 'PUT',
    path: '/api2/repos/:repo/history-limit',
    auth: 'user',
    handler: async (ctx, r) => {
      const repo = ownedRepo(ctx, r);
      const v = (await r.form({ json: true })).get('keep_days');
      if (!v || !/^-?\d+$/.test(v.trim())) throw new HttpError(400, 'keep_days invalid.');
      // as the C server: any negative value keeps all
      repo.historyKeepDays = Math.max(-1, Number(v));
      await ctx.db.save();
      sendJson(r.res, 200, { keep_days: repo.historyKeepDays });
    },
  },
  {
    // as seahub (api2/views.py RepoOwner.put): shares stay (but one to the new owner, and group shares
    // of groups the new owner is not in), the old owner's links on it pass to the new one
    method: 'PUT',
    path: '/api2/repos/:repo/owner',
    auth: 'user',
    handler: async (ctx, r) => {
      const to = (await r.form({ json: true })).get('owner');
      if (!to) throw new HttpError(400, 'owner invalid.');
      const repo = ctx.visibleRepo(r.user!, r.params[0]);
      if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
      const u = ctx.db.user(to);
      if (!u) throw new HttpError(404, `User ${to} not found.`);
      if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      if (u.email === repo.owner) throw new HttpError(400, 'Library can not be transferred to owner.');
      const from = repo.owner;
      repo.owner = u.email;
      ctx.db.removeShare(repo.id, u.email);
      for (const s of ctx.db.groups.sharesOfRepo(repo.id)) {
        const g = ctx.db.groups.get(s.groupId);
        if (!g || !ctx.db.groups.isMember(g, u.email)) ctx.db.groups.unshare(repo.id, s.groupId);
      }
      for (const l of [...ctx.db.shareLinksOf(from), ...ctx.db.uploadLinksOf(from)])
        if (l.repoId === repo.id) l.username = u.email;
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
  { method: 'GET', path: '/api/v2.1/repos/:repo', auth: 'user', handler: repoV21 },
  {
    method: 'DELETE',
    path: '/api/v2.1/repos/:repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const repo = ctx.visibleRepo(r.user!, r.params[0]);
      // seahub answers success for a library that is not there (nor, here, for one the caller cannot see)
      if (repo) {
        if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
        ctx.db.deleteRepo(repo.id);
        await ctx.db.save();
        await ctx.heads.remove(repo.id);
      }
      sendJson(r.res, 200, repo ? 'success' : { success: true });
    },
  },
  { method: 'PUT', path: '/api/v2.1/repos/:repo/set-password', auth: 'user', handler: changePassword },
  {
    method: 'GET',
    path: '/api/v2.1/search-file',
    auth: 'user',
    handler: async (ctx, r) => {
      const repoId = r.query.get('repo_id');
      if (!repoId) throw new HttpError(400, 'repo_id invalid.');
      const q = (r.query.get('q') ?? '').toLowerCase();
      if (!q) throw new HttpError(400, 'q invalid.');
      const repo = ctx.visibleRepo(r.user!, repoId);
      if (!repo) throw new HttpError(404, `Library ${repoId} not found.`);
      const files: { path: string; size: number; mtime: number; type: string }[] = [];
      const folders: typeof files = [];
      await walkTree(ctx.store, await headRoot(ctx, repo.id), [], (e, parent) => {
        if (!e.name.toLowerCase().includes(q)) return;
        const p = '/' + [...parent, e.name].join('/');
        if (e.type === 'dir') folders.push({ path: p + '/', size: 0, mtime: e.mtime, type: 'folder' });
        else files.push({ path: p, size: e.size, mtime: e.mtime, type: 'file' });
      });
      const byTime = (a: { mtime: number }, b: { mtime: number }) => b.mtime - a.mtime;
      sendJson(r.res, 200, {
        data: [...folders.sort(byTime), ...files.sort(byTime)].map((x) => ({ ...x, mtime: isoTime(x.mtime) })),
      });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/smart-link',
    auth: 'user',
    handler: async (ctx, r) => {
      const repoId = r.query.get('repo_id');
      if (!repoId) throw new HttpError(400, 'repo_id invalid.');
      const p = r.query.get('path');
      if (!p) throw new HttpError(400, 'path invalid.');
      const isDir = (r.query.get('is_dir') ?? '').toLowerCase();
      if (!isDir) throw new HttpError(400, 'is_dir invalid.');
      if (isDir !== 'true' && isDir !== 'false') throw new HttpError(400, "is_dir can only be 'true' or 'false'.");
      const repo = ctx.visibleRepo(r.user!, repoId);
      if (!repo) throw new HttpError(404, `Library ${repoId} not found.`);
      const comps = splitPath(p);
      const e = await lookup(ctx.store, await headRoot(ctx, repo.id), comps);
      if (isDir === 'true' && e?.type !== 'dir') throw new HttpError(404, `Folder ${p} not found.`);
      if (isDir === 'false' && e?.type !== 'file') throw new HttpError(404, `File ${p} not found.`);
      const name = comps.length ? comps[comps.length - 1] : '';
      const uuid = direntUuid(repo.id, '/' + comps.join('/'), isDir === 'true');
      sendJson(r.res, 200, { smart_link: `${r.base}/smart-link/${uuid}/`, smart_link_token: uuid, name });
    },
  },
  {
    // resumable uploads keep no partial files here: nothing is ever half uploaded
    method: 'GET',
    path: '/api/v2.1/repos/:repo/file-uploaded-bytes',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      const dir = r.query.get('parent_dir');
      if (!dir) throw new HttpError(400, 'parent_dir invalid.');
      if (!r.query.get('file_name')) throw new HttpError(400, 'file_name invalid.');
      if ((await getEntry(ctx, repo.id, dir))?.type !== 'dir') throw new HttpError(404, `Folder ${dir} not found.`);
      sendJson(r.res, 200, { uploadedBytes: 0 });
    },
  },
  ...starredRoutes(),
  // mail: this server sends none, and answers as seahub does when its mail is not configured
  ...['/api2/send-share-link', '/api2/send-upload-link'].map((path): Route => ({
    method: 'POST',
    path,
    auth: 'user',
    handler: async () => {
      throw new HttpError(
        403,
        'Failed to send email, email service is not properly configured, please contact administrator.',
      );
    },
  })),
  {
    // ENABLE_RESET_ENCRYPTED_REPO_PASSWORD is off by default in seahub: it mails the new password
    method: 'POST',
    path: '/api/v2.1/repos/:repo/send-new-password',
    auth: 'user',
    handler: async () => {
      throw new HttpError(403, 'Feature disabled.');
    },
  },
];

function starredRoutes(): Route[] {
  const info = async (ctx: Ctx, r: Req, repo: RepoMeta, p: string) => {
    const comps = splitPath(p);
    const e = comps.length ? await lookup(ctx.store, await headRoot(ctx, repo.id), comps) : null;
    const isDir = comps.length === 0 || e?.type === 'dir';
    const mtime = comps.length === 0 ? (await ctx.heads.get(repo.id)).mtime : (e?.mtime ?? 0);
    const me = r.user!.email;
    return {
      repo_id: repo.id,
      repo_name: repo.name,
      repo_encrypted: repo.encrypted,
      is_dir: isDir,
      path: comps.length === 0 ? '/' : '/' + comps.join('/') + (isDir ? '/' : ''),
      obj_name: comps.length === 0 ? repo.name : comps[comps.length - 1],
      mtime: isoTime(mtime),
      deleted: comps.length > 0 && !e,
      user_email: me,
      user_name: r.user!.name,
      user_contact_email: me,
    };
  };
  const args = (ctx: Ctx, r: Req, repoId: string | null | undefined, p: string | null | undefined) => {
    if (!repoId) throw new HttpError(400, 'repo_id invalid.');
    if (!p) throw new HttpError(400, 'path invalid.');
    const repo = ctx.visibleRepo(r.user!, repoId);
    if (!repo) throw new HttpError(404, `Library ${repoId} not found.`);
    return { repo, path: '/' + splitPath(p).join('/') };
  };
  return [
    {
      method: 'GET',
      path: '/api/v2.1/starred-items',
      auth: 'user',
      handler: async (ctx, r) => {
        const out = [];
        for (const s of ctx.db.starsOf(r.user!.email)) {
          const repo = ctx.db.repo(s.repoId);
          if (repo && ctx.permission(r.user!, repo)) out.push(await info(ctx, r, repo, s.path));
        }
        sendJson(r.res, 200, { starred_item_list: out });
      },
    },
    {
      method: 'POST',
      path: '/api/v2.1/starred-items',
      auth: 'user',
      handler: async (ctx, r) => {
        const form = await r.form({ json: true });
        const { repo, path } = args(ctx, r, form.get('repo_id'), form.get('path'));
        if (path !== '/' && !(await getEntry(ctx, repo.id, path))) throw new HttpError(404, `${path} not found.`);
        if (ctx.db.star(r.user!.email, repo.id, path)) await ctx.db.save();
        sendJson(r.res, 200, await info(ctx, r, repo, path));
      },
    },
    {
      method: 'DELETE',
      path: '/api/v2.1/starred-items',
      auth: 'user',
      handler: async (ctx, r) => {
        const { repo, path } = args(ctx, r, r.query.get('repo_id'), r.query.get('path'));
        ctx.db.unstar(r.user!.email, repo.id, path);
        await ctx.db.save();
        sendJson(r.res, 200, { success: true });
      },
    },
  ];
}
