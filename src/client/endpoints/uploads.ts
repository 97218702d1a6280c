// Upload endpoints: upload and update links of a folder, and the multipart
// POST of a local file to such a link under the retry policy. The body is a
// one-shot stream, so every attempt builds a new one; an upload without
// replace whose answer was lost is checked against the folder first (a
// resend would make "name (1)").
import { ApiError } from '../errors.js';
import type { Call, HttpCore } from '../http.js';
import { multipartFromFile } from '../multipart.js';
import { passwordRefusal } from '../relock.js';
import { backoffDelay, decide, sleep, unsure, type RetryClass } from '../retry.js';
import type { UploadedFile } from '../types.js';
import { parseUploadAnswer } from '../upload-answer.js';
import { expectString } from './expect.js';
import { entriesOf } from './folders.js';
import { normalizeDir, q, repoPath } from './paths.js';

/** An upload URL for folder `dir` (reusable for about an hour). Over quota: `quota`. */
export async function uploadLink(http: HttpCore, repoId: string, dir: string): Promise<string> {
  const op = 'upload link';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'upload-link/'),
    query: { p: q(dir) },
    retry: 'read',
    ctx: 'transfer-link',
  });
  return expectString(op, r.value);
}

export async function updateLink(http: HttpCore, repoId: string, dir: string): Promise<string> {
  const op = 'update link';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'update-link/'),
    query: { p: q(dir) },
    retry: 'read',
    ctx: 'transfer-link',
  });
  return expectString(op, r.value);
}

/** `name` itself and the names the server gives a clash: 'a.txt' -> 'a.txt', 'a (1).txt', ... */
function sameOrAutoRenamed(name: string, candidate: string): boolean {
  if (candidate === name) return true;
  const dot = name.lastIndexOf('.');
  const base = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  if (!candidate.startsWith(`${base} (`) || !candidate.endsWith(`)${ext}`)) return false;
  return /^\d+$/.test(candidate.slice(base.length + 2, candidate.length - ext.length - 1));
}

/** See SeafileClient.upload. */
export async function upload(
  http: HttpCore,
  link: string,
  parentDir: string,
  localFile: string,
  name: string,
  opts: { replace?: boolean; relativePath?: string; repoId?: string },
): Promise<UploadedFile[]> {
  const op = 'upload';
  const fields: [string, string][] = [['parent_dir', q(parentDir)]];
  if (opts.replace) fields.push(['replace', '1']);
  if (opts.relativePath) fields.push(['relative_path', opts.relativePath]);
  fields.push(['filename', name]);
  const startedSec = Math.floor(Date.now() / 1000) - 1;
  let size = 0;
  const dir = opts.relativePath ? `${normalizeDir(parentDir)}/${opts.relativePath}`.replace(/\/+/g, '/') : parentDir;
  const repoId = opts.repoId;
  const check =
    repoId === undefined
      ? undefined
      : async (): Promise<UploadedFile[] | null> => {
          const found = (await entriesOf(http, repoId, normalizeDir(dir))).find(
            (e) => e.type === 'file' && sameOrAutoRenamed(name, e.name) && e.size === size && e.mtime >= startedSec,
          );
          return found ? [{ name: found.name, id: found.id, size }] : null;
        };
  const text = await postUploadRetried(
    http,
    op,
    link,
    opts.replace ? 'idempotent' : check ? 'checked' : 'write',
    check,
    repoId,
    async () => {
      const body = await localBody(op, fields, localFile, name);
      size = body.fileSize;
      return body;
    },
  );
  return typeof text === 'string' ? parseUploadAnswer(op, text, { name, size }) : text;
}

