// SeafileClient: every web API operation seafs uses, over one keep-alive
// undici Agent (http.ts). Each method names its operation (for errors), its
// retry class (retry.ts) and its error context (status-map.ts). The one
// exception is streamGet, the reader's sequential stream, over a bare socket
// (raw-get.ts) unless the rawStreams option is off.
import { Readable } from 'node:stream';
import { ApiError, StreamUnsupported } from './errors.js';
import { HttpCore, header, protocolError, transportError, type Call, type HttpOptions } from './http.js';
import { multipartFromFile } from './multipart.js';
import { streamUploadFor } from './stream-upload.js';
import { parseUploadAnswer } from './upload-answer.js';
import { uploadManyFor } from './upload-many.js';
import { rawGet } from './raw-get.js';
import { backoffDelay, decide, notSent, sleep, type RetryClass } from './retry.js';
import type {
  AccountInfo,
  CommitRecord,
  CreatedLibrary,
  DirEntry,
  DirListing,
  DownloadLink,
  FileDetail,
  Library,
  LibraryHistory,
  LibraryHistoryPage,
  LibraryInfo,
  LibraryType,
  RangeDownload,
  SearchResult,
  SeafileApi,
  ServerInfo,
  StartUploadStream,
  ShareLink,
  StarredFile,
  StreamControl,
  StreamSink,
  TrashPage,
  UploadBatch,
  UploadedFile,
  UploadLinkShare,
} from './types.js';

export interface ClientOptions {
  baseUrl: string;
  token?: string;
  /**
   * headers and body timeout of API calls, and the time after which no retry
   * of a call starts; default 30 s
   */
  timeoutMs?: number;
  /** idle timeout of upload/download bodies and wait for an upload's answer; default timeoutMs */
  transferTimeoutMs?: number;
  /** how long the first login retries a server that resets, fails or throttles; default 30 s */
  loginRetryMs?: number;
  /** retries of a retriable failure (all within timeoutMs); default 5 */
  maxRetries?: number;
  /** first backoff step (ms, doubled each retry, with jitter); default 250 */
  retryBaseMs?: number;
  /** longest backoff step; default 8 s */
  retryMaxMs?: number;
  /** longest wait honoured from a Retry-After header; default 60 s */
  maxRetryAfterMs?: number;
  /** keep-alive connections per host; default 16 */
  connections?: number;
  userAgent?: string;
  /** offer the streaming upload capability (startUploadStream); default true */
  streamUploads?: boolean;
  /** multi-file uploads to a plain-http link over a bare socket (raw-post.ts) rather than undici; default true */
  rawUploads?: boolean;
  /** streamGet reads plain-http download URLs over a bare socket (raw-get.ts); default true. Off: it refuses, and readers use download() */
  rawStreams?: boolean;
}

const DEFAULT_UA = 'seafs/0.1';

function q(path: string): string {
  return path.startsWith('/') ? path : `/${path}`;
}

function repoPath(repoId: string, rest = ''): string {
  return `/api2/repos/${encodeURIComponent(repoId)}/${rest}`;
}

