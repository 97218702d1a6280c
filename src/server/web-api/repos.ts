// Library endpoints: list, info, create, delete, rename, unlock, owner and
// the default library. Sharing is in web-api/shares.ts, passwords in auth/repo-crypto.ts.
import { randomUUID } from 'node:crypto';
import type { Ctx, Permission, Req } from '../context.js';
import type { Group, RepoMeta, User } from '../store/db.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import { isValidName } from '../store/names.js';
import { encryptionFields, unlockRepo } from '../auth/repo-crypto.js';
import type { Route } from '../router.js';

/** A library as listed; `group` when it is listed as shared to that group (type grepo). */
export async function libraryItem(ctx: Ctx, user: User, repo: RepoMeta, perm: Permission, group?: Group) {
  const head = await ctx.heads.get(repo.id);
  const owner = ctx.db.user(repo.owner);
  // the author of the library's last change, as seahub names it (commits are cached: a read each at most)
  const modifier = (await ctx.heads.readCommit(head.commit_id)).creator_name;
  const item: Record<string, unknown> = {
    type: group ? 'grepo' : repo.owner === user.email ? 'repo' : 'srepo',
    id: repo.id,
    name: repo.name,
    desc: repo.desc,
    owner: repo.owner,
    owner_name: owner?.name ?? repo.owner,
    owner_contact_email: ctx.contactOf(repo.owner),
    permission: perm,
    encrypted: repo.encrypted,
    mtime: head.mtime,
    mtime_relative: isoTime(head.mtime),
    size: head.size,
    size_formatted: `${head.size} B`,
    root: head.root_id,
    head_commit_id: head.commit_id,
    modifier_email: modifier,
    modifier_contact_email: ctx.contactOf(modifier),
    modifier_name: ctx.db.user(modifier)?.name ?? modifier,
    virtual: false,
    version: 1,
    salt: '',
  };
  if (repo.encrypted) {
    item.enc_version = repo.encVersion;
    item.magic = repo.magic;
    item.random_key = repo.randomKey;
  }
  if (group) {
    item.share_type = 'group';
    item.groupid = group.id;
    item.group_name = group.name;
    item.owner_nickname = owner?.name ?? repo.owner;
    item.share_permission = perm;
  } else if (repo.owner !== user.email) {
    item.share_type = 'personal';
    item.owner_nickname = owner?.name ?? repo.owner;
    item.share_permission = perm;
  }
  return item;
}

export function visibleRepos(
  ctx: Ctx,
  user: User,
  type?: string,
): { repo: RepoMeta; perm: Permission; group?: Group }[] {
  const out: { repo: RepoMeta; perm: Permission; group?: Group }[] = [];
  if (!type || type === 'mine') for (const r of ctx.db.reposOwnedBy(user.email)) out.push({ repo: r, perm: 'rw' });
  if (!type || type === 'shared') {
    for (const s of ctx.db.sharesTo(user.email)) {
      const r = ctx.db.repo(s.repoId);
      if (r) out.push({ repo: r, perm: s.permission });
    }
  }
  if (!type || type === 'group') {
    // once per group it is shared to, with that group's permission (the client merges duplicates)
    for (const g of ctx.db.groups.of(user.email)) {
      for (const s of ctx.db.groups.sharesOfGroup(g.id)) {
        const r = ctx.db.repo(s.repoId);
        if (r) out.push({ repo: r, perm: s.permission, group: g });
      }
    }
  }
  return out; // no public libraries on this server: `org` is empty
}

async function listRepos(ctx: Ctx, r: Req): Promise<void> {
  const type = r.query.get('type') ?? undefined;
  if (type && !['mine', 'shared', 'group', 'org'].includes(type)) throw new HttpError(400, 'type invalid.');
  const items = [];
  for (const { repo, perm, group } of visibleRepos(ctx, r.user!, type))
    items.push(await libraryItem(ctx, r.user!, repo, perm, group));
  sendJson(r.res, 200, items);
}

