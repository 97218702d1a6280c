// The web pages behind the links the API hands out, for a person with a
// browser: /d/<token>/ lists a folder link's folder (?p= goes deeper, files
// go to /d/<token>/files/), /u/d/<token>/ is an upload form that posts back
// to itself. Plain HTML without scripts, so a browser without JS can use
// both; a strict CSP and every name escaped. A link with a password first
// shows a password form; the right password sets a short-lived signed cookie
// for the link's pages. Which link may serve, and the password check, are
// links/visitor-api.ts's (the same as the API forms of links).
import type { Ctx, Req } from '../context.js';
import type { RepoMeta, ShareLinkRec, UploadLinkRec } from '../store/db.js';
import { storeUpload } from '../fileserver/files.js';
import { drainBody, HttpError } from '../http.js';
import { folderOfLink, linkPass, passCookie, shareLinkFor, uploadLinkDir, uploadLinkFor } from './visitor-api.js';
import type { Route } from '../router.js';
import { splitPath } from '../store/tree.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text and attribute values made inert in HTML. */
export const esc = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  // the pages' URLs hold the link's token
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

const STYLE =
  'body{font-family:sans-serif;max-width:50em;margin:2em auto;padding:0 1em}' +
  'table{border-collapse:collapse;width:100%}td{padding:.3em .5em;border-bottom:1px solid #ddd}' +
  'td.n{text-align:right;white-space:nowrap}.msg{color:#a00}.ok{color:#070}';

