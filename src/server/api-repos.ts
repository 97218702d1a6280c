// Library endpoints: list, info, create, delete, rename, unlock, owner,
// default library, and sharing libraries with other users.
import { pbkdf2Sync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Ctx, Permission, Req } from './context.js';
import type { RepoMeta, User } from './db.js';
import { HttpError, isoTime, sendJson } from './http.js';
import { isValidName } from './names.js';
import type { Route } from './router.js';

function magicOf(repoId: string, password: string, salt: string): string {
  return pbkdf2Sync(repoId + password, Buffer.from(salt, 'hex'), 1000, 32, 'sha256').toString('hex');
}

export function passwordMatches(repo: RepoMeta, password: string): boolean {
  const a = Buffer.from(magicOf(repo.id, password, repo.salt), 'hex');
  const b = Buffer.from(repo.magic, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function libraryItem(ctx: Ctx, user: User, repo: RepoMeta, perm: Permission) {
  const head = await ctx.heads.get(repo.id);
  const owner = ctx.db.user(repo.owner);
  const item: Record<string, unknown> = {
    type: repo.owner === user.email ? 'repo' : 'srepo',
    id: repo.id,
    name: repo.name,
    desc: repo.desc,
    owner: repo.owner,
    owner_name: owner?.name ?? repo.owner,
    owner_contact_email: repo.owner,
    permission: perm,
    encrypted: repo.encrypted,
    mtime: head.mtime,
    mtime_relative: isoTime(head.mtime),
    size: head.size,
    size_formatted: `${head.size} B`,
    root: head.root_id,
    head_commit_id: head.commit_id,
    virtual: false,
    version: 1,
    salt: '',
  };
  if (repo.encrypted) {
    item.enc_version = repo.encVersion;
    item.magic = repo.magic;
    item.random_key = repo.randomKey;
  }
  if (repo.owner !== user.email) {
    item.share_type = 'personal';
    item.owner_nickname = owner?.name ?? repo.owner;
    item.share_permission = perm;
  }
  return item;
}

export function visibleRepos(ctx: Ctx, user: User, type?: string): { repo: RepoMeta; perm: Permission }[] {
  const out: { repo: RepoMeta; perm: Permission }[] = [];
  const repos = Object.values(ctx.db.data.repos).sort((a, b) => a.ctime - b.ctime || a.name.localeCompare(b.name));
  if (!type || type === 'mine') for (const r of repos) if (r.owner === user.email) out.push({ repo: r, perm: 'rw' });
  if (!type || type === 'shared') {
    for (const s of ctx.db.data.shares) {
      const r = ctx.db.repo(s.repoId);
      if (s.to === user.email && r) out.push({ repo: r, perm: s.permission });
    }
  }
  return out; // no groups or public libraries on this server: `group` and `org` are empty
}

async function listRepos(ctx: Ctx, r: Req): Promise<void> {
  const type = r.query.get('type') ?? undefined;
  if (type && !['mine', 'shared', 'group', 'org'].includes(type)) throw new HttpError(400, 'type invalid.');
  const items = [];
  for (const { repo, perm } of visibleRepos(ctx, r.user!, type)) items.push(await libraryItem(ctx, r.user!, repo, perm));
  sendJson(r.res, 200, items);
}

async function createRepo(ctx: Ctx, r: Req, name: string | undefined, desc: string | undefined, passwd: string | undefined) {
  if (!name) throw new HttpError(400, 'Library name is required.');
  if (!isValidName(name)) throw new HttpError(400, 'name invalid.');
  const user = r.user!;
  const id = randomUUID();
  const salt = randomBytes(32).toString('hex');
  const repo: RepoMeta = {
    id,
    name,
    desc: desc ?? 'new repo',
    owner: user.email,
    encrypted: !!passwd,
    encVersion: passwd ? 2 : 0,
    magic: passwd ? magicOf(id, passwd, salt) : '',
    salt,
    randomKey: passwd ? randomBytes(48).toString('hex') : '',
    ctime: Date.now(),
  };
  await ctx.heads.create(id, user.email);
  ctx.db.data.repos[id] = repo;
  await ctx.db.save();
  return repo;
}

function createdShape(repo: RepoMeta, user: User, head: { size: number; mtime: number }) {
  return {
    repo_id: repo.id,
    repo_name: repo.name,
    repo_desc: repo.desc,
    email: user.email,
    encrypted: repo.encrypted,
    enc_version: repo.encVersion,
    magic: repo.magic,
    random_key: repo.randomKey,
    repo_version: 1,
    repo_size: head.size,
    mtime: head.mtime,
    permission: 'rw',
    relay_id: '0'.repeat(40),
    relay_addr: '127.0.0.1',
    relay_port: '0',
    token: '',
  };
}

async function repoInfo(ctx: Ctx, r: Req): Promise<void> {
  const { repo, perm } = ctx.repoFor(r.user!, r.params[0]);
  const head = await ctx.heads.get(repo.id);
  sendJson(r.res, 200, {
    id: repo.id,
    name: repo.name,
    desc: repo.desc,
    owner: repo.owner,
    size: head.size,
    root: head.root_id,
    head_commit_id: head.commit_id,
    type: repo.owner === r.user!.email ? 'repo' : 'srepo',
    encrypted: repo.encrypted,
    enc_version: repo.encVersion,
    mtime: head.mtime,
    permission: perm,
    password_need: repo.encrypted ? !ctx.isUnlocked(r.user!.email, repo) : null,
    ...(repo.encrypted ? { magic: repo.magic, random_key: repo.randomKey } : {}),
  });
}

async function deleteRepo(ctx: Ctx, r: Req): Promise<void> {
  const repo = ctx.db.repo(r.params[0]);
  if (!repo) throw new HttpError(400, 'Library does not exist.');
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Only library owner can perform this operation.');
  delete ctx.db.data.repos[repo.id];
  const d = ctx.db.data;
  d.shares = d.shares.filter((s) => s.repoId !== repo.id);
  d.shareLinks = d.shareLinks.filter((s) => s.repoId !== repo.id);
  d.uploadLinks = d.uploadLinks.filter((s) => s.repoId !== repo.id);
  d.starred = d.starred.filter((s) => s.repoId !== repo.id);
  for (const k of Object.keys(d.locks)) if (k.startsWith(repo.id + ':')) delete d.locks[k];
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
    repo.name = name;
    await ctx.db.save();
    return sendJson(r.res, 200, 'success');
  }
  await unlockRepo(ctx, r, form.get('password'));
  sendJson(r.res, 200, 'success');
}

async function unlockRepo(ctx: Ctx, r: Req, password: string | undefined): Promise<void> {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  if (!repo.encrypted) throw new HttpError(409, 'Library is not encrypted.');
  if (!password) throw new HttpError(400, 'Password is required.');
  if (!passwordMatches(repo, password)) throw new HttpError(400, 'Incorrect password');
  ctx.unlock(r.user!.email, repo.id);
}

// ---- sharing ----

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
      const existing = ctx.db.shareOf(repo.id, u.email);
      if (existing) existing.permission = permission;
      else ctx.db.data.shares.push({ repoId: repo.id, from: owner.email, to: u.email, permission });
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
  ctx.db.data.shares = ctx.db.data.shares.filter((s) => !(s.repoId === repo.id && s.to === user));
  await ctx.db.save();
}

