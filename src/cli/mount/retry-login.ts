// `--retry-for`: at boot the network or the server may come up after the mount
// starts, so the first login is tried again with backoff for a while instead
// of giving up at the first "cannot reach the server". Anything else (a wrong
// password, an unknown library) still fails at once.
import { UserError } from '../user-error.js';

/** The server could not be reached (or answered only 5xx): worth waiting for. */
export class UnreachableError extends UserError {
  /** `answered`: something answered (a 5xx), so the mount does not start offline */
  constructor(
    message: string,
    readonly answered = false,
  ) {
    super(message);
  }
}

/** "60s", "2m", "1h", "500ms" or a bare number of seconds -> milliseconds */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*$/i.exec(text);
  if (!m) throw new UserError(`cannot read the duration "${text}" (examples: 90, 60s, 2m, 1h)`);
  const unit = (m[2] ?? 's').toLowerCase();
  const factor = unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'h' ? 3_600_000 : 60_000;
  return Math.round(Number(m[1]) * factor);
}

export interface RetryOptions {
  /** keep trying this long after the first attempt (0: one attempt) */
  forMs: number;
  log: (msg: string) => void;
  /** first wait; doubles up to maxDelayMs */
  firstDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/** Runs `attempt` until it succeeds, throws something other than UnreachableError, or the time is up. */
export async function retryUnreachable<T>(attempt: () => Promise<T>, o: RetryOptions): Promise<T> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + o.forMs;
  let delay = o.firstDelayMs ?? 1000;
  const max = o.maxDelayMs ?? 10_000;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (!(e instanceof UnreachableError)) throw e;
      const left = deadline - now();
      if (left <= 0) {
        if (o.forMs > 0)
          throw new UnreachableError(
            `${e.message} (gave up after ${n} attempts in ${Math.round(o.forMs / 1000)} s)`,
            e.answered,
          );
        throw e;
      }
      const wait = Math.min(delay, left);
      o.log(
        `${e.message}; trying again in ${(wait / 1000).toFixed(wait < 1000 ? 1 : 0)} s (${Math.ceil(left / 1000)} s of --retry-for left)`,
      );
      await sleep(wait);
      delay = Math.min(max, delay * 2);
    }
  }
}
