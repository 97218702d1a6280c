// The sharing and group endpoints of seahub's web interface (what seafile-js
// calls) that the V2 ones in web-api/shares.ts and web-api/groups.ts do not cover,
// answered as seahub 10 does: /api/v2.1/shared-repos/ (list, change, unshare),
// shareable-groups, a group's libraries (create, unshare), members in bulk,
// a member's admin flag, member search.
import type { Ctx, Req } from '../context.js';
import type { Group, RepoMeta } from '../store/db.js';
import { groupParam, member, requireAdmin } from './groups.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import { isValidName } from '../store/names.js';
import { encryptionFields } from '../auth/repo-crypto.js';
import type { Route } from '../router.js';
import { randomUUID } from 'node:crypto';

function ownRepo(ctx: Ctx, r: Req): RepoMeta {
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  return repo;
}

function permissionArg(v: string | undefined | null): 'r' | 'rw' {
  if (v !== 'r' && v !== 'rw') throw new HttpError(400, 'permission invalid.');
  return v;
}

function groupArg(ctx: Ctx, id: string | undefined | null): Group {
  const g = id && /^\d+$/.test(id) ? ctx.db.groups.get(Number(id)) : undefined;
  if (!g) throw new HttpError(404, `Group ${id ?? ''} not found.`);
  return g;
}

async function sharedReposV21(ctx: Ctx, r: Req): Promise<void> {
  const me = r.user!.email;
  const out: Record<string, unknown>[] = [];
  const base = async (repo: RepoMeta, permission: string) => {
    const head = await ctx.heads.get(repo.id);
    return {
      repo_id: repo.id,
      repo_name: repo.name,
      encrypted: repo.encrypted,
      share_permission: permission,
      share_permission_name: '',
      modifier_email: repo.owner,
      modifier_name: ctx.db.user(repo.owner)?.name ?? repo.owner,
      modifier_contact_email: ctx.contactOf(repo.owner),
      last_modified: isoTime(head.mtime),
      is_admin: false,
    };
  };
  for (const s of ctx.db.sharesBy(me)) {
    const repo = ctx.db.repo(s.repoId)!;
    const name = ctx.db.user(s.to)?.name ?? s.to;
    out.push({
      ...(await base(repo, s.permission)),
      share_type: 'personal',
      user_name: name,
      user_email: s.to,
      contact_email: ctx.contactOf(s.to),
    });
  }
  for (const repo of ctx.db.reposOwnedBy(me)) {
    for (const s of ctx.db.groups.sharesOfRepo(repo.id)) {
      const g = ctx.db.groups.get(s.groupId);
      out.push({
        ...(await base(repo, s.permission)),
        share_type: 'group',
        group_id: s.groupId,
        group_name: g?.name ?? '',
      });
    }
  }
  out.sort((a, b) => String(a.repo_name).localeCompare(String(b.repo_name)));
  sendJson(r.res, 200, out);
}

async function changeShare(ctx: Ctx, r: Req): Promise<void> {
  const repo = ownRepo(ctx, r);
  const form = await r.form({ json: true });
  const permission = permissionArg(form.get('permission'));
  const type = form.get('share_type');
  if (type === 'personal') {
    const to = form.get('user') ?? '';
    if (!ctx.db.shareOf(repo.id, to)) throw new HttpError(404, `Shared user ${to} not found.`);
    ctx.db.setShare(repo.id, r.user!.email, to, permission);
  } else if (type === 'group') {
    const g = groupArg(ctx, form.get('group_id'));
    if (!ctx.db.groups.sharesOfRepo(repo.id).some((s) => s.groupId === g.id))
      throw new HttpError(404, `Shared group ${g.id} not found.`);
    ctx.db.groups.share(repo.id, g.id, r.user!.email, permission);
  } else throw new HttpError(400, 'share_type invalid.');
  await ctx.db.save();
  sendJson(r.res, 200, { success: true });
}

async function removeShare(ctx: Ctx, r: Req): Promise<void> {
  const repo = ownRepo(ctx, r);
  const type = r.query.get('share_type');
  if (type === 'personal') {
    const to = r.query.get('user');
    if (!to) throw new HttpError(400, 'user invalid.');
    ctx.db.removeShare(repo.id, to);
  } else if (type === 'group') {
    ctx.db.groups.unshare(repo.id, groupArg(ctx, r.query.get('group_id')).id);
  } else throw new HttpError(400, 'share_type invalid.');
  await ctx.db.save();
  sendJson(r.res, 200, { success: true });
}

async function groupLibraryInfo(ctx: Ctx, repo: RepoMeta, permission: string) {
  const head = await ctx.heads.get(repo.id);
  return {
    repo_id: repo.id,
    repo_name: repo.name,
    mtime: isoTime(head.mtime),
    last_modified: isoTime(head.mtime),
    permission,
    size: head.size,
    encrypted: repo.encrypted,
    is_admin: false,
    owner_email: repo.owner,
    owner_name: ctx.db.user(repo.owner)?.name ?? repo.owner,
  };
}