async function createRepo(
  ctx: Ctx,
  r: Req,
  name: string | undefined,
  desc: string | undefined,
  passwd: string | undefined,
) {
  if (!name) throw new HttpError(400, 'Library name is required.');
  if (!isValidName(name)) throw new HttpError(400, 'name invalid.');
  ctx.checkDirentName(name);
  const user = r.user!;
  const id = randomUUID();
  const repo: RepoMeta = {
    id,
    name,
    desc: desc ?? 'new repo',
    owner: user.email,
    ...encryptionFields(id, passwd),
    ctime: Date.now(),
  };
  await ctx.heads.create(id, user.email);
  ctx.db.addRepo(repo);
  await ctx.db.save();
  return repo;
}

/**
 * A library as seahub's repo_download_info gives it (the answer to a create
 * and to download-info): `encrypted` is 1 or '' there, the relay fields name
 * this server, and no sync token is issued.
 */
function downloadInfo(r: Req, repo: RepoMeta, user: User, head: { size: number; mtime: number; commit_id: string }) {
  return {
    relay_id: '0'.repeat(40),
    relay_addr: new URL(r.base).hostname,
    relay_port: new URL(r.base).port,
    email: user.email,
    token: '',
    repo_id: repo.id,
    repo_name: repo.name,
    repo_desc: repo.desc,
    repo_size: head.size,
    repo_size_formatted: `${head.size} B`,
    mtime: head.mtime,
    mtime_relative: isoTime(head.mtime),
    encrypted: repo.encrypted ? 1 : '',
    enc_version: repo.encVersion,
    salt: '',
    magic: repo.magic,
    random_key: repo.randomKey,
    repo_version: 1,
    head_commit_id: head.commit_id,
    permission: 'rw',
  };
}

async function repoInfo(ctx: Ctx, r: Req): Promise<void> {
  const user = r.user!;
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const head = await ctx.heads.get(repo.id);
  const modifier = (await ctx.heads.readCommit(head.commit_id)).creator_name;
  // as seahub's api2 Repo.get: `owner` says whose it is from the caller's side ("self" or "share"),
  // `type` is always "repo"; desc, head_commit_id, enc_version and password_need are the spec's extras
  sendJson(r.res, 200, {
    type: 'repo',
    id: repo.id,
    name: repo.name,
    desc: repo.desc,
    owner: repo.owner === user.email ? 'self' : 'share',
    size: head.size,
    root: head.root_id,
    head_commit_id: head.commit_id,
    encrypted: repo.encrypted,
    enc_version: repo.encVersion,
    mtime: head.mtime,
    permission: perm,
    modifier_email: modifier,
    modifier_contact_email: ctx.contactOf(modifier),
    modifier_name: ctx.db.user(modifier)?.name ?? modifier,
    password_need: repo.encrypted ? !ctx.isUnlocked(user.email, repo) : null,
    // (a salt is made for enc_version 3 and later only: serve's libraries are version 2)
    ...(repo.encrypted ? { magic: repo.magic, random_key: repo.randomKey, salt: '' } : {}),
  });
}

async function deleteRepo(ctx: Ctx, r: Req): Promise<void> {
  // as seahub 10 (api2/views.py Repo.delete), a library the caller cannot see being as one that is not there
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  ctx.db.deleteRepo(repo.id);
  await ctx.db.save();
  await ctx.heads.remove(repo.id);
  sendJson(r.res, 200, 'success');
}

/** POST /api2/repos/{id}/: `?op=rename` with repo_name, otherwise decrypt with `password`. */
async function postRepo(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  if (r.query.get('op') === 'rename') {
    const repo = ctx.repoFor(r.user!, r.params[0]).repo;
    if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
    const name = form.get('repo_name');
    if (!name || !isValidName(name)) throw new HttpError(400, 'name invalid.');
    ctx.checkDirentName(name);
    repo.name = name;
    await ctx.db.save();
    return sendJson(r.res, 200, 'success');
  }
  await unlockRepo(ctx, r, form.get('password'));
  sendJson(r.res, 200, 'success');
}

