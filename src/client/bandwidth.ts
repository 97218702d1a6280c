// Bandwidth limits of file content (uploads and downloads; API calls are not
// counted): one token bucket per direction, shared by every transfer of a
// client, so parallel transfers together keep to the limit. Bytes are spent
// as they go (the bucket may run into debt by one chunk) and a transfer waits
// while the bucket is in debt: a download pauses its socket (TCP then slows
// the server), an upload holds its next write. Limits can change at any time;
// waiters re-check at once.

/** bytes per second of each direction; null: no limit */
export interface RateLimits {
  up: number | null;
  down: number | null;
}

/** how much a bucket may save while idle: this many seconds of its rate */
const BURST_SECONDS = 0.1;

export class TokenBucket {
  private rateBps: number | null = null;
  /** bytes that may go now; negative: the debt of bytes already gone */
  private tokens = 0;
  private last: number;
  /** waiters to wake when the rate changes */
  private readonly wakers = new Set<() => void>();

  constructor(
    rate: number | null = null,
    /** ms, monotonic (tests inject a fake clock) */
    private readonly now: () => number = () => performance.now(),
  ) {
    this.last = this.now();
    this.setRate(rate);
  }

  /** bytes per second, or null when unlimited */
  get rate(): number | null {
    return this.rateBps;
  }

  setRate(rate: number | null): void {
    if (rate !== null && !(Number.isFinite(rate) && rate > 0)) throw new RangeError(`bad rate ${rate}`);
    this.refill();
    this.rateBps = rate;
    // a new limit starts with a full burst and no debt: the old limit's debt is not carried over
    this.tokens = rate === null ? 0 : this.burst();
    for (const wake of [...this.wakers]) wake();
  }

  /** counts `n` bytes that went (or go now) */
  spend(n: number): void {
    if (this.rateBps === null) return;
    this.refill();
    this.tokens -= n;
  }

  /** ms until the bucket is out of debt (0: bytes may go now) */
  delayMs(): number {
    if (this.rateBps === null) return 0;
    this.refill();
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.rateBps) * 1000);
  }

  /** null when bytes may go now, else a promise that resolves once they may */
  ready(): Promise<void> | null {
    if (this.delayMs() === 0) return null;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        clearTimeout(timer);
        const ms = this.delayMs();
        if (ms === 0) {
          this.wakers.delete(check);
          resolve();
        } else {
          timer = setTimeout(check, ms);
        }
      };
      this.wakers.add(check);
      check();
    });
  }

  private burst(): number {
    return this.rateBps === null ? 0 : this.rateBps * BURST_SECONDS;
  }

  private refill(): void {
    const t = this.now();
    const dt = t - this.last;
    this.last = t;
    if (this.rateBps === null || dt <= 0) return;
    this.tokens = Math.min(this.burst(), this.tokens + (dt / 1000) * this.rateBps);
  }
}

/** The two buckets of a client. */
export class Bandwidth {
  readonly up: TokenBucket;
  readonly down: TokenBucket;

  constructor(limits: RateLimits = { up: null, down: null }, now?: () => number) {
    this.up = new TokenBucket(limits.up, now);
    this.down = new TokenBucket(limits.down, now);
  }

  set(limits: RateLimits): void {
    this.up.setRate(limits.up);
    this.down.setRate(limits.down);
  }

  limits(): RateLimits {
    return { up: this.up.rate, down: this.down.rate };
  }
}

/**
 * Passes a body's chunks on as the upload bucket allows (the HTTP core's
 * streamed upload bodies). Unlimited, a chunk costs one check.
 */
export async function* throttled(src: AsyncIterable<Buffer>, bucket: TokenBucket): AsyncGenerator<Buffer> {
  for await (const chunk of src) {
    const wait = bucket.ready();
    if (wait) await wait;
    bucket.spend(chunk.length);
    yield chunk;
  }
}