/** POST /api/v2.1/groups/{id}/libraries/: a new library of the caller, shared to the group. */
async function createGroupLibrary(ctx: Ctx, r: Req): Promise<void> {
  const g = groupParam(ctx, r);
  const form = await r.form({ json: true });
  const name = form.get('repo_name');
  if (!name || !isValidName(name)) throw new HttpError(400, 'repo_name invalid.');
  ctx.checkDirentName(name);
  const permission = permissionArg(form.get('permission') ?? 'r');
  const id = randomUUID();
  const repo: RepoMeta = {
    id,
    name,
    desc: '',
    owner: r.user!.email,
    ...encryptionFields(id, form.get('password') || undefined),
    ctime: Date.now(),
  };
  await ctx.heads.create(id, r.user!.email);
  ctx.db.addRepo(repo);
  ctx.db.groups.share(id, g.id, r.user!.email, permission);
  await ctx.db.save();
  sendJson(r.res, 200, await groupLibraryInfo(ctx, repo, permission));
}

/** DELETE /api/v2.1/groups/{id}/libraries/{repo}/: the group's share of it ends (group admin or owner). */
async function unshareGroupLibrary(ctx: Ctx, r: Req): Promise<void> {
  const g = groupParam(ctx, r);
  const repo = ctx.visibleRepo(r.user!, r.params[1]);
  if (!repo) throw new HttpError(404, `Library ${r.params[1]} not found.`);
  if (!ctx.db.groups.sharesOfRepo(repo.id).some((s) => s.groupId === g.id))
    throw new HttpError(404, `Group library ${repo.id} not found.`);
  if (!ctx.db.groups.isAdmin(g, r.user!.email) && repo.owner !== r.user!.email)
    throw new HttpError(403, 'Permission denied.');
  ctx.db.groups.unshare(repo.id, g.id);
  await ctx.db.save();
  sendJson(r.res, 200, { success: true });
}

async function addMembers(ctx: Ctx, r: Req): Promise<void> {
  const g = groupParam(ctx, r);
  requireAdmin(ctx, g, r.user!);
  const emails = ((await r.form({ json: true })).get('emails') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (emails.length === 0) throw new HttpError(400, 'emails invalid.');
  const success: unknown[] = [];
  const failed: Record<string, string>[] = [];
  for (const email of emails) {
    const u = ctx.db.user(email);
    // seahub names an unknown account by its e-mail's local part
    const nick = email.split('@')[0];
    if (!u) failed.push({ email, email_name: nick, error_msg: `User ${nick} not found.` });
    else if (!ctx.db.groups.addMember(g, u.email))
      failed.push({ email, email_name: u.name, error_msg: `User ${u.name} is already a group member.` });
    else success.push(member(ctx, r, g, u.email));
  }
  await ctx.db.save();
  sendJson(r.res, 200, { success, failed });
}

/** PUT .../members/{email}/ with is_admin true|false: only the owner names admins, as seahub. */
async function setAdmin(ctx: Ctx, r: Req): Promise<void> {
  const g = groupParam(ctx, r);
  const email = decodeURIComponent(r.params[1]);
  const flag = ((await r.form({ json: true })).get('is_admin') ?? '').toLowerCase();
  if (flag !== 'true' && flag !== 'false') throw new HttpError(400, 'is_admin invalid.');
  if (g.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  const m = g.members.find((x) => x.email === email);
  if (!m) throw new HttpError(404, `Email ${email} invalid.`);
  m.isAdmin = flag === 'true';
  await ctx.db.save();
  sendJson(r.res, 200, member(ctx, r, g, email));
}

export const sharingWebRoutes: Route[] = [
  { method: 'GET', path: '/api/v2.1/shared-repos', auth: 'user', handler: sharedReposV21 },
  { method: 'PUT', path: '/api/v2.1/shared-repos/:repo', auth: 'user', handler: changeShare },
  { method: 'DELETE', path: '/api/v2.1/shared-repos/:repo', auth: 'user', handler: removeShare },
  {
    method: 'GET',
    path: '/api/v2.1/shareable-groups',
    auth: 'user',
    handler: async (ctx, r) =>
      sendJson(
        r.res,
        200,
        ctx.db.groups.of(r.user!.email).map((g) => ({
          id: g.id,
          parent_group_id: 0,
          name: g.name,
          owner: g.owner,
          created_at: isoTime(g.ctime),
        })),
      ),
  },
  { method: 'POST', path: '/api/v2.1/groups/:group/libraries', auth: 'user', handler: createGroupLibrary },
  { method: 'DELETE', path: '/api/v2.1/groups/:group/libraries/:repo', auth: 'user', handler: unshareGroupLibrary },
  { method: 'POST', path: '/api/v2.1/groups/:group/members/bulk', auth: 'user', handler: addMembers },
  { method: 'PUT', path: '/api/v2.1/groups/:group/members/:email', auth: 'user', handler: setAdmin },
  {
    method: 'GET',
    path: '/api/v2.1/groups/:group/search-member',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const q = (r.query.get('q') ?? '').toLowerCase();
      if (!q) throw new HttpError(400, 'q invalid.');
      const hits = g.members.filter(
        (m) => m.email.toLowerCase().includes(q) || (ctx.db.user(m.email)?.name ?? '').toLowerCase().includes(q),
      );
      sendJson(
        r.res,
        200,
        hits.map((m) => member(ctx, r, g, m.email)),
      );
    },
  },
];
