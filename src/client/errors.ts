// Every failure of an API call is an ApiError: the vfs maps `kind` to an errno,
// the CLI prints `message`. `status` is 0 when no HTTP answer arrived.
export type ApiErrorKind =
  | 'unauthorized' // 401 or 403 on auth, or an invalid token
  | 'forbidden' // 403 on an operation (missing permission, read-only share)
  | 'not_found' // 404
  | 'conflict' // 409
  | 'bad_request' // 400 (invalid name, missing argument)
  | 'invalid_name' // name refused (400 "name invalid", 440 on upload)
  | 'password_required' // an encrypted library's password is missing: the file server's 400 (the spec: 440)
  | 'target_missing' // 441 on update
  | 'too_large' // 442
  | 'quota' // 443, or 500/520 on a link request over quota
  | 'throttled' // 429
  | 'otp_required' // two-factor code missing or wrong
  | 'unsupported' // the server's edition lacks the feature (file locks on Community Edition)
  | 'server' // 5xx
  | 'timeout' // request timed out
  | 'network' // connection refused/reset, DNS
  | 'certificate' // the TLS handshake failed: a certificate not trusted, expired or for another name; a client certificate refused
  | 'protocol'; // unparseable success body

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly status: number;
  readonly operation: string;
  readonly serverMessage: string;
  readonly retryAfterMs: number | null;

  constructor(opts: {
    kind: ApiErrorKind;
    status: number;
    operation: string;
    serverMessage?: string;
    retryAfterMs?: number | null;
    cause?: unknown;
  }) {
    const detail = opts.serverMessage ? `: ${opts.serverMessage}` : '';
    const st = opts.status ? ` (HTTP ${opts.status})` : '';
    super(`${opts.operation} failed${st}${detail}`, { cause: opts.cause });
    this.name = 'ApiError';
    this.kind = opts.kind;
    this.status = opts.status;
    this.operation = opts.operation;
    this.serverMessage = opts.serverMessage ?? '';
    this.retryAfterMs = opts.retryAfterMs ?? null;
  }
}

export function isApiError(e: unknown, kind?: ApiErrorKind): e is ApiError {
  return e instanceof ApiError && (kind === undefined || e.kind === kind);
}

/** A streaming upload's server answered, or the connection ended, before the body was complete. */
export class EarlyAnswer extends ApiError {}

/**
 * True when a failed streaming upload means the server (or a proxy in front)
 * does not take chunked request bodies: 411 Length Required, 501 or 505 at
 * any time; a 400 or a dropped connection before the body ended.
 */
export function refusesChunked(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  if ([411, 501, 505].includes(e.status)) return true;
  return e instanceof EarlyAnswer && (e.status === 400 || (e.status === 0 && e.kind === 'network'));
}

/**
 * A streaming GET (`SeafileApi.streamGet`) cannot read this URL or this
 * answer (https, chunked encoding, no Content-Length, switched off): nothing
 * was delivered, and the caller reads the file through `download()` instead.
 */
export class StreamUnsupported extends Error {
  constructor(message?: string) {
    super(message);
    this.name = 'StreamUnsupported';
  }
}
