// The client's uploadBatch capability: several files in one POST to an
// upload link, over a bare socket for plain http (see raw-post.ts) when
// `raw`, or the client's HTTP core otherwise.
import { ApiError } from './errors.js';
import type { HttpCore } from './http.js';
import { rawUpload } from './raw-post.js';
import { passwordRefusal } from './relock.js';
import type { BatchFile, UploadBatch } from './types.js';
import { parseUploadAnswer } from './upload-answer.js';
import { multipartOfFiles } from './upload-batch.js';

/** What the batch upload needs of the client (an interface: no import of client.ts, no cycle). */
interface Poster {
  readonly http: Pick<HttpCore, 'relock' | 'opts' | 'bandwidth'>;
  postUpload(op: string, link: string, body: Awaited<ReturnType<typeof multipartOfFiles>>): Promise<{ text: string }>;
}

async function viaClient(
  client: Poster,
  link: string,
  fields: [string, string][],
  files: BatchFile[],
): Promise<{ text: string; sizes: number[] }> {
  const body = await multipartOfFiles(fields, files);
  const r = await client.postUpload('upload', link, body);
  return { text: r.text, sizes: body.sizes };
}

/** The bare-socket POST, told to onAttempt (the debug log) as the HTTP core tells its own. */
async function viaSocket(
  client: Poster,
  link: string,
  fields: [string, string][],
  files: BatchFile[],
): Promise<{ text: string; sizes: number[] }> {
  const t0 = Date.now();
  try {
    const r = await rawUpload(link, fields, files, undefined, client.http.bandwidth.up);
    client.http.opts.onAttempt?.('upload', 'POST', 200, Date.now() - t0);
    return r;
  } catch (e) {
    const outcome = e instanceof ApiError ? e.status || e.kind : 'network';
    client.http.opts.onAttempt?.('upload', 'POST', outcome, Date.now() - t0);
    throw e;
  }
}

export function uploadManyFor(client: Poster, opts: { raw: boolean }): UploadBatch {
  const { raw } = opts;
  return async (link, parentDir, files, o) => {
    const fields: [string, string][] = [['parent_dir', parentDir]];
    if (o.replace) fields.push(['replace', '1']);
    if (o.lastModify) fields.push(['last_modify', new Date(Math.floor(o.lastModify / 1000) * 1000).toISOString()]);
    const send = () =>
      raw && link.startsWith('http:') ? viaSocket(client, link, fields, files) : viaClient(client, link, fields, files);
    const sentAt = Date.now();
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send();
    } catch (e) {
      // the server forgot the library's password: unlock again and send once more (a 500 says
      // nothing of what was stored: only a replacing upload, which a repeat cannot duplicate)
      const relock = client.http.relock;
      const again =
        o.repoId !== undefined &&
        relock !== undefined &&
        passwordRefusal(e, 'upload') &&
        (o.replace || e.kind === 'password_required') &&
        (await relock(o.repoId, sentAt).catch(() => false));
      if (!again) throw e;
      answer = await send();
    }
    const { text, sizes } = answer;
    const out = parseUploadAnswer('upload', text, { name: files[0]?.name ?? '', size: sizes[0] ?? 0 });
    // an answer of bare ids (no ret-json support) carries no names: they come in the order sent
    if (out.length === files.length && out.every((x) => x.name === files[0].name) && files.length > 1) {
      return out.map((x, i) => ({ ...x, name: files[i].name, size: sizes[i] }));
    }
    return out;
  };
}
