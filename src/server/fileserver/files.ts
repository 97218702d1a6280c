// The file server under /seafhttp/: downloads by token (ranges, HEAD, ETag),
// uploads and updates by token, streamed through the multipart parser. It,
// not the web API, needs an encrypted library's password (the account's
// unlock, forgotten a fixed time after it was given): without it a download
// answers 400 "Repo is encrypted. Please provide password to view it." and an
// upload or update 500 "Internal error", as the C file server does.
import { promises as fsp } from 'node:fs';
import type { Ctx, DownloadToken, Req } from '../context.js';
import type { RepoMeta, User } from '../store/db.js';
import { downloadContentType } from './content-types.js';
import { fileServerFields, sendGoError } from './go-answers.js';
import { FileServerError, type HttpError, sendFileServerText, sendJson, sendText } from '../http.js';
import { parseMultipart, type UploadedPart } from './multipart.js';
import { canonicalDir, isValidName, nfcName, uploadName } from '../store/names.js';
import { ZERO_ID } from '../store/objects.js';
import { putFiles, updateFile } from '../store/library-changes.js';
import { lookup, splitPath } from '../store/tree.js';

/** Parses a single range against `size`: null = none asked, 'bad' = 416. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'bad' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'bad';
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'bad';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'bad';
  return { start, end };
}

export async function download(ctx: Ctx, r: Req): Promise<void> {
  const token = r.params[0];
  const t = ctx.downloads.get(token);
  const go = ctx.goFileserver;
  if (!t || t.op || t.expires <= Date.now()) {
    ctx.downloads.delete(token);
    if (go) return sendGoError(r.res, 403, 'Access token not found');
    return sendText(r.res, 403, 'Access denied: the token is invalid or expired.\n');
  }
  if (!t.reuse) ctx.downloads.delete(token); // one-time: spent by its first request, HEAD included
  if (t.encrypted && !unlockedFor(ctx, t.user, t.repoId)) {
    return sendText(r.res, 400, 'Repo is encrypted. Please provide password to view it.\n');
  }
  if (go && r.raw.headers['if-modified-since'] !== undefined) {
    // Go's accessCB: any If-Modified-Since is 304 (the file behind a token never changes)
    r.res.writeHead(304);
    return void r.res.end();
  }
  return sendContent(ctx, r, t, {}, go ? goDownloadHeaders(t.name) : undefined);
}

/**
 * The headers of the Go fileserver's download (accessCB, setCommonHeaders): a text type labelled
 * charset=gbk, the name in `filename*="utf-8' '..."` (Go's url.PathEscape), cached an hour from
 * now, no ETag. Its type list is the C one's without pptx.
 */
function goDownloadHeaders(name: string): Record<string, string> {
  const suffix = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : '';
  const type = suffix === 'pptx' ? 'application/octet-stream' : downloadContentType(name);
  // url.PathEscape: RFC 3986 unreserved and $&+:=@ stay, everything else is %XX
  const escaped = encodeURIComponent(name)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%(24|26|2B|3A|3D|40)/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return {
    'Access-Control-Allow-Origin': '*',
    'Content-Type': type.includes('text') ? `${type}; charset=gbk` : type,
    'Content-Disposition': `attachment;filename*="utf-8' '${escaped}"`,
    'X-Content-Type-Options': 'nosniff',
    'Last-Modified': goHttpDate(new Date()),
    'Cache-Control': 'max-age=3600',
  };
}

/** Go's "Mon, 2 Jan 2006 15:04:05 GMT" layout: the day of the month without a leading zero. */
function goHttpDate(d: Date): string {
  return d.toUTCString().replace(/^(\w{3}), 0(\d)/, '$1, $2');
}

