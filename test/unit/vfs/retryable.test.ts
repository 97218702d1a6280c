// The read path's retry rule (src/vfs/errors.ts retryable): which failures
// another attempt of the same ranged GET may get past.
import { describe, expect, it } from 'vitest';
import { ApiError, type ApiErrorKind } from '../../../src/client/errors.js';
import { retryable, VfsError } from '../../../src/vfs/errors.js';

const api = (kind: ApiErrorKind, status: number) => new ApiError({ kind, status, operation: 'download' });

const rows: [string, unknown, boolean][] = [
  ['a connection reset', api('network', 0), true],
  ['a stalled body (timeout)', api('timeout', 0), true],
  ['a 500 of the file server', api('server', 500), true],
  ['a 502 from a proxy', api('server', 502), true],
  ['a body that ended short (EIO)', new VfsError('EIO', 'short download'), true],
  ['a spent link (403)', api('forbidden', 403), false],
  ['an expired token (401)', api('unauthorized', 401), false],
  ['a file gone (404)', api('not_found', 404), false],
  ['a locked encrypted library (440)', api('password_required', 440), false],
  ['a range past the end (416)', api('bad_request', 416), false],
  ['throttling after the client used its own retries (429)', api('throttled', 429), false],
  ['an errno other than EIO', new VfsError('ENOENT'), false],
  ['an error of unknown origin', new Error('bug'), false],
];

describe('retryable', () => {
  for (const [what, e, want] of rows) {
    it(`${what}: ${want ? 'retried' : 'not retried'}`, () => {
      expect(retryable(e)).toBe(want);
    });
  }
});
