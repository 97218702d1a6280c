// Upload and update links (the file server's tokens), bound to a user, a
// library and a folder; reusable until they expire.
import type { Ctx, Req } from '../context.js';
import { HttpError, sendJson } from '../http.js';
import { headRoot } from '../store/library-changes.js';
import type { Route } from '../router.js';
import { lookup, splitPath } from '../store/tree.js';

async function issue(ctx: Ctx, r: Req, kind: 'upload' | 'update'): Promise<void> {
  const user = r.user!;
  // given for a locked encrypted library too: the file server refuses the upload (fileserver/files.ts)
  const { repo } = ctx.repoFor(user, r.params[0], 'rw');
  const comps = splitPath(r.query.get('p') || '/');
  const folder = await lookup(ctx.store, await headRoot(ctx, repo.id), comps);
  if (folder?.type !== 'dir') throw new HttpError(404, 'Folder not found.');
  if ((await ctx.quotaLeft(repo, { waiting: false })) <= 0) throw new HttpError(443, 'Out of quota.');
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.uploads.set(token, {
    kind,
    repoId: repo.id,
    dir: '/' + comps.join('/'),
    user: user.email,
    expires: Date.now() + ctx.linkTtlMs,
  });
  sendJson(r.res, 200, `${r.base}/seafhttp/${kind}-api/${token}`);
}

export const linkRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos/:repo/upload-link', auth: 'user', handler: (c, r) => issue(c, r, 'upload') },
  { method: 'GET', path: '/api2/repos/:repo/update-link', auth: 'user', handler: (c, r) => issue(c, r, 'update') },
];
