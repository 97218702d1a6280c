// The web API's side of the blocks API, as seahub 10 answers it (api2/views.py
// UploadBlksLinkView, UpdateBlksLinkView, FileBlockDownloadLinkView, and
// FileView's op=downloadblks): links to the file server's blocks endpoints
// (fileserver/blocks.ts) and a file's block list.
import type { Ctx, Req, UploadToken } from '../context.js';
import type { RepoMeta } from '../store/db.js';
import { HttpError, sendJson } from '../http.js';
import { headRoot } from '../store/library-changes.js';
import type { Route } from '../router.js';
import { lookup, splitPath, type DirEnt } from '../store/tree.js';

/** DRF's Response: a JSON value as application/json without a charset */
function drf(r: Req, value: unknown, headers: Record<string, string> = {}): void {
  sendJson(r.res, 200, value, { 'Content-Type': 'application/json', ...headers });
}

/** seahub's json.dumps: ", " and ": " separators (the values here hold neither a quote nor a backslash) */
function pyJson(value: unknown): string {
  return JSON.stringify(value).replace(/("(?:[^"\\]|\\.)*")|([,:])/g, (m, str: string | undefined) => str ?? m + ' ');
}

function sendPyJson(r: Req, value: unknown, headers: Record<string, string> = {}): void {
  const body = pyJson(value);
  r.res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  r.res.end(body);
}

/** the checks of the link views: the folder `p` (default /) exists, the permission, the quota */
async function folderFor(ctx: Ctx, r: Req, need: 'r' | 'rw'): Promise<{ repo: RepoMeta; dir: string }> {
  const user = r.user!;
  const { repo, perm } = ctx.repoFor(user, r.params[0]);
  const p = r.query.get('p') ?? '/';
  let comps: string[];
  try {
    comps = splitPath(p);
  } catch {
    throw new HttpError(404, `Folder ${p} not found.`);
  }
  const folder = await lookup(ctx.store, await headRoot(ctx, repo.id), comps);
  if (folder?.type !== 'dir') throw new HttpError(404, `Folder ${p} not found.`);
  if (need === 'rw' && perm !== 'rw') throw new HttpError(403, 'You do not have permission to access this folder.');
  if ((await ctx.quotaLeft(repo, { waiting: false })) <= 0) throw new HttpError(443, 'Out of quota.');
  return { repo, dir: '/' + comps.join('/') };
}

function uploadToken(ctx: Ctx, r: Req, repo: RepoMeta, dir: string, kind: UploadToken['kind']): string {
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.uploads.set(token, { kind, repoId: repo.id, dir, user: r.user!.email, expires: Date.now() + ctx.linkTtlMs });
  return token;
}

/** GET upload-blks-link: a commit-only URL (its token's operation is upload-blks-api) */
async function uploadBlksLink(ctx: Ctx, r: Req): Promise<void> {
  const { repo, dir } = await folderFor(ctx, r, 'rw');
  drf(r, `${r.base}/seafhttp/upload-blks-api/${uploadToken(ctx, r, repo, dir, 'upload-blks-api')}`);
}

/**
 * POST upload-blks-link with `blklist` (comma-separated ids): which of them the
 * library lacks, and URLs for raw blocks and the commit under one `upload` token
 */
async function uploadBlksLinks(ctx: Ctx, r: Req): Promise<void> {
  const { repo, dir } = await folderFor(ctx, r, 'rw');
  const token = uploadToken(ctx, r, repo, dir, 'upload');
  const blks = (await r.form()).get('blklist');
  const blklist = blks ? ctx.blocks.missing(repo.id, blks.split(',')) : [];
  sendPyJson(r, {
    rawblksurl: `${r.base}/seafhttp/upload-raw-blks-api/${token}`,
    commiturl: `${r.base}/seafhttp/upload-blks-api/${token}?commitonly=true&ret-json=true`,
    blklist,
  });
}

/** GET update-blks-link: its token is not tied to a folder (seahub gives obj "dummy") */
async function updateBlksLink(ctx: Ctx, r: Req): Promise<void> {
  const { repo } = await folderFor(ctx, r, 'rw');
  drf(r, `${r.base}/seafhttp/update-blks-api/${uploadToken(ctx, r, repo, '/', 'update-blks-api')}`);
}

/** GET files/{file_id}/blks/{block_id}/download-link/: a one-time URL of one block */
async function blockDownloadLink(ctx: Ctx, r: Req): Promise<void> {
  const [, fileId, blockId] = r.params;
  // seahub's URL pattern takes 40 lowercase hex digits for both
  if (!/^[0-9a-f]{40}$/.test(fileId) || !/^[0-9a-f]{40}$/.test(blockId))
    throw new HttpError(404, '', { detail: 'Not found.' });
  const { repo } = await folderFor(ctx, r, 'r');
  ctx.sweepTokens();
  const token = ctx.newToken();
  ctx.downloads.set(token, {
    repoId: repo.id,
    fileId,
    size: 0,
    name: blockId,
    reuse: false,
    expires: Date.now() + ctx.linkTtlMs,
    encrypted: repo.encrypted,
    user: r.user!.email,
    op: 'downloadblks',
  });
  drf(r, `${r.base}/seafhttp/blks/${token}/${blockId}`);
}

/**
 * GET file/?p=&op=downloadblks: the file's block ids in order and its id (no
 * sizes, no URL); `encrypted` and `enc_version` are the library's only when
 * the list is not empty (seahub get_repo_file).
 */
export async function fileBlockList(ctx: Ctx, r: Req, repo: RepoMeta, e: DirEnt): Promise<void> {
  const blklist = (await ctx.blocks.blocksOf(repo.id, e.id)).block_ids;
  const any = blklist.length > 0;
  sendPyJson(
    r,
    {
      file_id: e.id,
      blklist,
      encrypted: any && repo.encrypted,
      enc_version: any ? repo.encVersion : 0,
    },
    { oid: e.id },
  );
}

export const blockRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos/:repo/upload-blks-link', auth: 'user', handler: uploadBlksLink },
  { method: 'POST', path: '/api2/repos/:repo/upload-blks-link', auth: 'user', handler: uploadBlksLinks },
  { method: 'GET', path: '/api2/repos/:repo/update-blks-link', auth: 'user', handler: updateBlksLink },
  {
    method: 'GET',
    path: '/api2/repos/:repo/files/:file/blks/:block/download-link',
    auth: 'user',
    handler: blockDownloadLink,
  },
];
