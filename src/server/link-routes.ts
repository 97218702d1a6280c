// What share links and upload links have alike (seahub's share_links.py and
// upload_links.py, repo_share_links.py and repo_upload_links.py): one link
// shown or its expiry changed, the user's links listed, one deleted by its
// token, and a library's links listed and deleted by its owner. Written once here
// for both kinds; how each kind is shown stays with its routes.
import type { Ctx, Req } from './context.js';
import type { ShareLinkRec, UploadLinkRec } from './db.js';
import { HttpError, sendJson, type Form } from './http.js';
import { requestedExpiry } from './link-expiry.js';
import type { Route } from './router.js';

type LinkRec = ShareLinkRec | UploadLinkRec;

export interface LinkKind<L extends LinkRec> {
  /** the path segment of its routes */
  segment: 'share-links' | 'upload-links';
  /** what seahub calls it in a 404 of a library's links */
  label: 'Share link' | 'Upload link';
  mine(ctx: Ctx, email: string): L[];
  get(ctx: Ctx, token: string): L | undefined;
  remove(ctx: Ctx, token: string, email: string): void;
}

export const shareLinks: LinkKind<ShareLinkRec> = {
  segment: 'share-links',
  label: 'Share link',
  mine: (ctx, email) => ctx.db.shareLinksOf(email),
  get: (ctx, token) => ctx.db.shareLink(token),
  remove: (ctx, token, email) => ctx.db.removeShareLink(token, email),
};

export const uploadLinks: LinkKind<UploadLinkRec> = {
  segment: 'upload-links',
  label: 'Upload link',
  mine: (ctx, email) => ctx.db.uploadLinksOf(email),
  get: (ctx, token) => ctx.db.uploadLink(token),
  remove: (ctx, token, email) => ctx.db.removeUploadLink(token, email),
};

/** The link of `token` (404 when there is none). */
function linkOf<L extends LinkRec>(kind: LinkKind<L>, ctx: Ctx, token: string): L {
  const l = kind.get(ctx, token);
  if (!l) throw new HttpError(404, `token ${token} not found.`);
  return l;
}

/** The caller's own link of `token` (404 when there is none, 403 when another user's). */
function ownLink<L extends LinkRec>(kind: LinkKind<L>, ctx: Ctx, r: Req, token: string): L {
  const l = linkOf(kind, ctx, token);
  if (l.username !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  return l;
}

/** Answers `links` as seahub lists them: an array of each one's `shape`. */
export function sendLinks<L extends LinkRec>(r: Req, links: L[], shape: (l: L) => unknown): void {
  sendJson(r.res, 200, links.map(shape));
}

/** DELETE /api/v2.1/{kind}/:token: the caller's link of that token goes; none is a success, another's 403 (as seahub). */
export function deleteLinkRoute<L extends LinkRec>(kind: LinkKind<L>): Route {
  return {
    method: 'DELETE',
    path: `/api/v2.1/${kind.segment}/:token`,
    auth: 'user',
    handler: async (ctx, r) => {
      const l = kind.get(ctx, r.params[0]);
      if (l && l.username !== r.user!.email) throw new HttpError(403, 'Permission denied.');
      kind.remove(ctx, r.params[0], r.user!.email);
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  };
}

/**
 * GET /api/v2.1/{kind}/:token (for any user holding the token) and PUT, which
 * changes its expiry (only its creator's: seahub 10 lets anyone holding an
 * upload link's token change it), both answered with `shape`; `check`
 * refuses a form asking for what links of this kind cannot do here.
 */
export function oneLinkRoutes<L extends LinkRec>(
  kind: LinkKind<L>,
  shape: (ctx: Ctx, r: Req, l: L) => unknown,
  check: (form: Form) => void = () => {},
): Route[] {
  return [
    {
      method: 'GET',
      path: `/api/v2.1/${kind.segment}/:token`,
      auth: 'user',
      handler: async (ctx, r) => {
        sendJson(r.res, 200, shape(ctx, r, linkOf(kind, ctx, r.params[0])));
      },
    },
    {
      method: 'PUT',
      path: `/api/v2.1/${kind.segment}/:token`,
      auth: 'user',
      handler: async (ctx, r) => {
        const l = ownLink(kind, ctx, r, r.params[0]);
        const form = await r.form({ json: true });
        check(form);
        const expire = requestedExpiry(form);
        if (expire !== undefined) {
          l.expire = expire;
          await ctx.db.save();
        }
        sendJson(r.res, 200, shape(ctx, r, l));
      },
    },
  ];
}

/** A library's links are for its owner (seahub: the owner or a library admin). */
function ownedRepoId(ctx: Ctx, r: Req): string {
  const repo = ctx.visibleRepo(r.user!, r.params[0]);
  if (!repo) throw new HttpError(404, `Library ${r.params[0]} not found.`);
  if (repo.owner !== r.user!.email) throw new HttpError(403, 'Permission denied.');
  return repo.id;
}

/** GET /api/v2.1/repos/:repo/{kind} (each link shown by `shape`) and DELETE .../{kind}/:token, for the owner. */
export function repoLinkRoutes<L extends LinkRec>(
  kind: LinkKind<L>,
  shape: (ctx: Ctx, r: Req, l: L) => unknown,
): Route[] {
  return [
    {
      method: 'GET',
      path: `/api/v2.1/repos/:repo/${kind.segment}`,
      auth: 'user',
      handler: async (ctx, r) => {
        const repoId = ownedRepoId(ctx, r);
        const mine = kind.mine(ctx, r.user!.email).filter((l) => l.repoId === repoId);
        sendLinks(r, mine, (l) => shape(ctx, r, l));
      },
    },
    {
      method: 'DELETE',
      path: `/api/v2.1/repos/:repo/${kind.segment}/:token`,
      auth: 'user',
      handler: async (ctx, r) => {
        const repoId = ownedRepoId(ctx, r);
        const l = kind.get(ctx, r.params[1]);
        if (!l || l.repoId !== repoId) throw new HttpError(404, `${kind.label} ${r.params[1]} not found.`);
        kind.remove(ctx, l.token, l.username);
        await ctx.db.save();
        sendJson(r.res, 200, { success: true });
      },
    },
  ];
}