export const repoRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos', auth: 'user', handler: listRepos },
  {
    method: 'GET',
    path: '/api/v2.1/repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const items = [];
      for (const { repo, perm, group } of visibleRepos(ctx, r.user!, r.query.get('type') ?? undefined)) {
        const it = await libraryItem(ctx, r.user!, repo, perm, group);
        items.push({
          type: group ? 'group' : it.type === 'repo' ? 'mine' : 'shared',
          ...(group ? { group_id: group.id, group_name: group.name } : {}),
          repo_id: repo.id,
          repo_name: repo.name,
          owner_email: repo.owner,
          owner_name: it.owner_name,
          last_modified: isoTime(it.mtime as number),
          modifier_email: it.modifier_email,
          modifier_name: it.modifier_name,
          modifier_contact_email: it.modifier_contact_email,
          size: it.size,
          encrypted: repo.encrypted,
          permission: perm,
          starred: false,
        });
      }
      sendJson(r.res, 200, { repos: items });
    },
  },
  {
    method: 'POST',
    path: '/api2/repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const repo = await createRepo(ctx, r, form.get('name'), form.get('desc'), form.get('passwd') || undefined);
      sendJson(r.res, 200, downloadInfo(r, repo, r.user!, await ctx.heads.get(repo.id)));
    },
  },
  { method: 'GET', path: '/api2/repos/:repo', auth: 'user', handler: repoInfo },
  {
    // what a sync client needs to start syncing; this server has no sync protocol: its sync token serves
    // only the fileserver's jwt-token (the notification server's)
    method: 'GET',
    path: '/api2/repos/:repo/download-info',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo, perm } = ctx.repoFor(r.user!, r.params[0]);
      sendJson(r.res, 200, {
        ...downloadInfo(r, repo, r.user!, await ctx.heads.get(repo.id)),
        permission: perm,
        // a sync token: it serves only the fileserver's jwt-token (the notification server's)
        token: ctx.syncToken(repo.id, r.user!.email),
        // the spec's field: where the file server is
        applet_root: `${r.base}/seafhttp`,
      });
    },
  },
  { method: 'DELETE', path: '/api2/repos/:repo', auth: 'user', handler: deleteRepo },
  { method: 'POST', path: '/api2/repos/:repo', auth: 'user', handler: postRepo },
  {
    method: 'POST',
    path: '/api/v2.1/repos/:repo/set-password',
    auth: 'user',
    handler: async (ctx, r) => {
      await unlockRepo(ctx, r, (await r.form({ json: true })).get('password'));
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api2/repos/:repo/owner',
    auth: 'user',
    handler: async (ctx, r) => {
      const repo = r.user!.isStaff ? ctx.db.repo(r.params[0]) : ctx.visibleRepo(r.user!, r.params[0]);
      if (!repo) throw new HttpError(404, 'Library not found.');
      if (repo.owner !== r.user!.email && !r.user!.isStaff) throw new HttpError(403, 'Permission denied.');
      sendJson(r.res, 200, { owner: repo.owner });
    },
  },
  {
    method: 'GET',
    path: '/api2/default-repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const id = r.user!.defaultRepo;
      const exists = !!id && !!ctx.db.repo(id);
      sendJson(r.res, 200, exists ? { repo_id: id, exists: true } : { exists: false });
    },
  },
  {
    method: 'POST',
    path: '/api2/default-repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const u = r.user!;
      if (!u.defaultRepo || !ctx.db.repo(u.defaultRepo)) {
        const repo = await createRepo(ctx, r, 'My Library', 'My Library', undefined);
        u.defaultRepo = repo.id;
        await ctx.db.save();
      }
      sendJson(r.res, 200, { repo_id: u.defaultRepo, exists: true });
    },
  },
];
