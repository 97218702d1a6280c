// The file server's blocks API, answered as the C file server of seafile-server
// 10.0 does (upload-file.c, access-file.c; checked against a real 10.0):
//   POST upload-raw-blks-api/<token>   one multipart part `file` per block, filename = its id;
//   POST upload-blks-api/<token>?commitonly=true   a file from blocks the library holds;
//   POST update-blks-api/<token>?commitonly=true   the same with replace, named by target_file;
//   GET  blks/<token>/<block id>       one block of a file (one-time token).
// Errors are the C server's JSON `{"error": "..."}` (application/json) with its
// exact messages. A block the library lacks fails a commit with 443 "Out of
// quota.", not 446: the quota check stats every block first and takes a
// failed stat for "over quota" (repo-op.c check_quota_before_commit_blocks).
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { BLOCK_ID } from '../store/block-store.js';
import type { Ctx, Req, UploadToken } from '../context.js';
import type { RepoMeta, User } from '../store/db.js';
import { discard, lastModify, unlockedFor } from './files.js';
import { fileServerFields, sendGoError } from './go-answers.js';
import { drainBody, HttpError } from '../http.js';
import { isFileOfLibrary } from './library-files.js';
import { parseMultipart } from './multipart.js';
import { canonicalDir, isValidName, nfcName } from '../store/names.js';
import { sha1, ZERO_ID } from '../store/objects.js';
import { putFiles } from '../store/library-changes.js';
import { lookup, splitPath } from '../store/tree.js';

/**
 * A failure answered as the C file server does: `{"error": "<message>"}`, application/json. The Go
 * one wraps a message the same way (formatJSONError) except for the token's own checks
 * (parseUploadHeaders, before it), which are `plain`; both then go out as Go's http.Error does.
 */
class BlkError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly plain = false,
  ) {
    super(message);
  }
}

const internal = () => new BlkError(500, 'Internal error\n');
const outOfQuota = () => new BlkError(443, 'Out of quota.\n');

function reply(r: Req, status: number, body: string): void {
  r.res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  r.res.end(body);
}

async function answering(r: Req, fn: () => Promise<string>, ctx: Ctx): Promise<void> {
  try {
    reply(r, 200, await fn());
  } catch (e) {
    let err: BlkError;
    if (e instanceof BlkError) err = e;
    else if (e instanceof HttpError && e.status === 442) err = new BlkError(442, 'File size is too large.\n');
    else if (e instanceof HttpError && e.status === 443) err = outOfQuota();
    else if (e instanceof HttpError && e.status < 500) err = new BlkError(e.status, e.message);
    else throw e;
    if (!r.raw.complete) await drainBody(r.raw, r.res);
    if (ctx.goFileserver && (err.plain || !err.message)) return sendGoError(r.res, err.status, err.message);
    if (ctx.goFileserver) return sendGoError(r.res, err.status, `{"error": "${err.message}"}`);
    reply(r, err.status, `{"error": "${err.message}"}`);
  }
}

/** The token of a blocks URL: taken when the URL's operation starts with the token's (check_access_token). */
function tokenFor(ctx: Ctx, r: Req, urlOp: string): { t: UploadToken; user: User; repo: RepoMeta } {
  const go = ctx.goFileserver;
  const t = ctx.uploads.get(r.params[0]);
  if (!t || t.expires <= Date.now())
    throw new BlkError(403, go ? 'Access token not found' : 'Access token not found.', go);
  if (!urlOp.startsWith(t.kind)) throw new BlkError(403, 'Operation does not match access token.', go);
  const type = r.raw.headers['content-type'] ?? '';
  // Go: ParseMultipartForm fails, 400 with no message
  if (!/^\s*multipart\/form-data\s*;.*boundary/i.test(type)) throw new BlkError(400, go ? '' : 'Wrong boundary in url');
  const user = ctx.db.user(t.user);
  const repo = ctx.db.repo(t.repoId);
  if (!user || !repo || ctx.permission(user, repo) !== 'rw') throw new BlkError(403, 'Permission denied.');
  return { t, user, repo };
}

/**
 * The text fields of a commit: its `blockids` holds 43 bytes per block (a quoted id and a comma),
 * 8 MiB of fields takes some 195,000 blocks (1.5 TiB in 8 MiB blocks); a raw upload's need little.
 */
const COMMIT_FORM_BYTES = 8 << 20;