function expectString(op: string, v: unknown): string {
  if (typeof v !== 'string') throw protocolError(op, `expected a JSON string, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v;
}

function expectArray<T>(op: string, v: unknown): T[] {
  if (!Array.isArray(v)) throw protocolError(op, `expected a JSON array, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v as T[];
}

function expectObject<T>(op: string, v: unknown, field?: string): T {
  if (!v || typeof v !== 'object' || Array.isArray(v) || (field !== undefined && !(field in v))) {
    throw protocolError(op, `unexpected answer ${JSON.stringify(v)?.slice(0, 200)}`);
  }
  return v as T;
}

/** The parent folder and the last name of a library path ('/a/b' -> ['/a', 'b']). */
function splitLast(path: string): [string, string] {
  const p = normalizeDir(path);
  const i = p.lastIndexOf('/');
  return [i <= 0 ? '/' : p.slice(0, i), p.slice(i + 1)];
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

/**
 * Failures of a first login worth waiting out: a server that is there but
 * reset, failed or throttled. A server that cannot be reached at all
 * (refused, unknown host) is only retried by the call's own retries, so a
 * wrong URL is reported within seconds.
 */
function transientLoginFailure(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  if (e.kind === 'network') return !notSent((e as ApiError & { code?: string }).code);
  return e.kind === 'timeout' || e.kind === 'server' || e.kind === 'throttled';
}

/** '/a/b/' -> '/a/b', 'a' -> '/a', '' -> '/' (servers disagree about the trailing slash of parent_dir). */
export function normalizeDir(p: string): string {
  let s = p.startsWith('/') ? p : `/${p}`;
  while (s.length > 1 && s.endsWith('/')) s = s.slice(0, -1);
  return s;
}

export class SeafileClient implements SeafileApi {
  readonly http: HttpCore;
  readonly uploadBatch: UploadBatch;
  readonly startUploadStream?: StartUploadStream;
  private readonly rawStreams: boolean;

  constructor(opts: ClientOptions) {
    this.rawStreams = opts.rawStreams ?? true;
    const o: HttpOptions = {
      baseUrl: opts.baseUrl,
      token: opts.token,
      timeoutMs: opts.timeoutMs ?? 30_000,
      transferTimeoutMs: opts.transferTimeoutMs ?? opts.timeoutMs ?? 30_000,
      maxRetries: opts.maxRetries ?? 5,
      connections: opts.connections ?? 16,
      userAgent: opts.userAgent ?? DEFAULT_UA,
      backoff: {
        baseMs: opts.retryBaseMs ?? 250,
        maxMs: opts.retryMaxMs ?? 8_000,
        maxRetryAfterMs: opts.maxRetryAfterMs ?? 60_000,
      },
    };
    this.http = new HttpCore(o);
    this.http.relock = (repo) => this.relock(repo);
    this.uploadBatch = uploadManyFor(this, { raw: opts.rawUploads ?? true });
    if (opts.streamUploads !== false) this.startUploadStream = streamUploadFor(this);
  }

  /** Passwords of encrypted libraries unlocked through this client, re-sent when the server forgets them. */
  private readonly libraryPasswords = new Map<string, string>();

  private async relock(repoId: string): Promise<boolean> {
    const password = this.libraryPasswords.get(repoId);
    if (password === undefined) return false;
    await this.unlockLibrary(repoId, password);
    return true;
  }

  /** Stops re-sending a library's password. */
  forgetLibraryPassword(repoId: string): void {
    this.libraryPasswords.delete(repoId);
  }

  get token(): string | undefined {
    return this.http.token;
  }

  setToken(token: string | undefined): void {
    this.http.token = token;
  }

  /** Closes the keep-alive connections. */
  close(): Promise<void> {
    return this.http.close();
  }

  // ---- session and account ----

  /**
   * Logs in and returns a client holding the token. A server that resets,
   * times out or fails (5xx, 429) is asked again with backoff for up to
   * loginRetryMs (a mount must not die at start on one lost answer);
   * a login with a one-time code is not repeated (the code may be spent).
   */
  static async login(
    opts: ClientOptions,
    username: string,
    password: string,
    otp?: string,
  ): Promise<{ client: SeafileClient; token: string }> {
    const client = new SeafileClient({ ...opts, token: undefined });
    const deadline = Date.now() + (opts.loginRetryMs ?? 30_000);
    for (let attempt = 0; ; attempt++) {
      try {
        const token = await client.login(username, password, otp);
        return { client, token };
      } catch (e) {
        const delay = backoffDelay(attempt, e instanceof ApiError ? e.retryAfterMs : null, client.http.opts.backoff);
        if (otp === undefined && transientLoginFailure(e) && Date.now() + delay < deadline) {
          await sleep(delay);
          continue;
        }
        await client.close();
        throw e;
      }
    }
  }

  /** POST /api2/auth-token/; keeps the token for later calls and returns it. */
  async login(username: string, password: string, otp?: string): Promise<string> {
    const op = 'login';
    // both header spellings: real servers read X-Seafile-OTP, the spec names X-SERVICE-OTP
    const headers: Record<string, string> = otp ? { 'x-seafile-otp': otp, 'x-service-otp': otp } : {};
    const r = await this.http.json({
      op,
      method: 'POST',
      url: '/api2/auth-token/',
      form: { username, password },
      headers,
      auth: false,
      // the same credentials give the same token; a one-time code must not be sent twice
      retry: otp === undefined ? 'idempotent' : 'write',
      ctx: 'auth',
    });
    const o = expectObject<{ token?: unknown }>(op, r.value, 'token');
    const token = expectString(op, o.token);
    this.setToken(token);
    return token;
  }

  /** GET /api2/ping/ (no auth). */
  async ping(): Promise<void> {
    const r = await this.http.json({ op: 'ping', method: 'GET', url: '/api2/ping/', auth: false, retry: 'read' });
    if (r.value !== 'pong') throw protocolError('ping', `expected "pong", got ${JSON.stringify(r.value)}`);
  }

  /** GET /api2/auth/ping/: throws `unauthorized` when the token is not valid. */
  async authPing(): Promise<void> {
    const r = await this.http.json({ op: 'auth ping', method: 'GET', url: '/api2/auth/ping/', retry: 'read', ctx: 'auth' });
    if (r.value !== 'pong') throw protocolError('auth ping', `expected "pong", got ${JSON.stringify(r.value)}`);
  }

  async serverInfo(): Promise<ServerInfo> {
    const op = 'server info';
    const r = await this.http.json({ op, method: 'GET', url: '/api2/server-info/', auth: false, retry: 'read' });
    const o = expectObject<ServerInfo>(op, r.value, 'version');
    if (!Array.isArray(o.features)) o.features = [];
    return o;
  }

  async accountInfo(): Promise<AccountInfo> {
    const op = 'account info';
    const r = await this.http.json({ op, method: 'GET', url: '/api2/account/info/', retry: 'read', ctx: 'auth' });
    return expectObject<AccountInfo>(op, r.value, 'usage');
  }

  // ---- accounts and sharing (administration; used by tests and tools) ----

  /** PUT /api2/accounts/{email}/ (administrators): creates or updates an account. */
  async putAccount(
    email: string,
    fields: { password?: string; is_staff?: boolean; is_active?: boolean; name?: string; note?: string; storage?: number; [other: string]: string | number | boolean | undefined },
  ): Promise<void> {
    await this.http.done({
      op: 'put account',
      method: 'PUT',
      url: `/api2/accounts/${encodeURIComponent(email)}/`,
      form: fields,
      retry: 'idempotent',
    });
  }

  async deleteAccount(email: string): Promise<void> {
    await this.http.done({ op: 'delete account', method: 'DELETE', url: `/api2/accounts/${encodeURIComponent(email)}/`, retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  /** PUT /api2/shared-repos/{repo}/ with share_type=personal: shares a library with users. */
  async shareLibrary(repoId: string, users: string[], permission: 'r' | 'rw'): Promise<void> {
    await this.http.done({
      op: 'share library',
      method: 'PUT',
      url: `/api2/shared-repos/${encodeURIComponent(repoId)}/`,
      query: { share_type: 'personal', users: users.join(','), permission },
      retry: 'idempotent',
    });
  }

  async unshareLibrary(repoId: string, user: string): Promise<void> {
    await this.http.done({
      op: 'unshare library',
      method: 'DELETE',
      url: `/api2/shared-repos/${encodeURIComponent(repoId)}/`,
      query: { share_type: 'personal', user },
      retry: 'idempotent',
    });
  }

  // ---- libraries ----

  async listLibraries(type?: LibraryType): Promise<Library[]> {
    const op = 'list libraries';
    const r = await this.http.json({ op, method: 'GET', url: '/api2/repos/', query: { type }, retry: 'read' });
    return expectArray<Library>(op, r.value);
  }

  async getLibrary(repoId: string): Promise<LibraryInfo> {
    const op = 'library info';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId), retry: 'read' });
    return expectObject<LibraryInfo>(op, r.value, 'id');
  }

  /** POST /api2/repos/; with `password` the library is encrypted. */
  async createLibrary(name: string, opts: { desc?: string; password?: string } = {}): Promise<CreatedLibrary> {
    const op = 'create library';
    const r = await this.http.json({
      op,
      method: 'POST',
      url: '/api2/repos/',
      form: { name, desc: opts.desc ?? 'new repo', passwd: opts.password },
      retry: 'write',
    });
    return expectObject<CreatedLibrary>(op, r.value, 'repo_id');
  }

  async deleteLibrary(repoId: string): Promise<void> {
    await this.http.done({ op: 'delete library', method: 'DELETE', repo: repoId, url: repoPath(repoId), retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  /** POST /api2/repos/{id}/?op=rename: libraries are renamed as asked (no auto-rename), so this is idempotent. */
  async renameLibrary(repoId: string, newName: string): Promise<void> {
    await this.http.done({ op: 'rename library', method: 'POST', repo: repoId, url: repoPath(repoId), query: { op: 'rename' }, form: { repo_name: newName }, retry: 'idempotent' });
  }

  /**
   * POST /api2/repos/{id}/ with the password. The server forgets it after
   * about an hour; the client remembers it and, when a later call on this
   * library is refused for want of it, unlocks again and resends that call once.
   */
  async unlockLibrary(repoId: string, password: string): Promise<void> {
    await this.http.done({ op: 'unlock library', method: 'POST', url: repoPath(repoId), form: { password }, retry: 'idempotent' });
    this.libraryPasswords.set(repoId, password);
  }

  async libraryHistory(repoId: string): Promise<LibraryHistory> {
    const op = 'library history';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'history/'), retry: 'read' });
    const o = expectObject<LibraryHistory>(op, r.value, 'commits');
    expectArray(op, o.commits);
    o.page_next = !!o.page_next;
    return o;
  }

  async libraryHistoryV21(repoId: string, opts: { page?: number; perPage?: number } = {}): Promise<LibraryHistoryPage> {
    const op = 'library history (v2.1)';
    const r = await this.http.json({
      op,
      method: 'GET',
      repo: repoId, url: `/api/v2.1/repos/${encodeURIComponent(repoId)}/history/`,
      query: { page: opts.page, per_page: opts.perPage },
      retry: 'read',
    });
    const o = expectObject<LibraryHistoryPage>(op, r.value, 'data');
    expectArray(op, o.data);
    o.more = !!o.more;
    return o;
  }

  /** One page of the trash; pass the previous page's `scan_stat` to continue. */
  async libraryTrash(repoId: string, opts: { path?: string; perPage?: number; scanStat?: string | null } = {}): Promise<TrashPage> {
    const op = 'library trash';
    const r = await this.http.json({
      op,
      method: 'GET',
      repo: repoId, url: `/api/v2.1/repos/${encodeURIComponent(repoId)}/trash/`,
      query: { path: opts.path, per_page: opts.perPage, scan_stat: opts.scanStat ?? undefined },
      retry: 'read',
    });
    const o = expectObject<TrashPage>(op, r.value, 'data');
    expectArray(op, o.data);
    o.more = !!o.more;
    o.scan_stat = o.scan_stat ?? null;
    return o;
  }

  // ---- folders ----

  async listDir(repoId: string, path: string, opts: { oid?: string; type?: 'f' | 'd'; recursive?: boolean } = {}): Promise<DirListing> {
    const op = 'list folder';
    const r = await this.http.json({
      op,
      method: 'GET',
      repo: repoId, url: repoPath(repoId, 'dir/'),
      query: { p: q(path), oid: opts.oid, t: opts.type, recursive: opts.recursive ? 1 : undefined },
      retry: 'read',
    });
    const oid = header(r.headers, 'oid');
    if (r.value === 'uptodate') return { uptodate: true, oid: opts.oid ?? oid ?? '' };
    const raw = expectArray<Record<string, unknown>>(op, r.value);
    const entries: DirEntry[] = raw.map((e) => {
      if (!e || typeof e !== 'object' || typeof e.name !== 'string' || (e.type !== 'file' && e.type !== 'dir')) {
        throw protocolError(op, `bad folder entry ${JSON.stringify(e)?.slice(0, 200)}`);
      }
      const out = { ...e, mtime: typeof e.mtime === 'number' ? e.mtime : Number(e.mtime ?? 0) || 0 } as DirEntry;
      if (typeof e.parent_dir === 'string') out.parent_dir = normalizeDir(e.parent_dir);
      return out;
    });
    return { uptodate: false, oid, entries };
  }

  /** The entries of a folder, fresh (for the checks after a lost answer). */
  private async entriesOf(repoId: string, dir: string): Promise<DirEntry[]> {
    const l = await this.listDir(repoId, dir);
    return l.uptodate ? [] : l.entries;
  }

  /** Whether folder `dir` holds an entry `name` of `type` (`absent`: holds none). */
  private async holds(repoId: string, dir: string, name: string, type: 'file' | 'dir'): Promise<boolean> {
    return (await this.entriesOf(repoId, dir)).some((e) => e.name === name && e.type === type);
  }

  /**
   * POST .../dir/?p= operation=mkdir. Without createParents an existing name
   * is auto-renamed by the server, so after a lost answer the folder is
   * looked for before the request is sent again (found: done).
   */
  async mkdir(repoId: string, path: string, opts: { createParents?: boolean } = {}): Promise<void> {
    const [dir, name] = splitLast(path);
    await this.http.done({
      op: 'mkdir',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'dir/'),
      query: { p: q(path) },
      form: { operation: 'mkdir', create_parents: opts.createParents ? 'true' : undefined },
      retry: opts.createParents ? 'idempotent' : 'checked',
      check: () => this.holds(repoId, dir, name, 'dir'),
    });
  }

  /** After a lost answer of a rename: done when the old name is gone and the new one is there. */
  private renamed(repoId: string, path: string, newName: string, type: 'file' | 'dir'): () => Promise<boolean> {
    const [dir, name] = splitLast(path);
    return async () => {
      const entries = await this.entriesOf(repoId, dir);
      return !entries.some((e) => e.name === name && e.type === type) && entries.some((e) => e.name === newName && e.type === type);
    };
  }

  async renameDir(repoId: string, path: string, newName: string): Promise<void> {
    await this.http.done({
      op: 'rename folder',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'dir/'),
      query: { p: q(path) },
      form: { operation: 'rename', newname: newName },
      retry: 'checked',
      check: this.renamed(repoId, path, newName, 'dir'),
      accept: [301],
    });
  }

  async deleteDir(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'delete folder', method: 'DELETE', repo: repoId, url: repoPath(repoId, 'dir/'), query: { p: q(path) }, retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  // ---- files ----

  async fileDetail(repoId: string, path: string): Promise<FileDetail> {
    const op = 'file detail';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'file/detail/'), query: { p: q(path) }, retry: 'read' });
    return expectObject<FileDetail>(op, r.value, 'id');
  }

  /** A download URL; with reuse it serves many requests for about an hour, without it only one. */
  async downloadLink(repoId: string, path: string, opts: { reuse?: boolean } = {}): Promise<DownloadLink> {
    const op = 'download link';
    const r = await this.http.json({
      op,
      method: 'GET',
      repo: repoId, url: repoPath(repoId, 'file/'),
      query: { p: q(path), reuse: opts.reuse ? 1 : undefined },
      retry: 'read',
    });
    return { url: expectString(op, r.value), oid: header(r.headers, 'oid') };
  }

  /**
   * SeafileApi's streaming GET: over a bare socket, straight into the sink's
   * buffers (raw-get.ts); a socket silent for `idleMs` (default: the call
   * timeout) ends the stream with a timeout error. Throws StreamUnsupported for what it cannot read
   * (https) and when the `rawStreams` option is off.
   */
  streamGet(url: string, start: number, sink: StreamSink, opts: { idleMs?: number } = {}): StreamControl {
    if (!this.rawStreams) throw new StreamUnsupported('raw streams are off');
    return rawGet(url, start, sink, opts.idleMs ?? this.timeoutMs);
  }

  /** how long a call may wait for an answer (the mount's --timeout); also a stream's idle limit */
  get timeoutMs(): number {
    return this.http.opts.timeoutMs;
  }

  /** GET of a download URL with an optional single range; the body streams. */
  async download(url: string, range?: { start: number; end?: number }): Promise<RangeDownload> {
    const op = 'download';
    const headers: Record<string, string> = {};
    if (range) headers.range = `bytes=${range.start}-${range.end ?? ''}`;
    const res = await this.http.send({
      op,
      method: 'GET',
      url,
      headers: { ...headers, accept: '*/*' },
      retry: 'read',
      ctx: 'download',
      transfer: 'download',
      accept: [416],
    });
    const etag = header(res.headers, 'etag')?.replace(/^W\//, '').replace(/^"(.*)"$/, '$1') ?? null;
    const contentRange = header(res.headers, 'content-range');
    if (res.status === 416) {
      await res.body.dump().catch(() => undefined);
      const total = /\/(\d+)\s*$/.exec(contentRange ?? '');
      return { status: 416, start: range?.start ?? 0, totalSize: total ? Number(total[1]) : null, etag, body: Readable.from([]) };
    }
    let start = 0;
    let totalSize: number | null = null;
    if (res.status === 206) {
      const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(contentRange ?? '');
      if (!m) {
        res.body.destroy();
        throw protocolError(op, `206 without a usable Content-Range: ${contentRange}`, 206);
      }
      start = Number(m[1]);
      totalSize = m[3] === '*' ? null : Number(m[3]);
    } else {
      // 200: the whole file, whatever was asked (encrypted libraries ignore Range)
      const len = header(res.headers, 'content-length');
      totalSize = len !== null && /^\d+$/.test(len) ? Number(len) : null;
    }
    return { status: res.status, start, totalSize, etag, body: wrapBody(res.body, op) };
  }

  /** POST .../file/?p= operation=create (201); a clash is auto-renamed by the server, so a lost answer is checked before a resend. */
  async createFile(repoId: string, path: string): Promise<void> {
    const [dir, name] = splitLast(path);
    await this.http.done({
      op: 'create file',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'file/'),
      query: { p: q(path) },
      form: { operation: 'create' },
      retry: 'checked',
      check: () => this.holds(repoId, dir, name, 'file'),
    });
  }

  /** 301 is success and is not followed; an existing target name is auto-renamed by the server. */
  async renameFile(repoId: string, path: string, newName: string): Promise<void> {
    await this.http.done({
      op: 'rename file',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'file/'),
      query: { p: q(path) },
      form: { operation: 'rename', newname: newName },
      retry: 'checked',
      check: this.renamed(repoId, path, newName, 'file'),
      accept: [301],
    });
  }

  async moveFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    await this.http.done({
      op: 'move file',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'file/'),
      query: { p: q(path) },
      form: { operation: 'move', dst_repo: dstRepo, dst_dir: q(dstDir) },
      retry: 'checked',
      // done when the file left its folder and is in the target one
      check: async () => {
        const [dir, name] = splitLast(path);
        const [src, dst] = await Promise.all([this.holds(repoId, dir, name, 'file'), this.holds(dstRepo, dstDir, name, 'file')]);
        return !src && dst;
      },
      accept: [301],
    });
  }

  async copyFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    await this.http.done({
      op: 'copy file',
      method: 'POST',
      repo: repoId, url: repoPath(repoId, 'file/'),
      query: { p: q(path) },
      form: { operation: 'copy', dst_repo: dstRepo, dst_dir: q(dstDir) },
      retry: 'write',
      accept: [301],
    });
  }

  /** Real servers answer success for a missing file too. */
  async deleteFile(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'delete file', method: 'DELETE', repo: repoId, url: repoPath(repoId, 'file/'), query: { p: q(path) }, retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  async lockFile(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'lock file', method: 'PUT', repo: repoId, url: repoPath(repoId, 'file/'), form: { p: q(path), operation: 'lock' }, retry: 'write' });
  }

  async unlockFile(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'unlock file', method: 'PUT', repo: repoId, url: repoPath(repoId, 'file/'), form: { p: q(path), operation: 'unlock' }, retry: 'write' });
  }

  /** PUT .../file/revert/: the file's content at `commitId` becomes current again. */
  async revertFile(repoId: string, path: string, commitId: string): Promise<void> {
    await this.http.done({ op: 'revert file', method: 'PUT', repo: repoId, url: repoPath(repoId, 'file/revert/'), form: { p: q(path), commit_id: commitId }, retry: 'write' });
  }

  async fileHistory(repoId: string, path: string): Promise<CommitRecord[]> {
    const op = 'file history';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'file/history/'), query: { p: q(path) }, retry: 'read' });
    const o = expectObject<{ commits: unknown }>(op, r.value, 'commits');
    return expectArray<CommitRecord>(op, o.commits);
  }

  /** A download URL of the file as it was at `commitId`. */
  async fileRevisionLink(repoId: string, path: string, commitId: string): Promise<string> {
    const op = 'file revision link';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'file/revision/'), query: { p: q(path), commit_id: commitId }, retry: 'read' });
    return expectString(op, r.value);
  }

  // ---- several files at once ----

  private async fileops(kind: 'copy' | 'move' | 'delete', repoId: string, srcDir: string, names: string[], dst?: { repo: string; dir: string }): Promise<void> {
    await this.http.done({
      op: `batch ${kind}`,
      method: 'POST',
      repo: repoId, url: repoPath(repoId, `fileops/${kind}/`),
      query: { p: q(srcDir) },
      form: { p: q(srcDir), file_names: names.join(':'), dst_repo: dst?.repo, dst_dir: dst ? q(dst.dir) : undefined },
      retry: kind === 'delete' ? 'idempotent' : 'write',
      accept: [301],
    });
  }

  batchMove(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    return this.fileops('move', repoId, srcDir, names, { repo: dstRepo, dir: dstDir });
  }

  batchCopy(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    return this.fileops('copy', repoId, srcDir, names, { repo: dstRepo, dir: dstDir });
  }

  batchDelete(repoId: string, srcDir: string, names: string[]): Promise<void> {
    return this.fileops('delete', repoId, srcDir, names);
  }

  // ---- uploads ----

  /** An upload URL for folder `dir` (reusable for about an hour). Over quota: `quota`. */
  async uploadLink(repoId: string, dir: string): Promise<string> {
    const op = 'upload link';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'upload-link/'), query: { p: q(dir) }, retry: 'read', ctx: 'transfer-link' });
    return expectString(op, r.value);
  }

  async updateLink(repoId: string, dir: string): Promise<string> {
    const op = 'update link';
    const r = await this.http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'update-link/'), query: { p: q(dir) }, retry: 'read', ctx: 'transfer-link' });
    return expectString(op, r.value);
  }

  /**
   * Streams `localFile` to an upload link, retried by the retry policy with
   * a fresh body each time. With replace a resend is harmless; without it a
   * resend after a lost answer would make "name (1)", so the folder is looked
   * at first: a file of this name (or the server's renaming of it) with this
   * size, stored since the first attempt began, means the upload is done.
   * `repoId` enables that check; without it a lost answer is not resent.
   */
  async upload(
    link: string,
    parentDir: string,
    localFile: string,
    name: string,
    opts: { replace?: boolean; relativePath?: string; repoId?: string } = {},
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
            const found = (await this.entriesOf(repoId, normalizeDir(dir))).find(
              (e) => e.type === 'file' && sameOrAutoRenamed(name, e.name) && e.size === size && e.mtime >= startedSec,
            );
            return found ? [{ name: found.name, id: found.id, size }] : null;
          };
    const text = await this.postUploadRetried(op, link, opts.replace ? 'idempotent' : check ? 'checked' : 'write', check, async () => {
      const body = await this.localBody(op, fields, localFile, name);
      size = body.fileSize;
      return body;
    });
    return typeof text === 'string' ? parseUploadAnswer(op, text, { name, size }) : text;
  }

  /** Replaces the content of `targetFile` (a full library path) with `localFile`; returns the new file id. A resend is harmless. */
  async update(link: string, targetFile: string, localFile: string): Promise<string> {
    const op = 'update';
    const name = q(targetFile).split('/').pop() || 'file';
    const fields: [string, string][] = [
      ['target_file', q(targetFile)],
      ['filename', name],
    ];
    let size = 0;
    const text = await this.postUploadRetried(op, link, 'idempotent', undefined, async () => {
      const body = await this.localBody(op, fields, localFile, name);
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
   */
  private async postUploadRetried<T>(
    op: string,
    link: string,
    cls: RetryClass,
    check: (() => Promise<T | null>) | undefined,
    makeBody: () => Promise<NonNullable<Call['body']>>,
  ): Promise<string | T> {
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      const body = await makeBody();
      let failure: ApiError;
      try {
        return (await this.postUpload(op, link, body)).text;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        body.stream.destroy();
        failure = e;
      }
      if (failure.kind === 'quota' || failure.kind === 'timeout') throw failure;
      const delayMs = backoffDelay(attempt, failure.retryAfterMs, this.http.opts.backoff);
      const code = (failure as ApiError & { code?: string }).code;
      const next = decide(cls, { status: failure.status, code }, {
        attempt,
        maxRetries: this.http.opts.maxRetries,
        elapsedMs: waited,
        delayMs,
        budgetMs: this.http.opts.timeoutMs,
      });
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
  async postUpload(op: string, link: string, body: Call['body']): Promise<{ text: string }> {
    return this.http.text({ op, method: 'POST', url: link, query: { 'ret-json': 1 }, body, auth: true, retry: 'never', ctx: 'upload', transfer: 'upload' });
  }

  private async localBody(op: string, fields: [string, string][], localFile: string, name: string) {
    try {
      return await multipartFromFile(fields, { field: 'file', filename: name, path: localFile });
    } catch (e) {
      // a local problem, not the server's: keep the fs error code for the caller
      throw Object.assign(new Error(`${op}: cannot read ${localFile}: ${(e as Error).message}`, { cause: e }), {
        code: (e as { code?: string }).code,
      });
    }
  }

  // ---- share links and upload links (V2.1) ----

  async createShareLink(repoId: string, path: string, opts: { password?: string; expireDays?: number } = {}): Promise<ShareLink> {
    const op = 'create share link';
    const r = await this.http.json({
      op,
      method: 'POST',
      url: '/api/v2.1/share-links/',
      form: { repo_id: repoId, path: q(path), password: opts.password, expire_days: opts.expireDays },
      retry: 'write',
    });
    return expectObject<ShareLink>(op, r.value, 'token');
  }

  async listShareLinks(opts: { repoId?: string; path?: string } = {}): Promise<ShareLink[]> {
    const op = 'list share links';
    const r = await this.http.json({ op, method: 'GET', url: '/api/v2.1/share-links/', query: { repo_id: opts.repoId, path: opts.path }, retry: 'read' });
    return expectArray<ShareLink>(op, r.value);
  }

  async deleteShareLink(token: string): Promise<void> {
    await this.http.done({ op: 'delete share link', method: 'DELETE', url: `/api/v2.1/share-links/${encodeURIComponent(token)}/`, retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  /** A public upload link (V2.1 upload-links), not to be confused with uploadLink(). */
  async createPublicUploadLink(repoId: string, path: string, opts: { password?: string } = {}): Promise<UploadLinkShare> {
    const op = 'create upload link share';
    const r = await this.http.json({
      op,
      method: 'POST',
      url: '/api/v2.1/upload-links/',
      form: { repo_id: repoId, path: q(path), password: opts.password },
      retry: 'write',
    });
    return expectObject<UploadLinkShare>(op, r.value, 'token');
  }

  async listPublicUploadLinks(): Promise<UploadLinkShare[]> {
    const op = 'list upload link shares';
    const r = await this.http.json({ op, method: 'GET', url: '/api/v2.1/upload-links/', retry: 'read' });
    return expectArray<UploadLinkShare>(op, r.value);
  }

  async deletePublicUploadLink(token: string): Promise<void> {
    await this.http.done({ op: 'delete upload link share', method: 'DELETE', url: `/api/v2.1/upload-links/${encodeURIComponent(token)}/`, retry: 'idempotent', retriedNotFoundIsSuccess: true });
  }

  // ---- starred files and search ----

  async listStarred(): Promise<StarredFile[]> {
    const op = 'list starred files';
    const r = await this.http.json({ op, method: 'GET', url: '/api2/starredfiles/', retry: 'read' });
    return expectArray<StarredFile>(op, r.value);
  }

  async starFile(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'star file', method: 'POST', url: '/api2/starredfiles/', form: { repo_id: repoId, p: q(path) }, retry: 'idempotent' });
  }

  async unstarFile(repoId: string, path: string): Promise<void> {
    await this.http.done({ op: 'unstar file', method: 'DELETE', url: '/api2/starredfiles/', query: { repo_id: repoId, p: q(path) }, retry: 'idempotent' });
  }

  async search(query: string, opts: { perPage?: number } = {}): Promise<SearchResult> {
    const op = 'search';
    const r = await this.http.json({ op, method: 'GET', url: '/api2/search/', query: { q: query, per_page: opts.perPage }, retry: 'read' });
    const o = expectObject<SearchResult>(op, r.value, 'results');
    expectArray(op, o.results);
    return o;
  }
}

/**
 * The response body with its failures (timeouts, resets) turned into
 * ApiError; destroying it destroys the connection's body at once.
 */
class DownloadBody extends Readable {
  constructor(
    private readonly src: Readable,
    op: string,
  ) {
    super({ highWaterMark: 256 * 1024 });
    src.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) src.pause();
    });
    src.on('end', () => this.push(null));
    src.on('error', (e) => this.destroy(transportError(e, op)));
  }

  override _read(): void {
    this.src.resume();
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    if (!this.src.destroyed) this.src.destroy();
    cb(err);
  }
}

function wrapBody(body: Readable, op: string): Readable {
  return new DownloadBody(body, op);
}
