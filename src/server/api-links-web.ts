// Share and upload link endpoints of seahub's web interface beyond the spec,
// answered as seahub 10 does (api2/endpoints/share_links.py, upload_links.py,
// repo_share_links.py, repo_upload_links.py): one link (get, update its
// expiry), share links deleted in bulk, a library's links (list, delete), and
// the entries of a folder link. Links have no permissions here beyond view
// and download (share links) or upload (upload links). The routes both kinds
// have alike come from link-routes.ts.
import type { Ctx, Req } from './context.js';
import type { ShareLinkRec } from './db.js';
import { shareLinkShape, uploadLinkShape } from './api-extra.js';
import { HttpError, isoTime, sendJson } from './http.js';
import { folderOfLink, shareLinkFor } from './link-pages.js';
import { oneLinkRoutes, repoLinkRoutes, shareLinks, uploadLinks } from './link-routes.js';
import type { Route } from './router.js';
import { splitPath } from './tree.js';

/** What seahub shows besides the common fields: the permissions this server's links have. */
function shareLinkFull(ctx: Ctx, r: Req, l: ShareLinkRec) {
  return {
    ...shareLinkShape(ctx, r, l, true),
    obj_id: '',
    password: '', // stored hashed here: seahub shows it in clear
  };
}

/** `permissions` other than view-and-download ask for what this server's links cannot do. */
function checkPermissions(raw: string | undefined): void {
  if (!raw) return;
  let p: { can_edit?: unknown; can_download?: unknown; can_upload?: unknown };
  try {
    p = JSON.parse(raw) as typeof p;
  } catch {
    throw new HttpError(400, 'permissions invalid.');
  }
  if (p.can_edit === true || p.can_download === false || p.can_upload === true)
    throw new HttpError(400, 'permissions invalid: links here are view and download only.');
}

export const linksWebRoutes: Route[] = [
  ...oneLinkRoutes(shareLinks, shareLinkFull, (form) => checkPermissions(form.get('permissions'))),
  {
    method: 'DELETE',
    path: '/api/v2.1/share-links',
    auth: 'user',
    handler: async (ctx, r) => {
      const tokens = (await r.form({ json: true })).getAll('tokens');
      if (tokens.length === 0) throw new HttpError(400, 'token invalid.');
      const success: { token: string }[] = [];
      const failed: { token: string; error_msg: string }[] = [];
      for (const token of tokens) {
        const l = ctx.db.shareLink(token);
        if (l && l.username !== r.user!.email) failed.push({ token, error_msg: 'Permission denied.' });
        else {
          if (l) ctx.db.removeShareLink(token, r.user!.email);
          success.push({ token });
        }
      }
      await ctx.db.save();
      sendJson(r.res, 200, { success, failed });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/share-links/:token/dirents',
    // as seahub's ShareLinkDirents: the link is the permission, no login needed
    auth: 'none',
    handler: async (ctx, r) => {
      const found = ctx.db.shareLink(r.params[0]);
      if (!found) throw new HttpError(404, `Share link ${r.params[0]} not found.`);
      // a password is proved in a browser session on seahub; a token caller has none
      if (found.password) throw new HttpError(403, 'Permission denied.');
      if (!found.isDir) throw new HttpError(400, `Share link ${r.params[0]} is not a folder share link.`);
      const { l, repo } = shareLinkFor(ctx, r.params[0], true);
      const rel = '/' + splitPath(r.query.get('path') ?? '/').join('/');
      const entries = await folderOfLink(ctx, l, repo, rel);
      const join = (n: string) => (rel === '/' ? '/' : rel + '/') + n;
      sendJson(r.res, 200, {
        dirent_list: entries.map((e) => ({
          size: e.type === 'file' ? e.size : 0,
          last_modified: isoTime(e.mtime),
          ...(e.type === 'dir'
            ? { is_dir: true, folder_path: join(e.name) + '/', folder_name: e.name }
            : { is_dir: false, file_path: join(e.name), file_name: e.name }),
        })),
      });
    },
  },
  ...repoLinkRoutes(shareLinks, shareLinkFull),
  ...repoLinkRoutes(uploadLinks, uploadLinkShape),
  ...oneLinkRoutes(uploadLinks, uploadLinkShape),
];