async function receive(ctx: Ctx, r: Req, o: { blockSize?: number; quotaLeft?: number; maxFormBytes?: number } = {}) {
  const max = ctx.opts.maxUploadBytes ?? Infinity;
  const left = o.quotaLeft ?? Infinity;
  return parseMultipart(r.raw, r.raw.headers['content-type'] ?? '', {
    tmpDir: ctx.tmpDir,
    blockSize: o.blockSize,
    maxFormBytes: o.maxFormBytes,
    onBytes: (n) => {
      if (n > max) throw new BlkError(442, 'File size is too large.\n');
      if (n > left) throw outOfQuota();
    },
  });
}

/**
 * POST upload-raw-blks-api: stores each `file` part as a block once its sha1 matches its filename.
 * Unlike real servers (only max_upload_size on the sum of the parts), the blocks the library did not
 * hold count against the owner's quota from now until a commit uses them or they are removed.
 */
export function uploadRawBlocks(ctx: Ctx, r: Req): Promise<void> {
  return answering(
    r,
    async () => {
      const { repo } = tokenFor(ctx, r, 'upload-raw-blks-api');
      // while the body comes, a bound (blocks sent again that still wait for a commit count once: exact below)
      const bound = (await ctx.quotaLeft(repo)) + ctx.blocks.pendingBytes(repo.id);
      const { files } = await receive(ctx, r, { blockSize: Infinity, quotaLeft: bound });
      try {
        const parts = files.filter((f) => f.field === 'file');
        if (parts.length === 0) throw ctx.goFileserver ? new BlkError(400, 'No file in multipart form.\n') : internal();
        await ctx.underQuota(repo.owner, async () => {
          const added = new Map<string, number>();
          for (const p of parts) {
            const id = p.filename.toLowerCase();
            if (!ctx.blocks.usesBlock(repo.id, id)) added.set(id, p.size);
          }
          const bytes =
            [...added.values()].reduce((a, b) => a + b, 0) - ctx.blocks.pendingOf(repo.id, [...added.keys()]);
          if (bytes > 0 && bytes > (await ctx.quotaLeft(repo))) throw outOfQuota();
          // in order, as the C server: blocks before a mismatch stay stored
          for (const p of parts) {
            const got = p.blocks[0]?.id ?? sha1('');
            // C: "Block id ... doesn't match content." logged, Go: "failed to index file blocks"
            if (p.filename.toLowerCase() !== got) throw ctx.goFileserver ? new BlkError(500, '') : internal();
            ctx.blocks.adoptBlock(repo.id, p.tmpPath, got, p.size);
            p.tmpPath = '';
          }
        });
        return '"OK"';
      } finally {
        await discard(files);
      }
    },
    ctx,
  );
}

/** C atoll/atoi: the leading integer, 0 when there is none */
function cInt(v: string): number {
  const m = /^\s*([+-]?\d+)/.exec(v);
  return m ? Number(m[1]) : 0;
}

/** file_size: C atoll's reading, -1 when missing; 400 past what a byte count can be (a value C would overflow) */
function fileSize(v: string | undefined): number {
  if (v === undefined) return -1;
  const n = cInt(v);
  if (!Number.isSafeInteger(n)) throw new BlkError(400, 'Invalid argument file_size.\n');
  return n;
}

/**
 * Commits `name` in `parentDir` from the listed blocks (seaf_repo_manager_commit_file_blocks):
 * the name is checked (500), every block must be held by the library and their total fit
 * the quota (443 either way), then the file is added (a clash without replace takes a free
 * name, which the answer does not tell).
 */
