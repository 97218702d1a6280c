// The file server's direct download of seafile-server 12.0 and later:
//   GET /seafhttp/repos/{repo id}/files/{path}?op=download (or op=view)
// with the API token in the Authorization header (its scheme is not looked
// at: the file server takes the header's second word and asks seahub's
// check-access about it). No download link first: one seahub round trip fewer
// per file. ETag is the file id, an If-None-Match equal to it answers 304,
// Range is honoured on unencrypted libraries only; an encrypted library's
// file needs the account's unlock, as the token download does.
import type { Ctx, Req } from '../context.js';
import { sendContent, unlockedFor } from './files.js';
import { FileServerError } from '../http.js';
import { lookup, splitPath } from '../store/tree.js';

export async function directDownload(ctx: Ctx, r: Req): Promise<void> {
  if (r.method !== 'GET' && r.method !== 'HEAD') throw new FileServerError(405, 'Method not allowed.');
  const [repoId, rawPath] = r.params;
  let filePath: string;
  try {
    filePath = decodeURIComponent(rawPath);
  } catch {
    throw new FileServerError(400, 'Invalid file_path');
  }
  if (!filePath) throw new FileServerError(400, 'No file path');
  const op = r.query.get('op');
  if (op !== 'view' && op !== 'download') throw new FileServerError(400, 'Operation is neither view or download');
  const token = (r.raw.headers.authorization ?? '').split(' ')[1] ?? '';
  if (!token && !r.raw.headers.cookie) throw new FileServerError(400, 'Both token and cookie are not set');
  const user = token ? ctx.db.userByToken(token) : undefined;
  const repo = ctx.db.repo(repoId);
  // seahub's check-access refuses an unknown token, a library not there and one the account may not read
  if (!user?.isActive || !repo || !ctx.permission(user, repo)) throw new FileServerError(403, 'Permission denied.');
  let comps: string[];
  try {
    comps = splitPath(filePath);
  } catch {
    throw new FileServerError(400, 'Invalid file_path');
  }
  const e = await lookup(ctx.store, (await ctx.heads.get(repo.id)).root_id, comps);
  if (e?.type !== 'file') throw new FileServerError(400, 'Invalid file_path');
  if (r.raw.headers['if-none-match'] === e.id) {
    r.res.writeHead(304, { 'Content-Length': '0' });
    return void r.res.end();
  }
  if (repo.encrypted && !unlockedFor(ctx, user.email, repo.id))
    throw new FileServerError(400, 'Repo is encrypted. Please provide password to view it.');
  await sendContent(
    ctx,
    r,
    { fileId: e.id, size: e.size, name: e.name, encrypted: repo.encrypted, repoId: repo.id },
    { 'Cache-Control': 'private, no-cache' },
  );
}
