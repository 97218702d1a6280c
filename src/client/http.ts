// The HTTP layer under SeafileClient: one undici Agent (keep-alive pools per
// origin, since upload and download links may name another host), timeouts
// on every request, the retry loop, and the conversion of every failure into
// an ApiError.
import type { Dispatcher } from 'undici';
import { Agent } from './undici-agent.js';
import { Readable } from 'node:stream';
import { Bandwidth, throttled } from './bandwidth.js';
import { ApiError, type ApiErrorKind } from './errors.js';
import { errorMessageOf } from './error-body.js';
import { kindFor, type CallContext } from './status-map.js';
import { TlsFileError, TlsTrust } from './tls.js';
import { tlsProblem } from './tls-errors.js';
import { tlsConnector } from './tls-connect.js';
import {
  backoffDelay,
  decide,
  parseRetryAfter,
  sleep,
  TIMEOUT_CODES,
  type BackoffOptions,
  type RetryClass,
} from './retry.js';

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
export type Query = Record<string, string | number | boolean | undefined | null>;
export type Form = Record<string, string | number | boolean | string[] | undefined | null>;

export interface HttpOptions {
  baseUrl: string;
  token?: string;
  /** headers and body timeout of API calls (ms); also each call's retry budget */
  timeoutMs: number;
  /** idle timeout of upload and download bodies, and the wait for an upload's answer (ms) */
  transferTimeoutMs: number;
  maxRetries: number;
  connections: number;
  userAgent: string;
  backoff: BackoffOptions;
  /** whom https connections trust and the client certificate they show (default: Node's and the system's CAs) */
  tls?: TlsTrust;
  /** the limits of uploads and downloads of file content (default: none; bandwidth.ts) */
  bandwidth?: Bandwidth;
  /** told of every attempt: the operation, its method, the HTTP status (or the failure's kind) and its time (no URL: links hold tokens) */
  onAttempt?: (op: string, method: string, outcome: number | string, ms: number) => void;
}

export interface Call {
  op: string;
  method: Method;
  /** a path under the base URL ('/api2/...') or an absolute URL (links) */
  url: string;
  query?: Query;
  form?: Form;
  /** a JSON body (the v2.1 batch endpoints) */
  json?: unknown;
  /** a one-shot body (uploads); `retry` must then be 'never' */
  body?: { stream: Readable; length: number; contentType: string };
  headers?: Record<string, string>;
  /**
   * send the API token (default: for base-URL paths only; never to a link's absolute URL: upload and
   * download links carry their own access token, and the fileserver behind them ignores the header)
   */
  auth?: boolean;
  retry: RetryClass;
  ctx?: CallContext;
  /** statuses that count as success besides 2xx (the 301 of rename and move) */
  accept?: number[];
  /**
   * a transfer: 'download' waits timeoutMs for headers, then transferTimeoutMs
   * between body chunks; 'upload' allows transferTimeoutMs between chunks sent
   * and for the answer (the server may commit a large file first)
   */
  transfer?: 'download' | 'upload';
  /** the library the call is about: a `password_required` refusal re-unlocks it once */
  repo?: string;
  /** a retry that gets 404 means an earlier attempt already did it (idempotent deletes) */
  retriedNotFoundIsSuccess?: boolean;
  /**
   * retry class 'checked': whether the server did the work of an attempt
   * whose answer was lost; true ends the call as done, false re-sends it
   */
  check?: () => Promise<boolean>;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
}

/** What send() answers when a retried idempotent call finds its work already done. */
const ALREADY_DONE = Symbol('already done');

const MAX_ERROR_BODY = 64 * 1024;

export function header(h: RawResponse['headers'], name: string): string | null {
  const v = h[name.toLowerCase()];
  if (v === undefined) return null;
  return Array.isArray(v) ? (v[0] ?? null) : v;
}

/** The code of a low-level failure, looking through `cause` chains. */
function lowCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 4 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET' && code !== 'UND_ERR_ABORTED') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  const top = (e as { code?: unknown } | null)?.code;
  return typeof top === 'string' ? top : undefined;
}

/**
 * Any thrown thing from undici or the body stream as an ApiError (timeout,
 * network, or a failed TLS handshake, whose message says why in words: `host`
 * names the server in it).
 */
export function transportError(e: unknown, op: string, host?: string): ApiError {
  if (e instanceof ApiError) return e;
  let code = lowCode(e);
  // the whole-exchange deadline (AbortSignal.timeout) rejects with a TimeoutError
  if ((e as { name?: unknown } | null)?.name === 'TimeoutError') code = 'ETIMEDOUT';
  const problem = e instanceof TlsFileError ? e.message : tlsProblem(code, host ?? 'the server');
  if (problem) {
    const err = new ApiError({ kind: 'certificate', status: 0, operation: op, serverMessage: problem, cause: e });
    (err as ApiError & { code?: string }).code = code;
    return err;
  }
  const kind: ApiErrorKind = code && TIMEOUT_CODES.has(code) ? 'timeout' : 'network';
  const msg = e instanceof Error ? e.message : String(e);
  const err = new ApiError({ kind, status: 0, operation: op, serverMessage: code ? `${code}: ${msg}` : msg, cause: e });
  (err as ApiError & { code?: string }).code = code;
  return err;
}