function splitUsers(values: string[]): string[] {
  return values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
}

/** Only the library root (`p=/`) can be shared on this server; sub-folder shares are refused. */
function requireRootPath(r: Req): void {
  const p = r.query.get('p') ?? '/';
  if (p.replace(/\/+$/, '') !== '') throw new HttpError(400, 'Sharing a sub-folder is not supported by this server.');
}

export const repoRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos', auth: 'user', handler: listRepos },
  {
    method: 'GET',
    path: '/api/v2.1/repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const items = [];
      for (const { repo, perm } of visibleRepos(ctx, r.user!, r.query.get('type') ?? undefined)) {
        const it = await libraryItem(ctx, r.user!, repo, perm);
        items.push({
          type: it.type === 'repo' ? 'mine' : 'shared',
          repo_id: repo.id,
          repo_name: repo.name,
          owner_email: repo.owner,
          owner_name: it.owner_name,
          last_modified: isoTime(it.mtime as number),
          modifier_email: repo.owner,
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
      sendJson(r.res, 200, createdShape(repo, r.user!, await ctx.heads.get(repo.id)));
    },
  },
  { method: 'GET', path: '/api2/repos/:repo', auth: 'user', handler: repoInfo },
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
      const repo = ctx.db.repo(r.params[0]);
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
  {
    method: 'GET',
    path: '/api2/shared-repos',
    auth: 'user',
    handler: async (ctx, r) => {
      const out = [];
      for (const s of ctx.db.data.shares) {
        const repo = ctx.db.repo(s.repoId);
        if (repo && repo.owner === r.user!.email) out.push(shareRecord(repo, s, await ctx.heads.get(repo.id)));
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
      for (const s of ctx.db.data.shares) {
        const repo = ctx.db.repo(s.repoId);
        if (repo && s.to === r.user!.email) {
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
      if (shareType !== 'personal') throw new HttpError(400, 'share_type invalid (only personal shares are supported).');
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
      if (r.query.get('share_type') !== 'personal') throw new HttpError(400, 'share_type invalid.');
      await unshare(ctx, r.user!, r.params[0], r.query.get('user') ?? '');
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'DELETE',
    path: '/api2/beshared-repos/:repo',
    auth: 'user',
    handler: async (ctx, r) => {
      const before = ctx.db.data.shares.length;
      ctx.db.data.shares = ctx.db.data.shares.filter((s) => !(s.repoId === r.params[0] && s.to === r.user!.email));
      if (ctx.db.data.shares.length === before) throw new HttpError(400, 'Library does not exist.');
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      const type = r.query.get('share_type');
      if (type && type !== 'user' && type !== 'group') throw new HttpError(400, 'share_type invalid.');
      const items =
        type === 'group'
          ? []
          : ctx.db.data.shares
              .filter((s) => s.repoId === repo.id)
              .map((s) => ({
                share_type: 'user',
                user_info: { name: s.to, nickname: ctx.db.user(s.to)?.name ?? s.to },
                permission: s.permission,
              }));
      sendJson(r.res, 200, items);
    },
  },
  {
    method: 'PUT',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      requireRootPath(r);
      const form = await r.form({ json: true });
      const shareType = form.get('share_type') ?? r.query.get('share_type');
      if (shareType !== 'user') throw new HttpError(400, 'share_type invalid.');
      const permission = form.get('permission') ?? 'r';
      const users = splitUsers(form.getAll('username'));
      const { failed, success } = await shareWithUsers(ctx, r.user!, r.params[0], users, permission);
      sendJson(r.res, 200, {
        failed,
        success: success.map((e) => ({
          share_type: 'user',
          user_info: { name: e, nickname: ctx.db.user(e)?.name ?? e },
          permission,
        })),
      });
    },
  },
  {
    method: 'POST',
    path: '/api2/repos/:repo/dir/shared_items',
    auth: 'user',
    handler: async (ctx, r) => {
      requireRootPath(r);
      const form = await r.form({ json: true });
      if (r.query.get('share_type') !== 'user') throw new HttpError(400, 'share_type invalid.');
      const permission = form.get('permission') ?? '';
      if (permission !== 'r' && permission !== 'rw') throw new HttpError(403, 'permission invalid.');
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
      requireRootPath(r);
      if (r.query.get('share_type') !== 'user') throw new HttpError(400, 'share_type invalid.');
      const email = r.query.get('username') ?? r.query.get('user') ?? '';
      if (!email) throw new HttpError(400, 'email invalid.');
      await unshare(ctx, r.user!, r.params[0], email);
      sendJson(r.res, 200, { success: true });
    },
  },
];
