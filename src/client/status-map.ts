// From an HTTP failure to an ApiError kind. The status alone is not enough:
// 403 means "bad token" on auth endpoints and "no permission" elsewhere, 440
// means "password required" on a library but "invalid name" on the file
// server, and over-quota link requests answer 500/520 on older servers.
import type { ApiErrorKind } from './errors.js';

/** What the failing call was, as far as the mapping cares. */
export type CallContext =
  | 'api' // an ordinary web API call
  | 'auth' // auth-token, auth/ping, account info: a 403 there is about the token
  | 'transfer-link' // upload-link / update-link
  | 'upload' // a POST to an upload or update URL (the file server)
  | 'download'; // a GET of a download URL (the file server)

const TOKEN_MESSAGE =
  /invalid token|authentication credentials|not authenticated|token (is )?(missing|expired|invalid)/i;
const NAME_MESSAGE = /(name|filename).*(invalid|too long|not valid)|(invalid|bad).*(name|filename)/i;
const OTP_MESSAGE = /two[- ]factor|\botp\b/i;
const ENCRYPTED_MESSAGE = /encrypted|password/i;
const QUOTA_MESSAGE = /quota/i;
const FILE_COUNT_MESSAGE = /number of files|too many files/i;

export function kindFor(status: number, message: string, ctx: CallContext, otpRequiredHeader = false): ApiErrorKind {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      // on the file server a 403 is about the link's own token (spent, expired, wrong folder)
      if (ctx === 'upload' || ctx === 'download') return 'forbidden';
      return ctx === 'auth' || TOKEN_MESSAGE.test(message) ? 'unauthorized' : 'forbidden';
    case 400:
      if (otpRequiredHeader || OTP_MESSAGE.test(message)) return 'otp_required';
      if (NAME_MESSAGE.test(message)) return 'invalid_name';
      // bad credentials at login ("Unable to login with provided credentials.")
      if (ctx === 'auth' && /unable to log ?in|credentials|password/i.test(message)) return 'unauthorized';
      // current servers refuse content of a locked encrypted library with 400 (the spec: 440)
      if (ENCRYPTED_MESSAGE.test(message)) return 'password_required';
      return 'bad_request';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 413:
      return 'too_large';
    case 423: // locked by another user
      return 'forbidden';
    case 429:
      return 'throttled';
    case 440:
      return ctx === 'upload' ? 'invalid_name' : 'password_required';
    case 441:
      return ctx === 'upload' ? 'target_missing' : 'password_required';
    case 442:
      // before 12.0 a library holding too many files answered 442 too
      return ctx !== 'upload' && FILE_COUNT_MESSAGE.test(message) ? 'quota' : 'too_large';
    case 447: // too many files in the library (12.0+)
      return 'quota';
    case 443:
      return 'quota';
  }
  if (status >= 500) {
    if ((ctx === 'transfer-link' || ctx === 'upload') && QUOTA_MESSAGE.test(message)) return 'quota';
    return 'server';
  }
  if (status >= 400) return 'bad_request';
  return 'protocol'; // an unexpected 1xx/3xx where a success was required
}
