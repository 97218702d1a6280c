// Where the Go file server (seafile-server's fileserver/, the default of the
// official 13+ images, optional in 10.0) answers otherwise than the C one, for
// `seafs serve --fileserver go` (checked against the real 10.0 Go fileserver):
//   - errors are Go's http.Error: text/plain, the message and a newline, where
//     the C server sends application/json; the upload, update and blocks
//     handlers wrap their own messages as the C one does, `{"error": "..."}`
//     (with the message's raw newline), their token checks do not; a block a
//     commit names but the library lacks is 500 with no message (the quota
//     check stats every block first)
//   - an uploaded file's name keeps a backslash (C cuts at it)
//   - a download link's answer has Go's own headers (files.ts goDownloadHeaders):
//     charset=gbk on text, `filename*="utf-8' '..."`, cached an hour, no ETag;
//     a spent token is 403 "Access token not found", any If-Modified-Since 304
//   - there is no update-blks-api (404 "404 page not found")
//   - replace, commitonly and ret-json are read from the query or the form
//     (Go's r.Form holds both; the form's value comes first), and ret-json
//     counts when present with any value
//   - parent_dir, file_name and target_file are NFC-normalised
import type { ServerResponse } from 'node:http';
import type { Req } from '../context.js';

/** Go's http.Error: text/plain, `msg` then a newline. */
export function sendGoError(res: ServerResponse, status: number, msg: string): void {
  const body = `${msg}\n`;
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** What the Go router answers for a path it has no handler for. */
export function sendGoNotFound(res: ServerResponse): void {
  sendGoError(res, 404, '404 page not found');
}

/** The fields of a file-server form as each file server reads them. */
export interface FileServerFields {
  /** a field the form gives (Go: or else the query) */
  get(name: string): string | undefined;
  /** whether a flag is given: C reads commitonly and ret-json from the query only, Go from either */
  has(name: string): boolean;
}

export function fileServerFields(go: boolean, r: Req, fields: Map<string, string[]>): FileServerFields {
  const form = (k: string) => fields.get(k)?.[0];
  if (!go) return { get: form, has: (k) => r.query.has(k) };
  const nfc = new Set(['parent_dir', 'file_name', 'target_file']);
  return {
    get: (k) => {
      const v = form(k) ?? r.query.get(k) ?? undefined;
      return v !== undefined && nfc.has(k) ? v.normalize('NFC') : v;
    },
    has: (k) => fields.has(k) || r.query.has(k),
  };
}
