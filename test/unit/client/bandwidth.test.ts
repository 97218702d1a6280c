import { afterEach, describe, expect, it, vi } from 'vitest';
import { Bandwidth, throttled, TokenBucket } from '../../../src/client/bandwidth.js';

/** a clock the test moves by hand (ms) */
function fakeClock() {
  let t = 1000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('TokenBucket', () => {
  afterEach(() => vi.useRealTimers());

  it('unlimited: never makes anyone wait, whatever is spent', () => {
    const c = fakeClock();
    const b = new TokenBucket(null, c.now);
    b.spend(1e12);
    expect(b.delayMs()).toBe(0);
    expect(b.ready()).toBeNull();
  });

  it('lets a burst of a tenth of a second go at once, then keeps spending to the rate', () => {
    const c = fakeClock();
    const b = new TokenBucket(1000, c.now); // 1000 B/s: a burst of 100 B
    b.spend(100);
    expect(b.delayMs()).toBe(0);
    b.spend(500); // 500 B of debt: half a second
    expect(b.delayMs()).toBe(500);
    c.advance(200);
    expect(b.delayMs()).toBe(300);
    c.advance(300);
    expect(b.delayMs()).toBe(0);
    // idle for a minute: it saves no more than the burst
    c.advance(60_000);
    b.spend(100 + 1000);
    expect(b.delayMs()).toBe(1000);
  });

  it('holds the total of many spenders to the rate (the debt adds up)', () => {
    const c = fakeClock();
    const b = new TokenBucket(10_000, c.now);
    // ten transfers each send 10 KB "at once": 100 KB less the 1 KB burst take 9.9 s at 10 KB/s
    for (let i = 0; i < 10; i++) b.spend(10_000);
    expect(b.delayMs()).toBe(9900);
  });

  it('a new rate applies at once: no debt carried over, off frees everyone', () => {
    const c = fakeClock();
    const b = new TokenBucket(1000, c.now);
    b.spend(10_100);
    expect(b.delayMs()).toBe(10_000);
    b.setRate(1_000_000);
    expect(b.rate).toBe(1_000_000);
    expect(b.delayMs()).toBe(0);
    b.spend(1_100_000); // 100 KB burst, 1 MB of debt: 1 s
    expect(b.delayMs()).toBe(1000);
    b.setRate(null);
    expect(b.delayMs()).toBe(0);
    expect(() => b.setRate(0)).toThrow(RangeError);
    expect(() => b.setRate(-5)).toThrow(RangeError);
  });

  it('ready() resolves once the debt is paid, and at once when the limit is lifted', async () => {
    vi.useFakeTimers();
    const b = new TokenBucket(1000, () => Date.now());
    b.spend(1100);
    let done = false;
    void b.ready()!.then(() => (done = true));
    await vi.advanceTimersByTimeAsync(900);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(150);
    expect(done).toBe(true);

    b.spend(100_000); // 100 s of debt
    let freed = false;
    void b.ready()!.then(() => (freed = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(freed).toBe(false);
    b.setRate(null);
    await vi.advanceTimersByTimeAsync(0);
    expect(freed).toBe(true);
  });

  it('throttled() passes every byte on, spending each chunk before the next may go', async () => {
    vi.useFakeTimers();
    const b = new TokenBucket(1000, () => Date.now());
    async function* src() {
      for (let i = 0; i < 3; i++) yield Buffer.alloc(600, i);
    }
    const got: Buffer[] = [];
    const started = Date.now();
    const run = (async () => {
      for await (const c of throttled(src(), b)) got.push(c);
    })();
    await vi.advanceTimersByTimeAsync(5000);
    await run;
    expect(Buffer.concat(got)).toEqual(Buffer.concat([0, 1, 2].map((i) => Buffer.alloc(600, i))));
    // the second chunk waits for the first's 500 B of debt, the third for 600 B more: 0.5 s + 0.6 s at least
    expect(got.length).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1100);
  });
});

describe('Bandwidth', () => {
  it('holds an upload and a download bucket, set and read together', () => {
    const bw = new Bandwidth({ up: 1024, down: null });
    expect(bw.limits()).toEqual({ up: 1024, down: null });
    bw.set({ up: null, down: 4096 });
    expect(bw.limits()).toEqual({ up: null, down: 4096 });
    expect(bw.up.rate).toBeNull();
    expect(bw.down.rate).toBe(4096);
  });
});
