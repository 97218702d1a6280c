// Groups, V2 (/api2/groups/) and V2.1 (/api/v2.1/groups/): create, rename,
// delete, members, and the libraries shared to a group. Sharing a library to
// a group is in web-api/shares.ts. Only members see a group (others get 403, as seahub);
// admins manage members, the owner renames and deletes.
import type { Ctx, Req } from '../context.js';
import type { Group, User } from '../store/db.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import type { Route } from '../router.js';

export function groupParam(ctx: Ctx, r: Req): Group {
  if (!/^\d+$/.test(r.params[0])) throw new HttpError(400, 'group_id invalid.');
  const g = ctx.db.groups.get(Number(r.params[0]));
  if (!g) throw new HttpError(404, 'Group not found.');
  // seahub tells a group that does not exist (404) from one the caller is not in (403)
  if (!ctx.db.groups.isMember(g, r.user!.email)) throw new HttpError(403, 'Permission denied.');
  return g;
}

export function requireAdmin(ctx: Ctx, g: Group, user: User): void {
  if (!ctx.db.groups.isAdmin(g, user.email)) throw new HttpError(403, 'Permission denied.');
}

function groupV2(g: Group) {
  return { id: g.id, name: g.name, creator: g.owner, ctime: g.ctime, mtime: g.ctime, msgnum: 0 };
}

function groupV21(r: Req, g: Group) {
  return {
    id: g.id,
    name: g.name,
    owner: g.owner,
    created_at: isoTime(g.ctime),
    admins: g.members.filter((m) => m.isAdmin).map((m) => m.email),
    avatar_url: `${r.base}/media/avatars/groups/default.png`,
    // seahub 10 names these for departments (groups here are never nested and have no quota)
    parent_group_id: 0,
    group_quota_usage: '',
  };
}

/** A member as seahub's get_group_member_info shows it; `role` is Owner, Admin or Member. */
export function member(ctx: Ctx, r: Req, g: Group, email: string) {
  const isAdmin = ctx.db.groups.isAdmin(g, email);
  return {
    group_id: g.id,
    role: email === g.owner ? 'Owner' : isAdmin ? 'Admin' : 'Member',
    email,
    name: ctx.db.user(email)?.name ?? email,
    contact_email: ctx.contactOf(email),
    login_id: '',
    avatar_url: `${r.base}/media/avatars/default.png`,
    is_admin: isAdmin,
  };
}

function checkGroupName(ctx: Ctx, name: string | undefined, except?: Group): string {
  const n = (name ?? '').trim();
  if (!n || n.length > 255 || /[/\\]/.test(n)) throw new HttpError(400, 'Name is not valid.');
  const clash = ctx.db.groups.byName(n);
  if (clash && clash !== except) throw new HttpError(400, 'There is already a group with that name.');
  return n;
}

async function createGroup(ctx: Ctx, r: Req, name: string | undefined): Promise<Group> {
  const g = ctx.db.groups.create(checkGroupName(ctx, name), r.user!.email);
  await ctx.db.save();
  return g;
}

/** `v21`: an unknown user is a 404 there (seahub's GroupMembers), a 400 in api2. */
async function addMember(ctx: Ctx, r: Req, g: Group, email: string | undefined, v21 = false): Promise<string> {
  requireAdmin(ctx, g, r.user!);
  const u = email ? ctx.db.user(email) : undefined;
  if (!u && v21) throw new HttpError(404, `User ${email ?? ''} not found.`);
  if (!u) throw new HttpError(400, `Email ${email ?? ''} invalid.`);
  if (!ctx.db.groups.addMember(g, u.email)) throw new HttpError(400, `User ${u.email} is already a group member.`);
  await ctx.db.save();
  return u.email;
}

/** Admins remove anyone but the owner; a member may remove (quit) itself. */
async function removeMember(ctx: Ctx, r: Req, g: Group, email: string): Promise<void> {
  if (email !== r.user!.email) requireAdmin(ctx, g, r.user!);
  if (email === g.owner) throw new HttpError(403, 'Group owner can not be removed.');
  ctx.db.groups.removeMember(g, email);
  await ctx.db.save();
}

