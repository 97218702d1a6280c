// The client's retry policy (src/client/retry.ts) on its own: which failures
// of which call classes are sent again, looked at first, or given up, and the
// waits in between.
import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  decide,
  mayRetry,
  parseRetryAfter,
  unsure,
  type Attempt,
  type Failure,
  type RetryClass,
} from '../../../src/client/retry.js';

const fresh: Attempt = { attempt: 0, maxRetries: 5, elapsedMs: 0, delayMs: 100, budgetMs: 30_000 };

const reset: Failure = { status: 0, code: 'ECONNRESET' };
const refused: Failure = { status: 0, code: 'ECONNREFUSED' };
const headersTimeout: Failure = { status: 0, code: 'UND_ERR_HEADERS_TIMEOUT' };
const s500: Failure = { status: 500 };
const s503: Failure = { status: 503 };
const s501: Failure = { status: 501 };
const s429: Failure = { status: 429 };
const s404: Failure = { status: 404 };
const s400: Failure = { status: 400 };

describe('the retry decision of each call class', () => {
  const table: [RetryClass, Failure, string][] = [
    ['read', reset, 'retry'],
    ['read', s500, 'retry'],
    ['read', s503, 'retry'],
    ['read', s501, 'stop'],
    ['read', { status: 520 }, 'retry'],
    ['read', { status: 403 }, 'stop'],
    ['read', s429, 'retry'],
    ['read', s404, 'stop'],
    ['read', refused, 'retry'],
    ['idempotent', reset, 'retry'],
    ['idempotent', s500, 'retry'],
    ['idempotent', s400, 'stop'],
    ['checked', reset, 'check'],
    ['checked', s500, 'check'],
    ['checked', headersTimeout, 'check'],
    ['checked', s429, 'retry'],
    ['checked', refused, 'retry'],
    ['checked', s404, 'stop'],
    ['write', reset, 'stop'],
    ['write', s500, 'stop'],
    ['write', s429, 'retry'],
    ['write', refused, 'retry'],
    ['never', s429, 'stop'],
    ['never', refused, 'stop'],
  ];
  for (const [cls, f, want] of table) {
    it(`answers ${want} for a ${cls} call that failed with ${f.status || f.code}`, () => {
      expect(decide(cls, f, fresh)).toBe(want);
    });
  }

  it('stops once the retries are spent', () => {
    expect(decide('read', s500, { ...fresh, attempt: 4 })).toBe('retry');
    expect(decide('read', s500, { ...fresh, attempt: 5 })).toBe('stop');
    expect(decide('read', s500, { ...fresh, maxRetries: 0 })).toBe('stop');
  });

  it('starts no retry that would begin after the call budget', () => {
    expect(decide('read', s500, { ...fresh, elapsedMs: 29_000, delayMs: 900 })).toBe('retry');
    expect(decide('read', s500, { ...fresh, elapsedMs: 29_000, delayMs: 1_100 })).toBe('stop');
    // a timed-out attempt has used the whole budget by itself
    expect(decide('read', headersTimeout, { ...fresh, elapsedMs: 30_000 })).toBe('stop');
    // a Retry-After longer than the budget is not waited for
    expect(decide('write', s429, { ...fresh, delayMs: 60_000 })).toBe('stop');
  });
});

describe('what counts as a request the server may have done', () => {
  it('is a lost answer after sending or a 5xx, not a refused connection or a 4xx', () => {
    expect(unsure(reset)).toBe(true);
    expect(unsure(headersTimeout)).toBe(true);
    expect(unsure(s500)).toBe(true);
    expect(unsure(refused)).toBe(false);
    expect(unsure({ status: 0, code: 'ENOTFOUND' })).toBe(false);
    expect(unsure(s429)).toBe(false);
    expect(unsure(s404)).toBe(false);
  });

  it('lets a write be sent again only when the server cannot have acted', () => {
    expect(mayRetry('write', refused)).toBe(true);
    expect(mayRetry('write', { status: 0, code: 'UND_ERR_CONNECT_TIMEOUT' })).toBe(true);
    expect(mayRetry('write', reset)).toBe(false);
    expect(mayRetry('write', { status: 502 })).toBe(false);
  });
});

describe('the waits', () => {
  const o = { baseMs: 100, maxMs: 1000, maxRetryAfterMs: 5000 };

  it('doubles each step with jitter of at most half, up to the longest step', () => {
    expect(backoffDelay(0, null, o, () => 0)).toBe(50);
    expect(backoffDelay(0, null, o, () => 1)).toBe(100);
    expect(backoffDelay(3, null, o, () => 0)).toBe(400);
    expect(backoffDelay(3, null, o, () => 1)).toBe(800);
    expect(backoffDelay(10, null, o, () => 1)).toBe(1000);
    expect(backoffDelay(10, null, o, () => 0)).toBe(500);
  });

  it("takes the server's Retry-After, capped", () => {
    expect(backoffDelay(0, 2000, o)).toBe(2000);
    expect(backoffDelay(0, 3_600_000, o)).toBe(5000);
  });

  it('reads Retry-After in seconds or as an HTTP date, and nothing else', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter(['7', '9'], now)).toBe(7000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 10:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