/** Sends the content of the file `t` names (ranges on unencrypted libraries, HEAD), the checks done. */
export async function sendContent(
  ctx: Ctx,
  r: Req,
  t: Pick<DownloadToken, 'fileId' | 'size' | 'name' | 'encrypted' | 'repoId'>,
  extra: Record<string, string> = {},
  goHeaders?: Record<string, string>,
): Promise<void> {
  const base: Record<string, string> = goHeaders ?? {
    ...extra,
    'Content-Type': downloadContentType(t.name),
    'Accept-Ranges': 'bytes',
    ETag: t.fileId,
    'Content-Disposition': `attachment; filename*=UTF-8''${encodeURIComponent(t.name)}`,
  };
  const head = r.method === 'HEAD';
  if (t.size === 0 || t.fileId === ZERO_ID) {
    r.res.writeHead(200, { ...base, 'Content-Length': '0' });
    return void r.res.end();
  }
  // Encrypted libraries ignore Range and send the whole file, as real servers do.
  const range = t.encrypted ? null : parseRange(r.raw.headers.range, t.size);
  if (range === 'bad' && goHeaders) {
    // Go: an error after the range and cache headers were set; http.Error drops the rest
    const { 'Last-Modified': lm, 'Cache-Control': cc } = goHeaders;
    for (const [k, v] of Object.entries({ 'Last-Modified': lm, 'Cache-Control': cc })) r.res.setHeader(k, v);
    r.res.setHeader('Content-Range', `bytes */${t.size}`);
    return sendGoError(r.res, 416, '');
  }
  if (range === 'bad') {
    r.res.writeHead(416, { ...base, 'Content-Range': `bytes */${t.size}`, 'Content-Length': '0' });
    return void r.res.end();
  }
  const start = range ? range.start : 0;
  const end = range ? range.end : t.size - 1;
  const headers: Record<string, string> = { ...base, 'Content-Length': String(end - start + 1) };
  if (range) headers['Content-Range'] = `bytes ${start}-${end}/${t.size}`;
  if (range && goHeaders) headers['Accept-Ranges'] = 'bytes'; // Go: on a range answer only
  r.res.writeHead(range ? 206 : 200, headers);
  if (head) return void r.res.end();
  // plaintext blocks committed into an encrypted library: the real server's decryption fails after the
  // headers (store/block-store.ts markUndecryptable), so the body breaks off
  if (t.encrypted && ctx.blocks.isUndecryptable(t.repoId, t.fileId)) {
    r.res.flushHeaders();
    return void r.res.socket?.end();
  }
  try {
    await ctx.blocks.send(t.fileId, start, end, r.res);
    r.res.end();
  } catch {
    r.res.destroy(); // client went away or the object vanished mid-stream
  }
}

function fsError(status: number, msg: string): HttpError {
  return new FileServerError(status, msg);
}

/**
 * An upload or update refused: the C server's message `c`, or, from the Go server, its own
 * message `go` (default the same) as its upload handlers send it (formatJSONError):
 * `{"error": "<go>"}`, none when it has none; Go's http.Error then adds a newline.
 */
function refused(ctx: Ctx, status: number, c: string, go = c): HttpError {
  if (!ctx.goFileserver) return fsError(status, c);
  return fsError(status, go ? `{"error": "${go}"}` : '');
}

/** Whether `user` gave the password of encrypted library `repoId` (and the server still holds it). */
export function unlockedFor(ctx: Ctx, user: string | null, repoId: string): boolean {
  const repo = ctx.db.repo(repoId);
  return !repo || (user !== null && ctx.isUnlocked(user, repo));
}

/** The C file server's answer to an upload or update without the password: it does not say why. */
function requirePassword(ctx: Ctx, user: User, repo: RepoMeta): void {
  if (!ctx.isUnlocked(user.email, repo)) throw fsError(500, 'Internal error');
}

async function receive(
  ctx: Ctx,
  r: Req,
  left: number,
): Promise<{ fields: Map<string, string[]>; files: UploadedPart[] }> {
  const type = r.raw.headers['content-type'] ?? '';
  // Go: ParseMultipartForm fails, 400 with no message
  if (!/^multipart\/form-data/i.test(type)) throw refused(ctx, 400, 'Invalid form data.', '');
  const max = ctx.opts.maxUploadBytes ?? Infinity;
  return parseMultipart(r.raw, type, {
    tmpDir: ctx.tmpDir,
    onBytes: (n) => {
      if (n > max) throw refused(ctx, 442, 'File size is too large.', 'File size is too large.\n');
      if (n > left) throw refused(ctx, 443, 'Out of quota.', 'Out of quota.\n');
    },
  });
}

/** the temp files of an upload the store did not take (a refused or failed one) */
export async function discard(files: UploadedPart[]): Promise<void> {
  await Promise.all(files.map((f) => f.tmpPath && fsp.rm(f.tmpPath, { force: true })));
}

