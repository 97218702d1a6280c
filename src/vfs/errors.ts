// Filesystem errors of the vfs: an errno *name* (the FUSE adapter turns it
// into a number), plus the mapping from API and local I/O failures.
import { ApiError, type ApiErrorKind } from '../client/errors.js';

export type ErrnoName =
  | 'EPERM'
  | 'ENOENT'
  | 'EIO'
  | 'EBADF'
  | 'EAGAIN'
  | 'EACCES'
  | 'EEXIST'
  | 'EXDEV'
  | 'ENOTDIR'
  | 'EISDIR'
  | 'EINVAL'
  | 'EFBIG'
  | 'ENOSPC'
  | 'EROFS'
  | 'ENAMETOOLONG'
  | 'ENOSYS'
  | 'ENOTEMPTY'
  | 'ETIMEDOUT'
  | 'ENOTSUP'
  | 'ENODATA';

export class VfsError extends Error {
  readonly code: ErrnoName;
  constructor(code: ErrnoName, message?: string, opts?: { cause?: unknown }) {
    super(message ? `${code}: ${message}` : code, opts);
    this.name = 'VfsError';
    this.code = code;
  }
}

const BY_KIND: Record<ApiErrorKind, ErrnoName> = {
  unauthorized: 'EACCES',
  forbidden: 'EACCES',
  not_found: 'ENOENT',
  conflict: 'EEXIST',
  bad_request: 'EINVAL',
  invalid_name: 'EINVAL',
  password_required: 'EACCES',
  target_missing: 'ENOENT',
  too_large: 'EFBIG',
  quota: 'ENOSPC',
  throttled: 'EAGAIN',
  otp_required: 'EACCES',
  unsupported: 'ENOTSUP',
  server: 'EIO',
  timeout: 'ETIMEDOUT',
  network: 'EIO',
  certificate: 'EIO',
  protocol: 'EIO',
};

const LOCAL_PASSTHROUGH = new Set<string>([
  'ENOSPC',
  'EFBIG',
  'EROFS',
  'EACCES',
  'ENOENT',
  'EEXIST',
  'ENOTDIR',
  'EISDIR',
]);

/** The errno name for any failure; unknown failures are EIO. */
export function errnoOf(e: unknown): ErrnoName {
  if (e instanceof VfsError) return e.code;
  if (e instanceof ApiError) return BY_KIND[e.kind] ?? 'EIO';
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (code === 'ETIMEDOUT') return 'ETIMEDOUT';
    // a local cache-dir failure (disk full) is reported as such
    if (LOCAL_PASSTHROUGH.has(code)) return code as ErrnoName;
  }
  return 'EIO';
}

/**
 * A failure another attempt of the same request may get past: the connection
 * broke or stalled, the server failed (5xx), or a body ended short (EIO).
 * Everything else (refused, missing, over quota, bad request) would only fail
 * again. The read path retries a ranged GET on it.
 */
export function retryable(e: unknown): boolean {
  if (e instanceof ApiError) return e.kind === 'network' || e.kind === 'timeout' || e.status >= 500;
  return e instanceof VfsError && e.code === 'EIO';
}

/**
 * Write path: a failed upload that a retry cannot fix (no space, no right,
 * a name the server refuses, a locked library). The data is kept in the
 * journal and the error surfaced at close and at unmount.
 */
export function permanentUploadFailure(e: unknown): boolean {
  if (e instanceof ApiError) {
    return [
      'quota',
      'forbidden',
      'unauthorized',
      'invalid_name',
      'too_large',
      'password_required',
      'otp_required',
    ].includes(e.kind);
  }
  if (e instanceof VfsError) return e.code === 'ENOSPC' || e.code === 'EINVAL';
  return false;
}

/**
 * Whether a failed upload may still have been stored: the connection broke or
 * timed out, or the server failed after reading the body. A refusal (4xx)
 * stored nothing.
 */
export function mayHaveLanded(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  return e.kind === 'network' || e.kind === 'timeout' || e.kind === 'server' || e.kind === 'protocol';
}

export function isNotFound(e: unknown): boolean {
  return (e instanceof ApiError && e.kind === 'not_found') || (e instanceof VfsError && e.code === 'ENOENT');
}
