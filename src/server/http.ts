// Request/response plumbing shared by the web API and the file server.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A failure that becomes an HTTP answer. Web API bodies are {"error_msg": ...}. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body?: unknown, // replaces {"error_msg": message} when set
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A file-server failure: answered as text/plain `{"error": "...\n"}` like real servers. */
export class FileServerError extends HttpError {}

export const notFound = (what: string) => new HttpError(404, what);
export const forbidden = () => new HttpError(403, 'Permission denied.');
export const badRequest = (msg: string) => new HttpError(400, msg);

export function sendJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * An upload answer of the file server as the C one sends it: the text as it
 * is (an error `{"error": "...\n"}` with a raw newline, or tab-separated ids),
 * labelled application/json whatever it holds.
 */
export function sendFileServerText(res: ServerResponse, status: number, text: string): void {
  sendText(res, status, text, { 'Content-Type': 'application/json; charset=utf-8' });
}

/** The C fileserver's messages that it sends without the newline the others end with. */
const NO_NEWLINE = new Set(['Permission denied.', 'Access token not found.', 'Invalid relative path.']);

export function sendFileServerError(res: ServerResponse, status: number, msg: string): void {
  sendFileServerText(res, status, `{"error": "${msg}${NO_NEWLINE.has(msg) ? '' : '\n'}"}`);
}

/** Form fields (urlencoded, or a JSON object when allowed) with repeated values. */
export class Form {
  constructor(private readonly values: Map<string, string[]>) {}
  get(name: string): string | undefined {
    return this.values.get(name)?.[0];
  }
  getAll(name: string): string[] {
    return this.values.get(name) ?? [];
  }
  static fromSearch(params: URLSearchParams): Form {
    const m = new Map<string, string[]>();
    for (const [k, v] of params) m.set(k, [...(m.get(k) ?? []), v]);
    return new Form(m);
  }
  static fromJson(obj: unknown): Form {
    const m = new Map<string, string[]>();
    if (obj && typeof obj === 'object' && !Array.isArray(obj)) {
      for (const [k, v] of Object.entries(obj as Record<string, unknown>)) {
        const list = Array.isArray(v) ? v : [v];
        m.set(
          k,
          list.filter((x) => x !== null && x !== undefined).map((x) => (typeof x === 'string' ? x : JSON.stringify(x))),
        );
      }
    }
    return new Form(m);
  }
}

const DRAIN_LIMIT = 64 << 20;

/**
 * Before an early answer (bad token, too large, over quota) the rest of the
 * request body is read and dropped, so clients that write the whole body
 * before reading (fetch) see the answer instead of EPIPE. Past a limit the
 * connection is closed after the answer instead.
 */
export function drainBody(req: IncomingMessage, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    let n = 0;
    const done = () => {
      req.off('data', onData);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      n += chunk.length;
      if (n > DRAIN_LIMIT) {
        res.setHeader('Connection', 'close');
        req.pause();
        done();
      }
    };
    req.on('data', onData);
    req.once('end', done);
    req.once('error', done);
    req.once('close', done);
    req.resume();
  });
}

const MAX_FORM_BYTES = 1 << 20;

export async function readSmallBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of req) {
    n += (chunk as Buffer).length;
    if (n > MAX_FORM_BYTES) throw new HttpError(413, 'Request body too large.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Parses a form body. Real servers read the `/api2/` file and folder
 * operations only from form fields (a JSON body leaves them empty); other
 * endpoints also take JSON, as rclone sends it.
 */
export async function parseBody(req: IncomingMessage, opts: { json: boolean }): Promise<Form> {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  const raw = await readSmallBody(req);
  if (raw.length === 0) return new Form(new Map());
  if (type.startsWith('application/json')) {
    if (!opts.json) return new Form(new Map());
    try {
      return Form.fromJson(JSON.parse(raw.toString('utf8')));
    } catch {
      throw new HttpError(400, 'JSON parse error.', { detail: 'JSON parse error' });
    }
  }
  if (type.startsWith('multipart/form-data')) {
    return parseSmallMultipart(raw, type);
  }
  return Form.fromSearch(new URLSearchParams(raw.toString('utf8')));
}

/** Fields of a small multipart body (non-upload endpoints some clients post as multipart). */
function parseSmallMultipart(raw: Buffer, type: string): Form {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(type);
  const map = new Map<string, string[]>();
  if (!m) return new Form(map);
  const boundary = '--' + (m[1] ?? m[2]);
  for (const part of raw.toString('utf8').split(boundary)) {
    const sep = part.indexOf('\r\n\r\n');
    if (sep < 0) continue;
    const head = part.slice(0, sep);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    if (!name) continue;
    const value = part.slice(sep + 4).replace(/\r\n$/, '');
    map.set(name, [...(map.get(name) ?? []), value]);
  }
  return new Form(map);
}

export function isoTime(sec: number): string {
  return new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

export function nowSec(): number {
  return Math.floor(Date.now() / 1000);
}

/** The fields every V2.1 file or folder answer starts with: where the object is and what it is called. */
export function objInfoV21(
  type: 'file' | 'dir',
  repoId: string,
  p: string,
  e: { name: string; id: string; mtime: number },
) {
  // seahub 10 (api2/endpoints/file.py, dir.py): os.path.dirname of the path, no trailing slash
  const parent = '/' + p.split('/').filter(Boolean).slice(0, -1).join('/');
  return {
    type,
    repo_id: repoId,
    parent_dir: parent,
    obj_name: e.name,
    obj_id: e.id,
    mtime: isoTime(e.mtime),
  };
}
