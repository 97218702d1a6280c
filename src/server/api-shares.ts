// Sharing libraries with other users and with groups: the V2 shared-repos /
// beshared-repos lists and the dir/shared_items endpoints (the library root;
// a sub-folder's are in api-folder-shares.ts).
// Only the owner shares a library, to a group only when a member of it.
import type { Ctx, Req } from './context.js';
import type { Group, RepoMeta, User } from './db.js';
import { HttpError, sendJson } from './http.js';
import type { Route } from './router.js';
import { folderSharedItems, sharesWanted, subFolderOf, userShareItem } from './api-folder-shares.js';

function shareRecord(repo: RepoMeta, s: { to: string; permission: string }, head: { mtime: number }) {
  return {
    repo_id: repo.id,
    repo_name: repo.name,
    repo_desc: repo.desc,
    share_type: 'personal',
    permission: s.permission,
    encrypted: repo.encrypted,
    user: s.to,
    share_from: repo.owner,
    last_modified: head.mtime,
    group_id: 0,
  };
}

async function shareWithUsers(ctx: Ctx, owner: User, repoId: string, users: string[], permission: string) {
  const repo = ctx.db.repo(repoId);
  if (!repo || ctx.permission(owner, repo) === null) throw new HttpError(404, 'Library not found.');
  if (repo.owner !== owner.email) throw new HttpError(403, 'Permission denied.');
  if (permission !== 'r' && permission !== 'rw') throw new HttpError(400, 'permission invalid.');
  const failed: { email: string; error_msg: string }[] = [];
  const success: string[] = [];
  for (const email of users) {
    const u = ctx.db.user(email);
    if (!u) failed.push({ email, error_msg: `User ${email} not found.` });
    else if (u.email === owner.email) failed.push({ email, error_msg: 'Cannot share to the library owner.' });
    else {
      ctx.db.setShare(repo.id, owner.email, u.email, permission);
      success.push(u.email);
    }
  }
  await ctx.db.save();
  return { repo, failed, success };
}

async function unshare(ctx: Ctx, owner: User, repoId: string, user: string): Promise<void> {
  const repo = ctx.db.repo(repoId);
  if (!repo || ctx.permission(owner, repo) === null) throw new HttpError(404, 'Library not found.');
  if (repo.owner !== owner.email) throw new HttpError(403, 'Permission denied.');
  ctx.db.removeShare(repo.id, user);
  await ctx.db.save();
}

async function shareWithGroups(ctx: Ctx, owner: User, repoId: string, ids: string[], permission: string) {
  const repo = ownRepo(ctx, owner, repoId);
  if (permission !== 'r' && permission !== 'rw') throw new HttpError(400, 'permission invalid.');
  const failed: { group_id: string; error_msg: string }[] = [];
  const success: Group[] = [];
  for (const id of ids) {
    const g = /^\d+$/.test(id) ? ctx.db.groups.get(Number(id)) : undefined;
    if (!g) failed.push({ group_id: id, error_msg: `Group ${id} not found.` });
    else if (!ctx.db.groups.isMember(g, owner.email)) failed.push({ group_id: id, error_msg: 'Permission denied.' });
    else {
      ctx.db.groups.share(repo.id, g.id, owner.email, permission);
      success.push(g);
    }
  }
  await ctx.db.save();
  return { failed, success };
}

async function unshareGroup(ctx: Ctx, owner: User, repoId: string, id: string | null): Promise<void> {
  const repo = ownRepo(ctx, owner, repoId);
  if (!id || !/^\d+$/.test(id)) throw new HttpError(400, 'group_id invalid.');
  ctx.db.groups.unshare(repo.id, Number(id));
  await ctx.db.save();
}

function ownRepo(ctx: Ctx, owner: User, repoId: string): RepoMeta {
  const repo = ctx.db.repo(repoId);
  if (!repo || ctx.permission(owner, repo) === null) throw new HttpError(404, 'Library not found.');
  if (repo.owner !== owner.email) throw new HttpError(403, 'Permission denied.');
  return repo;
}

const groupItem = (g: Group, permission: string) => ({
  share_type: 'group',
  group_info: { id: g.id, name: g.name },
  permission,
});

