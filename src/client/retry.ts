// When a failed request may be sent again, and how long to wait first.
//
// A retry is only safe when sending the request twice cannot do more than
// sending it once. The classes:
// - 'read': GET/HEAD and link requests. Retried on network errors, timeouts,
//   5xx and 429.
// - 'idempotent': writes whose repetition is harmless (delete, unlock with a
//   password, mkdir with create_parents, star). Retried like reads.
// - 'write': non-idempotent writes (create, rename, move, copy, mkdir,
//   library create). Retried only when the server cannot have acted on them:
//   429, or a failure to connect at all.
// - 'never': uploads; the caller decides (their body is a one-shot stream).
export type RetryClass = 'read' | 'idempotent' | 'write' | 'never';

/** Error codes raised before a single byte of the request reached the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

export function notSent(code: string | undefined): boolean {
  return code !== undefined && NOT_SENT_CODES.has(code);
}

export interface Failure {
  /** HTTP status, 0 when no answer arrived */
  status: number;
  /** low-level error code when no answer arrived (ECONNRESET, UND_ERR_HEADERS_TIMEOUT, ...) */
  code?: string;
}

export function mayRetry(cls: RetryClass, f: Failure): boolean {
  if (cls === 'never') return false;
  if (f.status === 429) return true;
  if (f.status === 0 && notSent(f.code)) return true;
  if (cls === 'write') return false;
  if (f.status === 0) return true; // reset, timeout, socket closed: safe for reads and idempotent writes
  return f.status >= 500 && f.status !== 501 && f.status !== 505;
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
export function backoffDelay(attempt: number, retryAfterMs: number | null, o: BackoffOptions, rnd = Math.random): number {
  if (retryAfterMs !== null) return Math.min(retryAfterMs, o.maxRetryAfterMs);
  const ceiling = Math.min(o.maxMs, o.baseMs * 2 ** attempt);
  // "equal jitter": at least half the exponential step, so retries never bunch at 0
  return Math.round(ceiling / 2 + rnd() * (ceiling / 2));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