async function commitBlocks(
  ctx: Ctx,
  user: User,
  repo: RepoMeta,
  fields: Map<string, string[]>,
  parentDir: string,
  name: string,
  blockidsJson: string,
  size: number,
  replace: boolean,
): Promise<string> {
  let ids: unknown;
  try {
    ids = JSON.parse(blockidsJson);
  } catch {
    // the C server's json_to_file_list gives no list: an empty file; Go's json.Unmarshal fails: 500
    if (ctx.goFileserver) throw new BlkError(500, '');
    ids = [];
  }
  const list = Array.isArray(ids) ? ids.map((x) => (typeof x === 'string' ? x : '')) : [];
  if (!isValidName(name)) throw internal();
  if (parentDir.includes('//')) throw internal();
  const sizes: number[] = [];
  for (const id of list) {
    const s = ctx.blocks.heldSize(repo.id, id);
    // both servers stat every block for the quota check first and take a failed stat for over quota
    // (C: 443 "Out of quota.") or an internal error (Go checkQuotaBeforeCommitBlocks: 500, no
    // message), so the 446 of Go's later block check is never reached
    if (s === null) throw ctx.goFileserver ? new BlkError(500, '') : outOfQuota();
    sizes.push(s);
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  // Real servers store any file_size, which then is the file's size in every listing and in the
  // usage: the bytes of the blocks are what is stored (an encrypted library's blocks are a
  // client's ciphertext, up to 16 bytes of padding per block larger than the file).
  const slack = repo.encrypted ? 16 * list.length : 0;
  if (size > total || size < total - slack) throw new BlkError(400, 'Invalid file size.\n');
  // the blocks sent raw for this file counted already; now they are the file
  if (total > 0 && total > (await ctx.quotaLeft(repo)) + ctx.blocks.pendingOf(repo.id, list)) throw outOfQuota();
  const taken = ctx.blocks.takeForCommit(repo.id, list);
  if (!taken) throw outOfQuota(); // removed meanwhile
  let ok = false;
  try {
    const id = ctx.blocks.putRecord(list, taken.sizes, size);
    if (repo.encrypted) ctx.blocks.markUndecryptable(repo.id, id, true);
    await putFiles(
      ctx,
      user,
      repo.id,
      '/' + splitPath(canonicalDir(parentDir)).join('/'),
      [{ name, id, size, mtime: lastModify(ctx, fields) }],
      { replace },
    );
    ok = true;
    return id;
  } finally {
    taken.done(ok);
  }
}

/** check_parent_dir: 400 "Parent dir doesn't exist." unless the folder is there */
async function requireParent(ctx: Ctx, repo: RepoMeta, parentDir: string): Promise<void> {
  let comps: string[];
  try {
    comps = splitPath(canonicalDir(parentDir));
  } catch {
    throw new BlkError(400, "Parent dir doesn't exist.\n");
  }
  const root = (await ctx.heads.get(repo.id)).root_id;
  if ((await lookup(ctx.store, root, comps))?.type !== 'dir') throw new BlkError(400, "Parent dir doesn't exist.\n");
}

/** the folder `parentDir` names, as '/a/b' (NFC, as both fileservers normalise it) */
function folderOf(parentDir: string): string {
  return '/' + splitPath(canonicalDir(parentDir)).map(nfcName).join('/');
}

/** POST upload-blks-api?commitonly=true: parent_dir, file_name, file_size, blockids (JSON), replace, last_modify */
export function commitUploadBlocks(ctx: Ctx, r: Req): Promise<void> {
  return answering(
    r,
    async () => {
      const { t, user, repo } = tokenFor(ctx, r, 'upload-blks-api');
      const { fields, files } = await receive(ctx, r, { maxFormBytes: COMMIT_FORM_BYTES });
      await discard(files); // a commit takes no file parts
      const go = ctx.goFileserver;
      const form = fileServerFields(go, r, fields);
      const field = form.get;
      // Go reads integers with strconv.ParseInt (all of it a number), C with atoi/atoll (its start)
      const notInt = (v: string | undefined) => go && !!v && !/^[+-]?\d+$/.test(v);
      let replace = 0;
      if (field('replace')) {
        replace = cInt(field('replace')!);
        if (replace !== 0 && replace !== 1) throw new BlkError(400, 'Invalid argument replace.\n');
        if (notInt(field('replace'))) throw new BlkError(400, 'Invalid argument replace.\n');
      }
      const parentDir = field('parent_dir');
      const name = field('file_name');
      if (go && !parentDir) throw new BlkError(400, 'No parent_dir given.\n');
      if (go && !name) throw new BlkError(400, 'No file_name given.\n');
      if (notInt(field('file_size'))) throw new BlkError(400, 'Invalid argument file_size.\n');
      const size = fileSize(go ? field('file_size') || undefined : field('file_size'));
      if (parentDir === undefined || name === undefined || size < 0)
        throw new BlkError(400, go ? 'Invalid file size.\n' : 'No parent dir or file name.\n');
      // the C message's spelling is that server's
      if (!form.has('commitonly'))
        throw new BlkError(400, go ? 'Only commit supported.\n' : 'Only commit suppported.\n');
      await requireParent(ctx, repo, parentDir);
      // Real servers take an upload link's token here too and commit anywhere in the library (they
      // check parent_dir against the token's folder only in upload-api): here, as in upload-api, a
      // link's token commits into its folder only.
      if (t.link && folderOf(parentDir) !== folderOf(t.dir)) throw new BlkError(403, 'Permission denied.\n');
      const blockids = field('blockids');
      if (blockids === undefined || (go && !blockids))
        throw new BlkError(400, go ? 'No blockids given.\n' : 'No blockids.\n');
      const id = await commitBlocks(ctx, user, repo, fields, parentDir, name, blockids, size, replace === 1);
      if (!form.has('ret-json')) return `"${id}"`;
      return ctx.goFileserver ? JSON.stringify({ id }) : `{"id": "${id}"}`;
    },
    ctx,
  );
}

/** POST update-blks-api?commitonly=true: target_file, file_size, blockids; answers the bare file id */
export function commitUpdateBlocks(ctx: Ctx, r: Req): Promise<void> {
  return answering(
    r,
    async () => {
      const { user, repo } = tokenFor(ctx, r, 'update-blks-api');
      const { fields, files } = await receive(ctx, r, { maxFormBytes: COMMIT_FORM_BYTES });
      await discard(files);
      const form = fileServerFields(false, r, fields);
      const field = form.get;
      const target = field('target_file');
      const size = fileSize(field('file_size'));
      if (target === undefined || size < 0) throw new BlkError(400, 'No target file.\n');
      if (!r.query.has('commitonly')) throw new BlkError(400, 'Only commit supported.\n');
      // g_path_get_dirname / g_path_get_basename
      const t = target.replace(/\/+$/, '') || '/';
      const slash = t.lastIndexOf('/');
      const parentDir = slash < 0 ? '.' : t.slice(0, slash) || '/';
      const name = slash < 0 ? t : t.slice(slash + 1) || '/';
      await requireParent(ctx, repo, parentDir);
      const blockids = field('blockids');
      if (blockids === undefined) throw new BlkError(400, 'No blockids.\n');
      return commitBlocks(ctx, user, repo, fields, parentDir, name, blockids, size, true);
    },
    ctx,
  );
}

/**
 * GET blks/<token>/<block id>: one block of the token's file, as stored. The file must be one of
 * the library's, now or in its history (real servers: an object of the library's own store), and
 * the block one of its blocks. Real servers serve an encrypted library's blocks as stored, which is
 * ciphertext there; the blocks here are plaintext, refused as a download is until the password.
 */
export async function downloadBlock(ctx: Ctx, r: Req): Promise<void> {
  const text = (status: number, body: string) => {
    r.res.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    r.res.end(body);
  };
  const blockId = r.params[1] ?? '';
  if (!blockId) return text(400, 'Invalid URL\n');
  const t = ctx.downloads.get(r.params[0]);
  if (!t || t.op !== 'downloadblks' || t.expires <= Date.now()) return text(403, 'Access token not found\n');
  ctx.downloads.delete(r.params[0]); // one-time
  if (t.encrypted && !unlockedFor(ctx, t.user, t.repoId))
    return text(400, 'Repo is encrypted. Please provide password to view it.\n');
  let ids: string[];
  if (t.fileId === ZERO_ID) ids = [];
  else if (await isFileOfLibrary(ctx, t.repoId, t.fileId))
    ids = (await ctx.blocks.blocksOf(t.repoId, t.fileId)).block_ids;
  else return text(400, 'Invalid file id\n\n');
  if (!BLOCK_ID.test(blockId) || !ids.includes(blockId)) {
    r.res.writeHead(400, { 'Content-Length': '0' });
    return void r.res.end();
  }
  const place = ctx.blocks.resolve(blockId);
  if (!place) return text(500, 'Internal error\n');
  const size = place.size;
  r.res.writeHead(200, {
    'Access-Control-Allow-Origin': '*',
    'Content-Disposition': `attachment;filename="${blockId}"`,
    'Content-Length': String(size),
    'Last-Modified': new Date().toUTCString(),
    'Cache-Control': 'max-age=3600',
  });
  if (r.method === 'HEAD') return void r.res.end();
  try {
    if (size > 0)
      await pipeline(
        createReadStream(place.path, { start: place.start, end: place.start + size - 1, highWaterMark: 256 * 1024 }),
        r.res,
      );
    else r.res.end();
  } catch {
    r.res.destroy();
  }
}
