// Login throttling: wrong passwords (and wrong two-factor codes) are counted
// per account and per address in fixed windows; past the limit every login
// for that key is answered 429 until the window ends, right password or not.
import { HttpError } from '../http.js';

export interface LoginLimits {
  /** failures per account and window (an address may have ADDRESS_FACTOR times as many) */
  failLimit: number;
  windowMs: number;
}

const ADDRESS_FACTOR = 5;

export class LoginGuard {
  private fails = new Map<string, { start: number; count: number }>();

  constructor(private readonly limits: LoginLimits) {}

  private limitOf(key: string): number {
    return key.startsWith('ip:') ? this.limits.failLimit * ADDRESS_FACTOR : this.limits.failLimit;
  }

  private window(key: string, now: number) {
    const w = this.fails.get(key);
    if (w && now - w.start < this.limits.windowMs) return w;
    this.fails.delete(key);
    return undefined;
  }

  /** 429 when any of the keys used up its failures. */
  check(keys: string[]): void {
    const now = Date.now();
    for (const key of keys) {
      const w = this.window(key, now);
      if (w && w.count >= this.limitOf(key)) {
        const wait = Math.max(1, Math.ceil((w.start + this.limits.windowMs - now) / 1000));
        throw new HttpError(
          429,
          '',
          { detail: `Request was throttled. Expected available in ${wait} seconds.` },
          { 'Retry-After': String(wait) },
        );
      }
    }
  }

  failed(keys: string[]): void {
    const now = Date.now();
    if (this.fails.size > 100_000) this.sweep(now);
    for (const key of keys) {
      const w = this.window(key, now);
      if (w) w.count++;
      else this.fails.set(key, { start: now, count: 1 });
    }
  }

  /** A successful login clears its account's count (not its address's). */
  succeeded(accountKey: string): void {
    this.fails.delete(accountKey);
  }

  private sweep(now: number): void {
    for (const [k, w] of this.fails) if (now - w.start >= this.limits.windowMs) this.fails.delete(k);
  }
}
