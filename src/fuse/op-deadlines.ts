// The last-resort deadline of every FUSE operation: an operation still
// unanswered after its limit is answered ETIMEDOUT, so no caller hangs
// forever whatever the vfs does. fuse-native can do this itself (its
// `timeout` option), but it arms and clears a timer for every operation,
// even the ones answered in the same turn: an untar of 2,000 files made
// 28,000 of them. Here an operation answered at once costs a flag, and one
// that waits joins a set that a single timer sweeps once a second (a limit is
// kept to within that second).
import { errnoNumber, type Cb } from './ops.js';

export interface DeadlineOptions {
  /** ms an operation may take, by name; `default` for the rest */
  limits: Record<string, number> & { default: number };
  /** how often waiting operations are checked (ms) */
  sweepMs?: number;
  log?: (msg: string) => void;
  /** the clock (ms); tests pass their own */
  now?: () => number;
}

interface Waiting {
  name: string;
  path: unknown;
  due: number;
  answer: Cb;
}

const ETIMEDOUT = errnoNumber('ETIMEDOUT');

export class OpDeadlines {
  private readonly waiting = new Set<Waiting>();
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(private readonly opts: DeadlineOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** operations waiting for an answer */
  get pending(): number {
    return this.waiting.size;
  }

  /** The operations table with a deadline on each operation (`init` and `destroy` excepted). */
  wrapAll(ops: Record<string, Cb>): Record<string, Cb> {
    const out: Record<string, Cb> = {};
    for (const [name, fn] of Object.entries(ops))
      out[name] = name === 'init' || name === 'destroy' ? fn : this.wrap(name, fn);
    return out;
  }

  wrap(name: string, fn: Cb): Cb {
    const limit = this.opts.limits[name] ?? this.opts.limits.default;
    return (...args: unknown[]) => {
      const cb = args.pop() as Cb;
      let answered = false;
      let entry: Waiting | null = null;
      const answer: Cb = (...r) => {
        if (answered) return; // a late answer to an operation already timed out
        answered = true;
        if (entry) this.waiting.delete(entry);
        cb(...r);
      };
      fn(...args, answer);
      if (answered) return;
      entry = { name, path: args[0], due: this.now() + limit, answer };
      this.waiting.add(entry);
      this.timer ??= setInterval(() => this.sweep(), this.opts.sweepMs ?? 1000).unref();
    };
  }

  /** Answers ETIMEDOUT to every operation past its deadline; stops the timer when none waits. */
  sweep(): void {
    const t = this.now();
    for (const w of this.waiting) {
      if (w.due > t) continue;
      this.opts.log?.(`${w.name} ${String(w.path)}: no answer in time, answered ETIMEDOUT`);
      try {
        w.answer(ETIMEDOUT);
      } catch (e) {
        this.opts.log?.(`fuse ${w.name}: callback failed: ${(e as Error).message}`);
      }
    }
    if (this.waiting.size === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