/** Takes a received file into the store (its blocks held by `repoId`). */
function adopt(ctx: Ctx, repo: RepoMeta, f: UploadedPart): void {
  ctx.blocks.adoptContent(repo.id, f.tmpPath, f.id, f.blocks);
  f.tmpPath = '';
  if (repo.encrypted) ctx.blocks.markUndecryptable(repo.id, f.id, false);
}

function uploadToken(ctx: Ctx, r: Req, kind: 'upload' | 'update') {
  const t = ctx.uploads.get(r.params[0]);
  // Go checks the token before its upload handler: a plain message
  if (!t || t.kind !== kind || t.expires <= Date.now())
    throw fsError(403, ctx.goFileserver ? 'Access token not found' : 'Access token not found.');
  const user = ctx.db.user(t.user);
  const repo = ctx.db.repo(t.repoId);
  if (!user || !repo || ctx.permission(user, repo) !== 'rw') throw fsError(403, 'Permission denied.');
  return { t, user, repo };
}

const truthy = (v: string | undefined) => v !== undefined && ['1', 'true', 'True'].includes(v);

/**
 * `last_modify` (ISO 8601) sets the stored mtime, as on servers from 12.0.4 on (older ones, and invalid
 * values: the upload's time).
 */
export function lastModify(ctx: Ctx, fields: Map<string, string[]>): number | undefined {
  const v = fields.get('last_modify')?.[0];
  if (!ctx.keepsLastModify) return undefined;
  if (!v) return undefined;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/**
 * An upload's or update's answer: with ret-json the stored files (Go: its struct's key order, id
 * first), without it the ids (C labels them application/json; Go sets no type, so its server
 * sniffs text/plain).
 */
function sendStored(
  ctx: Ctx,
  r: Req,
  retJson: boolean,
  stored: { name: string; id: string; size: number }[],
  ids: string,
): void {
  const go = ctx.goFileserver;
  if (retJson) sendJson(r.res, 200, go ? stored.map(({ id, name, size }) => ({ id, name, size })) : stored);
  else if (go) sendText(r.res, 200, ids);
  else sendFileServerText(r.res, 200, ids);
}

export async function upload(ctx: Ctx, r: Req): Promise<void> {
  const { t, user, repo } = uploadToken(ctx, r, 'upload');
  let retJson = r.query.get('ret-json') === '1';
  const stored = await storeUpload(ctx, r, {
    dir: t.dir,
    user,
    repo,
    // the Go server takes ret-json from the form too, with any value
    seen: (fields) => void (retJson ||= ctx.goFileserver && fileServerFields(true, r, fields).has('ret-json')),
  });
  sendStored(ctx, r, retJson, stored, stored.map((s) => s.id).join('\t'));
}

/**
 * Receives an upload's multipart body and stores its files in `into.dir`
 * (or below it, by `relative_path`) as `into.user`. The form's `parent_dir`
 * must name that folder; a caller that knows it already (the upload link's
 * web page) may let the form leave it out.
 */
export async function storeUpload(
  ctx: Ctx,
  r: Req,
  into: {
    dir: string;
    user: User;
    repo: RepoMeta;
    impliedParent?: boolean;
    seen?: (fields: Map<string, string[]>) => void;
  },
): Promise<{ name: string; id: string; size: number }[]> {
  const { user, repo } = into;
  const { fields, files } = await receive(ctx, r, await ctx.quotaLeft(repo));
  try {
    into.seen?.(fields);
    const go = ctx.goFileserver;
    const field = fileServerFields(go, r, fields).get;
    const parentDir = field('parent_dir') ?? (into.impliedParent ? into.dir : undefined);
    if (!parentDir) throw refused(ctx, 400, 'Invalid parent dir.', 'No parent_dir given.\n');
    let parent: string[];
    let rel: string[];
    try {
      parent = splitPath(canonicalDir(parentDir));
      rel = splitPath(canonicalDir(field('relative_path') ?? ''));
    } catch {
      throw fsError(400, 'Invalid URL.');
    }
    // parent_dir and relative_path are NFC-normalised by both fileservers
    parent = parent.map(nfcName);
    const root = (await ctx.heads.get(repo.id)).root_id;
    const matched = '/' + parent.join('/') === '/' + splitPath(canonicalDir(into.dir)).join('/');
    // C: the folder must be the token's, then exist; Go (doUpload): a file part, the folder exists,
    // then it is the token's
    if (!go && !matched) throw fsError(403, 'Permission denied.');
    if (rel.some((c) => !isValidName(c))) throw fsError(440, 'Invalid filename.');
    rel = rel.map(nfcName);
    const parts = files.filter((f) => f.field === 'file' || f.field === 'files[]' || files.length === 1);
    if (go && !files.some((f) => f.field === 'file')) throw refused(ctx, 400, '', 'No file in multipart form.\n');
    const folder = await lookup(ctx.store, root, parent);
    if (go && folder?.type !== 'dir') throw refused(ctx, 400, '', "Parent dir doesn't exist.\n");
    if (!matched) throw refused(ctx, 403, 'Permission denied.', "Parent dir doesn't match.");
    if (folder?.type !== 'dir') throw fsError(400, "Parent dir doesn't exist.");
    if (parts.length === 0) throw fsError(400, 'No file uploaded.');
    for (const f of parts) {
      if (!f.filename && field('filename')) f.filename = field('filename')!;
      // the Go server keeps a backslash (Go's multipart takes the filename's filepath.Base: '/' only)
      f.filename = go ? nfcName(f.filename.slice(f.filename.lastIndexOf('/') + 1)) : uploadName(f.filename);
      if (!isValidName(f.filename)) throw fsError(440, 'Invalid filename.');
      // the C fileserver's temporary file is named after the upload plus 6 characters: past
      // 255 bytes its creation fails and the upload answers 500 (upload-file.c open_temp_file)
      if (Buffer.byteLength(f.filename, 'utf8') > 249) throw fsError(500, 'Internal server error');
    }
    requirePassword(ctx, user, repo);
    for (const f of parts) adopt(ctx, repo, f);
    return await putFiles(
      ctx,
      user,
      repo.id,
      '/' + [...parent, ...rel].join('/'),
      parts.map((f) => ({ name: f.filename, id: f.id, size: f.size, mtime: lastModify(ctx, fields) })),
      { replace: truthy(field('replace')), createParents: rel.length > 0 },
    );
  } finally {
    await discard(files);
  }
}

export async function update(ctx: Ctx, r: Req): Promise<void> {
  const { t, user, repo } = uploadToken(ctx, r, 'update');
  const { fields, files } = await receive(ctx, r, Infinity);
  try {
    const form = fileServerFields(ctx.goFileserver, r, fields);
    const target = form.get('target_file');
    if (!target) throw refused(ctx, 400, 'Invalid URL.', 'No target_file given.\n');
    let comps: string[];
    try {
      comps = splitPath(target);
    } catch {
      throw fsError(400, 'Invalid URL.');
    }
    const dir = '/' + comps.slice(0, -1).join('/');
    if (t.dir !== '/' && dir !== t.dir && !dir.startsWith(t.dir + '/')) throw fsError(403, 'Permission denied.');
    const part = files.find((f) => f.field === 'file') ?? files[0];
    if (!part) throw fsError(400, 'No file uploaded.');
    // the name comes from target_file, but the C fileserver names its temporary file after the part's
    if (Buffer.byteLength(uploadName(part.filename ?? ''), 'utf8') > 249) throw fsError(500, 'Internal server error');
    const root = (await ctx.heads.get(repo.id)).root_id;
    const old = await lookup(ctx.store, root, comps);
    if (old?.type !== 'file') throw refused(ctx, 441, 'File does not exist.', 'File does not exist.\n');
    requirePassword(ctx, user, repo);
    if (part.size - old.size > (await ctx.quotaLeft(repo))) throw refused(ctx, 443, 'Out of quota.', 'Out of quota.\n');
    adopt(ctx, repo, part);
    const id = await updateFile(ctx, user, repo.id, '/' + comps.join('/'), {
      id: part.id,
      size: part.size,
      mtime: lastModify(ctx, fields),
    });
    if (id === null) throw fsError(441, 'File does not exist.');
    const retJson = ctx.goFileserver ? form.has('ret-json') : r.query.get('ret-json') === '1';
    sendStored(ctx, r, retJson, [{ name: comps[comps.length - 1], id, size: part.size }], id);
  } finally {
    await discard(files);
  }
}
