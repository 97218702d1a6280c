// `dir/shared_items/?p=/sub` for a sub-folder (the library root is in
// web-api/shares.ts) and GET /api/v2.1/shared-folders/, answered in the shapes of
// seahub 10 (api2/endpoints/dir_shared_items.py, shared_folders.py). The
// shares are recorded and listed only: see store/folder-shares.ts.
import type { Ctx, Req } from '../context.js';
import type { FolderShare } from '../store/folder-shares.js';
import { HttpError, sendJson } from '../http.js';
import { getEntry } from '../store/library-changes.js';
import type { Route } from '../router.js';
import { splitPath } from '../store/tree.js';

/** The folder `p` names when it is not the library root, else null. */
export function subFolderOf(r: Req): string | null {
  const comps = splitPath(r.query.get('p') ?? '/');
  return comps.length ? '/' + comps.join('/') : null;
}

function item(ctx: Ctx, r: Req, s: FolderShare) {
  if (typeof s.to === 'number') {
    const g = ctx.db.groups.get(s.to);
    return { share_type: 'group', group_info: { id: s.to, name: g?.name ?? '' }, permission: s.permission };
  }
  return userShareItem(ctx, r, s.to, s.permission);
}

/** A share to a user as seahub's shared_items lists it. */
export function userShareItem(ctx: Ctx, r: Req, email: string, permission: string) {
  return {
    share_type: 'user',
    user_info: {
      name: email,
      nickname: ctx.db.user(email)?.name ?? email,
      contact_email: ctx.contactOf(email),
      avatar_url: `${r.base}/media/avatars/default.png`,
    },
    permission,
    is_admin: false,
  };
}

/**
 * Which shares a shared_items GET lists, as seahub reads `share_type`: a
 * comma-separated list in which only `user` and `group` count; none: both.
 */
export function sharesWanted(raw: string | null): { user: boolean; group: boolean } {
  if (!raw) return { user: true, group: true };
  const types = raw.split(',').map((t) => t.trim());
  return { user: types.includes('user'), group: types.includes('group') };
}

async function ownedFolder(ctx: Ctx, r: Req, path: string) {
  const { repo } = ctx.repoFor(r.user!, r.params[0]);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  if ((await getEntry(ctx, repo.id, path))?.type !== 'dir') throw new HttpError(404, `Folder ${path} not found.`);
  return repo;
}

function permissionOf(v: string | undefined): 'r' | 'rw' {
  const p = v ?? 'r';
  if (p !== 'r' && p !== 'rw') throw new HttpError(400, 'permission invalid.');
  return p;
}

/** The sub-folder form of each shared_items method. */
export async function folderSharedItems(ctx: Ctx, r: Req, path: string): Promise<void> {
  const repo = await ownedFolder(ctx, r, path);
  const type = r.query.get('share_type');
  const all = ctx.db.folderShares.of(repo.id, path);
  if (r.method === 'GET') {
    const want = sharesWanted(type);
    const wanted = all.filter((s) => (typeof s.to === 'number' ? want.group : want.user));
    return sendJson(
      r.res,
      200,
      wanted.map((s) => item(ctx, r, s)),
    );
  }
  const form = await r.form({ json: true });
  if (r.method === 'PUT') {
    const shareType = form.get('share_type') ?? type;
    const permission = permissionOf(form.get('permission'));
    const success: unknown[] = [];
    const failed: Record<string, string>[] = [];
    if (shareType === 'group') {
      for (const id of form.getAll('group_id').flatMap((v) => v.split(','))) {
        const g = /^\d+$/.test(id) ? ctx.db.groups.get(Number(id)) : undefined;
        if (!g || !ctx.db.groups.isMember(g, r.user!.email)) {
          failed.push({ group_id: id, error_msg: `Group ${id} not found.` });
          continue;
        }
        const s: FolderShare = { repoId: repo.id, path, from: r.user!.email, to: g.id, permission };
        ctx.db.folderShares.set(s);
        success.push(item(ctx, r, s));
      }
    } else if (shareType === 'user') {
      const users = form.getAll('username').flatMap((v) => v.split(','));
      for (const email of users.map((u) => u.trim()).filter(Boolean)) {
        const u = ctx.db.user(email);
        if (!u || u.email === r.user!.email) {
          failed.push({ email, error_msg: u ? 'Cannot share to the library owner.' : `User ${email} not found.` });
          continue;
        }
        const s: FolderShare = { repoId: repo.id, path, from: r.user!.email, to: u.email, permission };
        ctx.db.folderShares.set(s);
        success.push(item(ctx, r, s));
      }
    } else throw new HttpError(400, 'share_type invalid.');
    await ctx.db.save();
    return sendJson(r.res, 200, { failed, success });
  }
  const to = type === 'group' ? Number(r.query.get('group_id')) : (r.query.get('username') ?? '');
  if (type !== 'group' && type !== 'user') throw new HttpError(400, 'share_type invalid.');
  const existing = all.find((s) => s.to === to);
  if (r.method === 'POST') {
    const permission = form.get('permission');
    if (permission !== 'r' && permission !== 'rw') throw new HttpError(403, 'permission invalid.');
    if (!existing) throw new HttpError(400, type === 'group' ? 'group_id invalid.' : 'email invalid.');
    existing.permission = permission;
  } else {
    ctx.db.folderShares.remove(repo.id, path, to);
  }
  await ctx.db.save();
  sendJson(r.res, 200, { success: true });
}

export const folderShareRoutes: Route[] = [
  {
    method: 'GET',
    path: '/api/v2.1/shared-folders',
    auth: 'user',
    handler: async (ctx, r) => {
      const out = [];
      for (const s of ctx.db.folderShares.by(r.user!.email)) {
        const repo = ctx.db.repo(s.repoId);
        if (!repo) continue;
        const base = {
          repo_id: repo.id,
          repo_name: repo.name,
          path: s.path,
          folder_name: s.path.split('/').pop()!,
          share_permission: s.permission,
          share_permission_name: '',
        };
        if (typeof s.to === 'number') {
          out.push({ ...base, share_type: 'group', group_id: s.to, group_name: ctx.db.groups.get(s.to)?.name ?? '' });
        } else {
          const name = ctx.db.user(s.to)?.name ?? s.to;
          out.push({
            ...base,
            share_type: 'personal',
            user_name: name,
            user_email: s.to,
            contact_email: ctx.contactOf(s.to),
          });
        }
      }
      sendJson(r.res, 200, out);
    },
  },
];