async function deleteGroup(ctx: Ctx, r: Req, g: Group): Promise<void> {
  if (g.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  ctx.db.groups.delete(g.id);
  ctx.db.folderShares.forgetGroup(g.id);
  await ctx.db.save();
}

const emailSeg = (r: Req) => decodeURIComponent(r.params[1]);

export const groupRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api2/groups',
    auth: 'user',
    handler: async (ctx, r) => {
      const groups = ctx.db.groups.of(r.user!.email).map(groupV2);
      sendJson(r.res, 200, { replynum: 0, groups });
    },
  },
  {
    method: 'PUT',
    path: '/api2/groups',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = await createGroup(ctx, r, (await r.form({ json: true })).get('group_name'));
      sendJson(r.res, 200, { group_id: g.id, success: true });
    },
  },
  {
    method: 'POST',
    path: '/api2/groups/:group',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const form = await r.form({ json: true });
      if (form.get('operation') !== 'rename') throw new HttpError(400, 'Operation can only be rename.');
      if (g.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      g.name = checkGroupName(ctx, form.get('newname'), g);
      await ctx.db.save();
      sendJson(r.res, 200, 'success'); // seahub's api2 answer (the V2.1 one is {success: true})
    },
  },
  {
    method: 'DELETE',
    path: '/api2/groups/:group',
    auth: 'user',
    handler: async (ctx, r) => {
      await deleteGroup(ctx, r, groupParam(ctx, r));
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'PUT',
    path: '/api2/groups/:group/members',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      await addMember(ctx, r, g, (await r.form({ json: true })).get('user_name'));
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'DELETE',
    path: '/api2/groups/:group/members',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const email = (await r.form({ json: true })).get('user_name') ?? r.query.get('user_name') ?? '';
      await removeMember(ctx, r, g, email);
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/groups',
    auth: 'user',
    handler: async (ctx, r) =>
      sendJson(
        r.res,
        200,
        ctx.db.groups.of(r.user!.email).map((g) => groupV21(r, g)),
      ),
  },
  {
    method: 'POST',
    path: '/api/v2.1/groups',
    auth: 'user',
    handler: async (ctx, r) =>
      sendJson(r.res, 201, groupV21(r, await createGroup(ctx, r, (await r.form({ json: true })).get('name')))),
  },
  {
    method: 'GET',
    path: '/api/v2.1/groups/:group',
    auth: 'user',
    handler: async (ctx, r) => sendJson(r.res, 200, groupV21(r, groupParam(ctx, r))),
  },
  {
    method: 'PUT',
    path: '/api/v2.1/groups/:group',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const form = await r.form({ json: true });
      if (g.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      if (form.get('name') !== undefined) g.name = checkGroupName(ctx, form.get('name'), g);
      const to = form.get('owner');
      if (to !== undefined) {
        const u = ctx.db.user(to);
        if (!u) throw new HttpError(404, `User ${to} not found.`);
        ctx.db.groups.addMember(g, u.email);
        for (const m of g.members) if (m.email === u.email) m.isAdmin = true;
        g.owner = u.email;
      }
      await ctx.db.save();
      sendJson(r.res, 200, groupV21(r, g));
    },
  },
  {
    method: 'DELETE',
    path: '/api/v2.1/groups/:group',
    auth: 'user',
    handler: async (ctx, r) => {
      await deleteGroup(ctx, r, groupParam(ctx, r));
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/groups/:group/members',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const admins = r.query.get('is_admin') === 'true';
      sendJson(
        r.res,
        200,
        g.members.filter((m) => !admins || m.isAdmin).map((m) => member(ctx, r, g, m.email)),
      );
    },
  },
  {
    method: 'POST',
    path: '/api/v2.1/groups/:group/members',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const email = await addMember(ctx, r, g, (await r.form({ json: true })).get('email'), true);
      sendJson(r.res, 201, member(ctx, r, g, email));
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/groups/:group/members/:email',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      if (!ctx.db.groups.isMember(g, emailSeg(r))) throw new HttpError(404, 'Member not found.');
      sendJson(r.res, 200, member(ctx, r, g, emailSeg(r)));
    },
  },
  {
    method: 'DELETE',
    path: '/api/v2.1/groups/:group/members/:email',
    auth: 'user',
    handler: async (ctx, r) => {
      await removeMember(ctx, r, groupParam(ctx, r), emailSeg(r));
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/groups/:group/libraries',
    auth: 'user',
    handler: async (ctx, r) => {
      const g = groupParam(ctx, r);
      const out = [];
      for (const s of ctx.db.groups.sharesOfGroup(g.id)) {
        const repo = ctx.db.repo(s.repoId);
        if (!repo) continue;
        const head = await ctx.heads.get(repo.id);
        out.push({
          repo_id: repo.id,
          repo_name: repo.name,
          owner_email: repo.owner,
          owner_name: ctx.db.user(repo.owner)?.name ?? repo.owner,
          size: head.size,
          encrypted: repo.encrypted,
          permission: s.permission,
          last_modified: isoTime(head.mtime),
          group_id: g.id,
        });
      }
      sendJson(r.res, 200, out);
    },
  },
];