/** See SeafileClient.update. */
export async function update(
  http: HttpCore,
  link: string,
  targetFile: string,
  localFile: string,
  opts: { lastModify?: number; repoId?: string } = {},
): Promise<string> {
  const op = 'update';
  const name = q(targetFile).split('/').pop() || 'file';
  const fields: [string, string][] = [
    ['target_file', q(targetFile)],
    ['filename', name],
  ];
  // an update's name comes from target_file; the C fileserver names its temporary file after the
  // part's filename, which fails (500) for names over 249 bytes
  const partName = Buffer.byteLength(name, 'utf8') > 200 ? 'file' : name;
  if (opts.lastModify) fields.push(['last_modify', new Date(Math.floor(opts.lastModify / 1000) * 1000).toISOString()]);
  let size = 0;
  const text = await postUploadRetried(http, op, link, 'idempotent', undefined, opts.repoId, async () => {
    const body = await localBody(op, fields, localFile, partName);
    size = body.fileSize;
    return body;
  });
  return parseUploadAnswer(op, text as string, { name, size })[0]!.id;
}

/**
 * An upload POST under the retry policy: each attempt gets a new body. A
 * timed-out upload is not sent again (its budget is spent); other waits
 * count against the client's timeout. `check` answers, after a lost answer
 * of a 'checked' upload, what the server already stored (null: nothing).
 * `repoId`: the library, unlocked again (and the upload resent once, outside
 * the retry count) when the file server refuses for want of its password.
 */
export async function postUploadRetried<T>(
  http: HttpCore,
  op: string,
  link: string,
  cls: RetryClass,
  check: (() => Promise<T | null>) | undefined,
  repoId: string | undefined,
  makeBody: () => Promise<NonNullable<Call['body']>>,
): Promise<string | T> {
  let waited = 0;
  let reunlocked = false;
  for (let attempt = 0; ; attempt++) {
    const body = await makeBody();
    let failure: ApiError;
    const sentAt = Date.now();
    try {
      return (await postUpload(http, op, link, body)).text;
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      body.stream.destroy();
      failure = e;
    }
    if (repoId && !reunlocked && http.relock && passwordRefusal(failure, 'upload')) {
      reunlocked = true;
      if (await http.relock(repoId, sentAt).catch(() => false)) {
        // a 500 does not say that nothing was stored: a new upload looks first (as after any 5xx)
        if (cls === 'checked' && unsure({ status: failure.status })) {
          const done = await check!().catch(() => undefined);
          if (done === undefined) throw failure;
          if (done !== null) return done;
        }
        attempt--;
        continue;
      }
    }
    if (failure.kind === 'quota' || failure.kind === 'timeout') throw failure;
    const delayMs = backoffDelay(attempt, failure.retryAfterMs, http.opts.backoff);
    const code = (failure as ApiError & { code?: string }).code;
    const next = decide(
      cls,
      { status: failure.status, code },
      {
        attempt,
        maxRetries: http.opts.maxRetries,
        elapsedMs: waited,
        delayMs,
        budgetMs: http.opts.timeoutMs,
      },
    );
    if (next === 'stop') throw failure;
    await sleep(delayMs);
    waited += delayMs;
    if (next === 'check') {
      const done = await check!().catch(() => undefined);
      if (done === undefined) throw failure;
      if (done !== null) return done;
    }
  }
}

/**
 * POSTs a multipart body to an upload or update link and returns the answer's text.
 * Never retried: the body is a one-shot stream and a repeat could create "name (1)".
 */
export async function postUpload(
  http: HttpCore,
  op: string,
  link: string,
  body: Call['body'],
): Promise<{ text: string }> {
  return http.text({
    op,
    method: 'POST',
    url: link,
    query: { 'ret-json': 1 },
    body,
    retry: 'never',
    ctx: 'upload',
    transfer: 'upload',
  });
}

async function localBody(op: string, fields: [string, string][], localFile: string, name: string) {
  try {
    return await multipartFromFile(fields, { field: 'file', filename: name, path: localFile });
  } catch (e) {
    // a local problem, not the server's: keep the fs error code for the caller
    throw Object.assign(new Error(`${op}: cannot read ${localFile}: ${(e as Error).message}`, { cause: e }), {
      code: (e as { code?: string }).code,
    });
  }
}