function encodeQuery(q: Query | undefined): string {
  if (!q) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === null) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

function encodeForm(f: Form): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const x of v) p.append(k, x);
    else p.append(k, String(v));
  }
  return p.toString();
}

export class HttpCore {
  readonly agent: Agent;
  /** the TLS settings of every https connection, the client's other sockets (stream uploads) included */
  readonly tls: TlsTrust;
  readonly base: URL;
  /** the bandwidth limits every transfer of this client shares (bandwidth.ts) */
  readonly bandwidth: Bandwidth;
  token: string | undefined;
  /**
   * re-sends a remembered library password after a refusal of a call sent at
   * `since` (ms); true when the library is unlocked again
   */
  relock: ((repo: string, since: number) => Promise<boolean>) | undefined;
  /** told when the server refused the API token a call carried (revoked or expired), with that token */
  tokenRefused: ((token: string) => void) | undefined;
  /** asked before each call: an error fails it at once without a request (a mount whose token is refused) */
  hold: ((op: string) => ApiError | null) | undefined;

  constructor(readonly opts: HttpOptions) {
    this.tls = opts.tls ?? new TlsTrust();
    this.bandwidth = opts.bandwidth ?? new Bandwidth();
    this.base = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : `${opts.baseUrl}/`);
    this.token = opts.token;
    this.agent = new Agent({
      connections: opts.connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 10 * 60_000,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: tlsConnector(Math.min(opts.timeoutMs, 30_000), this.tls),
    });
  }

  /** An absolute URL for a path under the base URL (the base may carry a path prefix). */
  resolve(pathOrUrl: string): URL {
    if (isAbsolute(pathOrUrl)) return new URL(pathOrUrl);
    return new URL(pathOrUrl.replace(/^\//, ''), this.base);
  }

  /**
   * Sends a call, retrying as its class allows, and returns the response of
   * an accepted status with its body unread. Any other outcome throws ApiError.
   */
  async send(call: Call): Promise<RawResponse> {
    const r = await this.sendOrDone(call);
    if (r === ALREADY_DONE) throw new Error(`${call.op}: retriedNotFoundIsSuccess and check are only for done()`);
    return r;
  }

  private async sendOrDone(call: Call): Promise<RawResponse | typeof ALREADY_DONE> {
    if (call.body && call.retry !== 'never') throw new Error(`${call.op}: a streamed body cannot be retried`);
    const held = this.hold?.(call.op);
    if (held) throw held;
    const url = this.resolve(call.url);
    const extra = encodeQuery(call.query);
    const path = url.pathname + (url.search ? url.search + (extra ? `&${extra.slice(1)}` : '') : extra);
    const headers: Record<string, string> = {
      'user-agent': this.opts.userAgent,
      accept: 'application/json',
      ...call.headers,
    };
    const auth = call.auth ?? !isAbsolute(call.url);
    if (auth && this.token) headers.authorization = `Token ${this.token}`;
    let body: string | Readable | undefined;
    if (call.form) {
      body = encodeForm(call.form);
      headers['content-type'] = 'application/x-www-form-urlencoded';
    } else if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['content-type'] = 'application/json';
    } else if (call.body) {
      // an upload's body goes as the upload limit allows
      body =
        call.transfer === 'upload'
          ? Readable.from(throttled(call.body.stream, this.bandwidth.up), { objectMode: false })
          : call.body.stream;
      headers['content-type'] = call.body.contentType;
      headers['content-length'] = String(call.body.length);
    }
    const headersTimeout = call.transfer === 'upload' ? this.opts.transferTimeoutMs : this.opts.timeoutMs;
    const bodyTimeout = call.transfer ? this.opts.transferTimeoutMs : this.opts.timeoutMs;
    let reunlocked = false;
    const accept = call.accept ?? [];
    const started = Date.now();

    for (let attempt = 0; ; attempt++) {
      let failure: ApiError;
      let code: string | undefined;
      const t0 = Date.now();
      try {
        const res = await this.agent.request({
          origin: url.origin,
          path,
          method: call.method,
          headers,
          body,
          headersTimeout,
          bodyTimeout,
          // API answers are small: bound the whole exchange, not only the gaps
          // between chunks (a server dripping bytes must not hold a call forever)
          signal: call.transfer ? undefined : AbortSignal.timeout(this.opts.timeoutMs * 2),
        });
        const status = res.statusCode;
        this.opts.onAttempt?.(call.op, call.method, status, Date.now() - t0);
        if ((status >= 200 && status < 300) || accept.includes(status)) {
          return { status, headers: res.headers, body: res.body };
        }
        failure = await this.failureOf(call, status, res);
      } catch (e) {
        failure = transportError(e, call.op, url.host);
        code = (failure as ApiError & { code?: string }).code;
        this.opts.onAttempt?.(call.op, call.method, failure.kind, Date.now() - t0);
      }
      if (failure.kind === 'unauthorized' && headers.authorization) {
        this.tokenRefused?.(headers.authorization.slice(6));
        // the refusal holds the calls from now on: this one fails as they do
        const held = this.hold?.(call.op);
        if (held) throw held;
      }
      if (attempt > 0 && failure.status === 404 && call.retriedNotFoundIsSuccess) return ALREADY_DONE;
      // the server forgot an encrypted library's password (an hour after it was given, or at a
      // restart): the request was refused, not executed, so unlock again and resend once
      // (downloads too: their 400 names the password, library-passwords.ts)
      if (failure.kind === 'password_required' && call.repo && !call.body && !reunlocked && this.relock) {
        reunlocked = true;
        if (await this.relock(call.repo, t0).catch(() => false)) {
          attempt--;
          continue;
        }
      }
      // asking again cannot help
      if (failure.kind === 'quota' || failure.kind === 'otp_required' || failure.kind === 'certificate') throw failure;
      const delayMs = backoffDelay(attempt, failure.retryAfterMs, this.opts.backoff);
      const next = decide(
        call.retry,
        { status: failure.status, code },
        {
          attempt,
          maxRetries: this.opts.maxRetries,
          elapsedMs: Date.now() - started,
          delayMs,
          budgetMs: this.opts.timeoutMs,
        },
      );
      if (next === 'stop') throw failure;
      await sleep(delayMs);
      if (next === 'check') {
        if (!call.check) throw failure;
        // a check that fails itself leaves the outcome unknown: report the original failure
        const done = await call.check().catch(() => null);
        if (done === null) throw failure;
        if (done) return ALREADY_DONE;
      }
    }
  }

  /** Reads (a bounded part of) an error body and maps it. Never throws anything but the ApiError it returns. */
  private async failureOf(call: Call, status: number, res: Dispatcher.ResponseData): Promise<ApiError> {
    let text = '';
    try {
      const chunks: Buffer[] = [];
      let n = 0;
      for await (const chunk of res.body) {
        if (n < MAX_ERROR_BODY) chunks.push(chunk as Buffer);
        n += (chunk as Buffer).length;
        if (n >= MAX_ERROR_BODY) break; // leaving the loop destroys the rest
      }
      text = Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY).toString('utf8');
    } catch {
      // a body that dies half-way: the status still says what happened
    }
    const message = errorMessageOf(text);
    const otpHeader = /required/i.test(header(res.headers, 'x-seafile-otp') ?? '');
    const kind = kindFor(status, message, call.ctx ?? 'api', otpHeader);
    const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after']) : null;
    return new ApiError({ kind, status, operation: call.op, serverMessage: message, retryAfterMs });
  }

  /** Sends a call and returns its whole body as text. */
  async text(call: Call): Promise<{ status: number; headers: RawResponse['headers']; text: string }> {
    const res = await this.send(call);
    try {
      return { status: res.status, headers: res.headers, text: await res.body.text() };
    } catch (e) {
      throw transportError(e, call.op);
    }
  }

  /** Sends a call and parses its body as JSON; a body that does not parse is a `protocol` error. */
  async json<T = unknown>(call: Call): Promise<{ status: number; headers: RawResponse['headers']; value: T }> {
    const r = await this.text(call);
    try {
      return { status: r.status, headers: r.headers, value: JSON.parse(r.text) as T };
    } catch (e) {
      throw protocolError(call.op, `response is not JSON: ${r.text.slice(0, 200)}`, r.status, e);
    }
  }

  /** Sends a call whose answer carries nothing of interest (`"success"`, an empty 200, the 301 of rename). */
  async done(call: Call): Promise<number> {
    const res = await this.sendOrDone(call);
    if (res === ALREADY_DONE) return 200;
    try {
      await res.body.dump({ limit: 1 << 20 });
    } catch {
      // the status said success; a body cut short changes nothing
    }
    return res.status;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export function protocolError(op: string, message: string, status = 0, cause?: unknown): ApiError {
  return new ApiError({ kind: 'protocol', status, operation: op, serverMessage: message, cause });
}

/** an absolute URL (a link the server handed out) rather than a path under the base URL */
function isAbsolute(pathOrUrl: string): boolean {
  return /^https?:\/\//i.test(pathOrUrl);
}