function splitUsers(values: string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

/** A sub-folder's shares (`p=/sub`) are answered by api-folder-shares.ts: true when this request was one. */
async function subFolder(ctx: Ctx, r: Req): Promise<boolean> {
  const sub = subFolderOf(r);
  if (sub) await folderSharedItems(ctx, r, sub);
  return sub !== null;
}

/**
 * POST /api/v2.1/repos/batch/ with operation=share: several of the caller's
 * libraries shared to one user or group, each library's failure reported
 * alone, as seahub's ReposBatchView (permission defaults to rw there).
 */
async function batchShare(ctx: Ctx, r: Req): Promise<void> {
  const me = r.user!;
  const form = await r.form({ json: true });
  if (form.get('operation') !== 'share') throw new HttpError(400, 'operation invalid.');
  const shareType = form.get('share_type');
  if (shareType !== 'user' && shareType !== 'group') throw new HttpError(400, 'share_type invalid.');
  const permission = form.get('permission') ?? 'rw';
  if (permission !== 'r' && permission !== 'rw') throw new HttpError(400, 'permission invalid.');
  let to: User | undefined;
  let group: Group | undefined;
  if (shareType === 'user') {
    const name = form.get('username');
    if (!name) throw new HttpError(400, 'username invalid.');
    to = ctx.db.user(name);
    if (!to) throw new HttpError(404, `User ${name} not found.`);
  } else {
    const id = form.get('group_id') ?? '';
    if (!/^\d+$/.test(id)) throw new HttpError(400, 'group_id invalid.');
    group = ctx.db.groups.get(Number(id));
    if (!group) throw new HttpError(404, `Group ${id} not found.`);
  }
  const failed: { repo_id: string; error_msg: string }[] = [];
  const success: Record<string, unknown>[] = [];
  for (const repoId of form.getAll('repo_id')) {
    const repo = ctx.db.repo(repoId);
    if (!repo) failed.push({ repo_id: repoId, error_msg: `Library ${repoId} not found.` });
    else if (repo.owner !== me.email) failed.push({ repo_id: repoId, error_msg: 'Permission denied.' });
    else if (to) {
      if (to.email === repo.owner) failed.push({ repo_id: repoId, error_msg: 'Library can not be shared to owner.' });
      else if (ctx.db.sharesOfRepo(repo.id).some((x) => x.to === to!.email))
        failed.push({ repo_id: repoId, error_msg: `This item has been shared to ${to.email}.` });
      else {
        ctx.db.setShare(repo.id, me.email, to.email, permission);
        success.push({ repo_id: repo.id, username: to.email, permission });
      }
    } else if (group) {
      if (ctx.db.groups.sharesOfRepo(repo.id).some((x) => x.groupId === group!.id))
        failed.push({ repo_id: repoId, error_msg: `This item has been shared to ${group.name}.` });
      else {
        ctx.db.groups.share(repo.id, group.id, me.email, permission);
        success.push({ repo_id: repo.id, group_id: group.id, group_name: group.name, permission });
      }
    }
  }
  await ctx.db.save();
  sendJson(r.res, 200, { failed, success });
}

export const shareRoutes: Route[] = [
  { method: 'POST', path: '/api/v2.1/repos/batch', auth: 'user', handler: batchShare },
  {
    method: 'GET',
    path: '/api2/shared-repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const out = [];
      for (const s of ctx.db.sharesBy(r.user!.email)) {
        const repo = ctx.db.repo(s.repoId)!;
        out.push(shareRecord(repo, s, await ctx.heads.get(repo.id)));
      }
      for (const repo of ctx.db.reposOwnedBy(r.user!.email)) {
        for (const s of ctx.db.groups.sharesOfRepo(repo.id)) {
          const g = ctx.db.groups.get(s.groupId)!;
          const rec = { ...shareRecord(repo, { to: '', permission: s.permission }, await ctx.heads.get(repo.id)) };
          out.push({ ...rec, share_type: 'group', group_id: g.id, group_name: g.name });
        }
      }
      sendJson(r.res, 200, out);
    },
  },
  {
    method: 'GET',
    path: '/api2/beshared-repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const out = [];
      for (const s of ctx.db.sharesTo(r.user!.email)) {
        const repo = ctx.db.repo(s.repoId);
        if (repo) {
          out.push({
            ...shareRecord(repo, s, await ctx.heads.get(repo.id)),
            user: repo.owner,
            enc_version: repo.encVersion,
            is_virtual: false,
          });
        }
      }
      sendJson(r.res, 200, out);
    },
  },
  {
    method: 'PUT',
    path: '/api2/shared-repos/:repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const get = (k: string) => r.query.getAll(k).concat(form.getAll(k));
      const shareType = get('share_type')[0];
      if (shareType === 'group') {
        const { failed } = await shareWithGroups(
          ctx,
          r.user!,
          r.params[0],
          get('group_id'),
          get('permission')[0] ?? 'r',
        );
        if (failed.length) throw new HttpError(400, failed[0].error_msg);
        return sendJson(r.res, 200, 'success');
      }
      if (shareType !== 'personal')
        throw new HttpError(400, 'share_type invalid (personal and group shares are supported).');
      const users = splitUsers([...get('user'), ...get('users')]);
      if (users.length === 0) throw new HttpError(400, 'user is required.');
      const { failed } = await shareWithUsers(ctx, r.user!, r.params[0], users, get('permission')[0] ?? 'r');
      if (failed.length) throw new HttpError(400, failed[0].error_msg);
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'DELETE',
    path: '/api2/shared-repos/:repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const type = r.query.get('share_type');
      if (type === 'group') await unshareGroup(ctx, r.user!, r.params[0], r.query.get('group_id'));
      else if (type === 'personal') await unshare(ctx, r.user!, r.params[0], r.query.get('user') ?? '');
      else throw new HttpError(400, 'share_type invalid.');
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'DELETE',
    path: '/api2/beshared-repos/:repo',
    auth: 'user',
    handler: async (ctx, r) => {
      if (!ctx.db.removeShare(r.params[0], r.user!.email)) throw new HttpError(400, 'Library does not exist.');
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      if (await subFolder(ctx, r)) return;
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      const want = sharesWanted(r.query.get('share_type'));
      const items = [
        ...(want.user ? ctx.db.sharesOfRepo(repo.id).map((s) => userShareItem(ctx, r, s.to, s.permission)) : []),
        ...(want.group
          ? ctx.db.groups.sharesOfRepo(repo.id).map((s) => groupItem(ctx.db.groups.get(s.groupId)!, s.permission))
          : []),
      ];
      sendJson(r.res, 200, items);
    },
  },
  {
    method: 'PUT',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      if (await subFolder(ctx, r)) return;
      const form = await r.form({ json: true });
      const shareType = form.get('share_type') ?? r.query.get('share_type');
      const permission = form.get('permission') ?? 'r';
      if (shareType === 'group') {
        const ids = form.getAll('group_id').flatMap((v) => v.split(','));
        const { failed, success } = await shareWithGroups(ctx, r.user!, r.params[0], ids, permission);
        return sendJson(r.res, 200, { failed, success: success.map((g) => groupItem(g, permission)) });
      }
      if (shareType !== 'user') throw new HttpError(400, 'share_type invalid.');
      const users = splitUsers(form.getAll('username'));
      const { failed, success } = await shareWithUsers(ctx, r.user!, r.params[0], users, permission);
      sendJson(r.res, 200, {
        failed,
        success: success.map((e) => userShareItem(ctx, r, e, permission)),
      });
    },
  },
  {
    method: 'POST',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      if (await subFolder(ctx, r)) return;
      const form = await r.form({ json: true });
      const permission = form.get('permission') ?? '';
      if (permission !== 'r' && permission !== 'rw') throw new HttpError(403, 'permission invalid.');
      if (r.query.get('share_type') === 'group') {
        const id = r.query.get('group_id') ?? '';
        ownRepo(ctx, r.user!, r.params[0]);
        if (!ctx.db.groups.sharesOfRepo(r.params[0]).some((s) => String(s.groupId) === id))
          throw new HttpError(400, 'group_id invalid.');
        await shareWithGroups(ctx, r.user!, r.params[0], [id], permission);
        return sendJson(r.res, 200, { success: true });
      }
      if (r.query.get('share_type') !== 'user') throw new HttpError(400, 'share_type invalid.');
      const email = r.query.get('username') ?? r.query.get('user') ?? '';
      const s = ctx.db.shareOf(r.params[0], email);
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      if (!s) throw new HttpError(400, 'email invalid.');
      s.permission = permission;
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'DELETE',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      if (await subFolder(ctx, r)) return;
      if (r.query.get('share_type') === 'group') {
        await unshareGroup(ctx, r.user!, r.params[0], r.query.get('group_id'));
        return sendJson(r.res, 200, { success: true });
      }
      if (r.query.get('share_type') !== 'user') throw new HttpError(400, 'share_type invalid.');
      const email = r.query.get('username') ?? r.query.get('user') ?? '';
      if (!email) throw new HttpError(400, 'email invalid.');
      await unshare(ctx, r.user!, r.params[0], email);
      sendJson(r.res, 200, { success: true });
    },
  },
];
