// How long an unmount waits for its uploads. As long as files land it waits
// (a slow server, a large copy); once the server is away (the mount is
// offline: refused, unknown host, no answer within --timeout) or every
// attempt fails, and no file has landed for `waitMs` (30 s), it gives up and
// leaves what is pending in the journal for the next mount. A second signal
// gives up at once; a cache folder removed under the mount gives up at once
// too (its journal and temp files are gone: waiting could only spin).
import { existsSync } from 'node:fs';

/** What the bound looks at, sampled every tick. */
export interface UploadProgress {
  /** files uploaded since the mount started (a count that only grows) */
  landed: number;
  /** failed upload attempts since the mount started (a count that only grows) */
  failures: number;
  /** the mount is offline (the server is unreachable) */
  offline: boolean;
}

export interface UnmountBoundOptions {
  /** how long nothing may land while the server is away (default 30 s) */
  waitMs: number;
  sample: () => UploadProgress;
  /** the mount's cache folder (journal and temp files) */
  cacheDir: string;
  tickMs?: number;
  now?: () => number;
}

/** the wait of an unmount for a server that is away: SEAFS_UNMOUNT_WAIT_MS, else 30 s */
export function unmountWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.SEAFS_UNMOUNT_WAIT_MS);
  return env.SEAFS_UNMOUNT_WAIT_MS !== undefined && Number.isFinite(v) && v >= 0 ? v : 30_000;
}

export class UnmountBound {
  /** resolves with the reason once the unmount should stop waiting */
  readonly gaveUp: Promise<string>;
  private give!: (reason: string) => void;
  private reason: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastLanded: number;
  private lastFailures: number;
  private lastProgressAt: number;
  /** the server was away (offline, or an attempt failed) since the last file landed */
  private away = false;
  private readonly now: () => number;

  constructor(private readonly o: UnmountBoundOptions) {
    this.gaveUp = new Promise((r) => (this.give = r));
    this.now = o.now ?? Date.now;
    const s = o.sample();
    this.lastLanded = s.landed;
    this.lastFailures = s.failures;
    this.lastProgressAt = this.now();
  }

  /** null while waiting; the reason once given up */
  get stopped(): string | null {
    return this.reason;
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.o.tickMs ?? 250);
    this.timer.unref();
  }

  /** stop waiting now (a second signal) */
  abort(reason: string): void {
    this.stop(reason);
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** one look: exported for tests, which drive the clock */
  tick(): void {
    if (this.reason !== null) return;
    if (!existsSync(this.o.cacheDir)) {
      this.stop(`the cache folder ${this.o.cacheDir} was removed: its journal and temp files are gone`);
      return;
    }
    const s = this.o.sample();
    const now = this.now();
    if (s.landed !== this.lastLanded) {
      this.lastLanded = s.landed;
      this.lastProgressAt = now;
      this.away = false;
    }
    if (s.offline || s.failures !== this.lastFailures) this.away = true;
    this.lastFailures = s.failures;
    const secs = Math.round(this.o.waitMs / 100) / 10;
    if (this.away && now - this.lastProgressAt >= this.o.waitMs)
      this.stop(
        s.offline
          ? `the server is unreachable and nothing was uploaded for ${secs} s`
          : `every upload failed for ${secs} s`,
      );
  }

  private stop(reason: string): void {
    if (this.reason !== null) return;
    this.reason = reason;
    this.close();
    this.give(reason);
  }
}