async function sendPage(
  r: Req,
  status: number,
  title: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<void> {
  // an answer before the body was read (a refused upload): read the rest first, so the browser sees the page
  if (!r.raw.complete) await drainBody(r.raw, r.res);
  const html =
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${esc(title)}</title><style>${STYLE}</style></head>\n` +
    `<body><h1>${esc(title)}</h1>\n${body}\n</body></html>\n`;
  r.res.writeHead(status, { ...PAGE_HEADERS, 'Content-Length': Buffer.byteLength(html), ...headers });
  r.res.end(html);
}

/** A failure of a page handler (unknown or expired link, missing folder, refused upload) as a page of its own. */
function asPage(handler: (ctx: Ctx, r: Req) => Promise<void>): Route['handler'] {
  return async (ctx, r) => {
    try {
      await handler(ctx, r);
    } catch (e) {
      if (!(e instanceof HttpError) || r.res.headersSent) throw e;
      const title = e.status === 404 ? 'Not found' : 'Error';
      const msg =
        e.status === 404 && e.message === 'Link not found.' ? 'This link does not exist or has expired.' : e.message;
      await sendPage(r, e.status, title, `<p class="msg">${esc(msg)}</p>`);
    }
  };
}

/**
 * The password step of a link's page: undefined when the request may go on
 * (with a Set-Cookie header when it just gave the right password); else the
 * password form was sent (200 at first, 403 after a wrong or empty one),
 * naming nothing of the link's folder.
 */
async function passStep(
  ctx: Ctx,
  r: Req,
  l: ShareLinkRec | UploadLinkRec,
  pagePath: string,
  action: string,
): Promise<Record<string, string> | undefined> {
  if (!l.password) return {};
  const posted = r.method === 'POST' && !/^multipart\//i.test(r.raw.headers['content-type'] ?? '');
  const given = posted ? (await r.form()).get('password') : undefined;
  const pass = linkPass(r, l, given);
  if (pass === 'ok') return given ? { 'Set-Cookie': passCookie(l, pagePath, ctx.linkTtlMs) } : {};
  const failed = r.method === 'POST';
  const msg = pass === 'wrong' ? 'The password is not correct.' : failed ? 'Please enter the password.' : '';
  await sendPage(
    r,
    failed ? 403 : 200,
    'Password required',
    `<p>This link is protected by a password.</p>\n` +
      (msg ? `<p class="msg">${esc(msg)}</p>\n` : '') +
      `<form method="post" action="${esc(action)}">` +
      `<label>Password <input type="password" name="password" required autofocus></label> ` +
      `<button type="submit">Open</button></form>`,
  );
  return undefined;
}

const linkName = (path: string, repo: RepoMeta) => splitPath(path).pop() ?? repo.name;

function humanSize(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

const when = (sec: number) => new Date(sec * 1000).toISOString().slice(0, 16).replace('T', ' ');

/** GET or POST (the password) /d/<token>/?p=/sub/: the folder link's folder `p` as a list of links. */
async function folderPage(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo } = shareLinkFor(ctx, r.params[0], true);
  const base = `/d/${encodeURIComponent(l.token)}`;
  const comps = splitPath(r.query.get('p') ?? '/');
  const at = (c: string[], dir: boolean) => '/' + c.join('/') + (dir && c.length > 0 ? '/' : '');
  const dirHref = (c: string[]) => (c.length ? `${base}/?p=${encodeURIComponent(at(c, true))}` : `${base}/`);
  const self = dirHref(comps);
  const title = linkName(l.path, repo) + (comps.length ? at(comps, false) : '');
  const headers = await passStep(ctx, r, l, base, self);
  if (!headers) return;
  const entries = await folderOfLink(ctx, l, repo, at(comps, true));
  const sorted = [...entries].sort((a, b) =>
    a.type !== b.type ? (a.type === 'dir' ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  const rows = sorted.map((e) => {
    const inner = [...comps, e.name];
    const href = e.type === 'dir' ? dirHref(inner) : `${base}/files/?p=${encodeURIComponent(at(inner, false))}`;
    const size = e.type === 'file' ? humanSize(e.size) : '';
    const shown = e.type === 'dir' ? e.name + '/' : e.name;
    return `<tr><td><a href="${esc(href)}">${esc(shown)}</a></td><td class="n">${size}</td><td class="n">${when(e.mtime)}</td></tr>`;
  });
  const parent = comps.length ? `<p><a href="${esc(dirHref(comps.slice(0, -1)))}">Parent folder</a></p>\n` : '';
  const list = rows.length ? `<table>\n${rows.join('\n')}\n</table>` : '<p>This folder is empty.</p>';
  await sendPage(r, 200, title, parent + list, headers);
}

/** GET or POST /u/d/<token>/: the upload form; a multipart POST of it stores its files in the link's folder. */
async function uploadPage(ctx: Ctx, r: Req): Promise<void> {
  const { l, repo, creator } = uploadLinkFor(ctx, r.params[0]);
  const base = `/u/d/${encodeURIComponent(l.token)}`;
  const dir = await uploadLinkDir(ctx, l, repo);
  const title = `Upload to ${linkName(dir, repo)}`;
  const headers = await passStep(ctx, r, l, base, `${base}/`);
  if (!headers) return;
  let done = '';
  if (r.method === 'POST' && /^multipart\/form-data/i.test(r.raw.headers['content-type'] ?? '')) {
    const stored = await storeUpload(ctx, r, { dir, user: creator, repo, impliedParent: true });
    done = `<p class="ok">Uploaded: ${stored.map((s) => esc(s.name)).join(', ')}</p>\n`;
  }
  await sendPage(
    r,
    200,
    title,
    done +
      `<form method="post" enctype="multipart/form-data" action="${esc(base)}/">` +
      `<input type="file" name="file" multiple required> <button type="submit">Upload</button></form>`,
    headers,
  );
}

export const linkHtmlRoutes: Route[] = [
  { method: 'GET', path: '/d/:token', auth: 'none', handler: asPage(folderPage) },
  { method: 'POST', path: '/d/:token', auth: 'none', handler: asPage(folderPage) },
  { method: 'GET', path: '/u/d/:token', auth: 'none', handler: asPage(uploadPage) },
  { method: 'POST', path: '/u/d/:token', auth: 'none', handler: asPage(uploadPage) },
];
