// When a failed request may be sent again, and how long to wait first: the
// one retry policy of the client (HTTP core and uploads alike).
//
// A retry is only safe when sending the request twice cannot do more than
// sending it once. The classes:
// - 'read': GET/HEAD and link requests. Retried on network errors, 5xx and 429.
// - 'idempotent': writes whose repetition is harmless (delete, unlock with a
//   password, mkdir with create_parents, star, an upload with replace, login
//   without a one-time code). Retried like reads.
// - 'checked': non-idempotent writes the server may have done although the
//   answer was lost (mkdir, create, rename, move, a new upload): a repeat
//   would make `name (1)` or fail on the moved source. After such an unsure
//   failure (reset after sending, 5xx) the caller looks first whether the
//   earlier attempt took effect; only when it did not is the request re-sent.
// - 'write': other non-idempotent writes (copy, library create, locks, a login
//   with a one-time code). Retried only when the server cannot have acted on
//   them: 429, or a failure to connect at all.
// - 'never': the caller decides (a one-shot streamed body).
//
// Every call is bounded in time: no retry starts that would begin after the
// call's budget (the client's timeout) is spent, so a server that let one
// attempt time out is not given a second full timeout to wait for.
export type RetryClass = 'read' | 'idempotent' | 'checked' | 'write' | 'never';

/** Error codes raised before a single byte of the request reached the server. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Error codes of a request that got no answer within its time. */
export const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

export function notSent(code: string | undefined): boolean {
  return code !== undefined && NOT_SENT_CODES.has(code);
}

export interface Failure {
  /** HTTP status, 0 when no answer arrived */
  status: number;
  /** low-level error code when no answer arrived (ECONNRESET, UND_ERR_HEADERS_TIMEOUT, ...) */
  code?: string;
}

function retriableStatus(status: number): boolean {
  return status >= 500 && status !== 501 && status !== 505;
}

/** The server may have done the work although the call failed: an answer lost after sending, or a 5xx. */
export function unsure(f: Failure): boolean {
  if (f.status === 0) return !notSent(f.code);
  return retriableStatus(f.status);
}

/** Whether the failure class allows another attempt at all (time and count aside). */
export function mayRetry(cls: RetryClass, f: Failure): boolean {
  if (cls === 'never') return false;
  if (f.status === 429) return true;
  if (f.status === 0 && notSent(f.code)) return true;
  if (cls === 'write') return false;
  return f.status === 0 || retriableStatus(f.status);
}

/** What to do after a failed attempt. */
export type Decision = 'retry' | 'check' | 'stop';

export interface Attempt {
  /** 0-based number of the attempt that failed */
  attempt: number;
  maxRetries: number;
  /** time the call has taken so far */
  elapsedMs: number;
  /** the wait before the next attempt */
  delayMs: number;
  /** no retry starts when elapsed + delay would pass this */
  budgetMs: number;
}

/**
 * The policy: 'retry' re-sends, 'check' asks the caller first whether the
 * failed attempt took effect (class 'checked' after an unsure failure),
 * 'stop' gives the failure to the caller.
 */
export function decide(cls: RetryClass, f: Failure, a: Attempt): Decision {
  if (a.attempt >= a.maxRetries || !mayRetry(cls, f)) return 'stop';
  if (a.elapsedMs + a.delayMs > a.budgetMs) return 'stop';
  return cls === 'checked' && unsure(f) ? 'check' : 'retry';
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return null;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const t = Date.parse(s);
  if (Number.isNaN(t)) return null;
  return Math.max(0, t - now);
}

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** upper bound on a server-requested Retry-After wait */
  maxRetryAfterMs: number;
}

/** Delay before retry number `attempt` (0-based): exponential with jitter, or the server's Retry-After. */
export function backoffDelay(
  attempt: number,
  retryAfterMs: number | null,
  o: BackoffOptions,
  rnd = Math.random,
): number {
  if (retryAfterMs !== null) return Math.min(retryAfterMs, o.maxRetryAfterMs);
  const ceiling = Math.min(o.maxMs, o.baseMs * 2 ** attempt);
  // "equal jitter": at least half the exponential step, so retries never bunch at 0
  return Math.round(ceiling / 2 + rnd() * (ceiling / 2));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
