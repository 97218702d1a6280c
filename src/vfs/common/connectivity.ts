// Online or offline. When a call finds the server unreachable (connection
// refused after the client's own retries, DNS failure, no answer within the
// timeout; not a reset of a connection that reached it) the mount goes
// offline: it says so once in the log, every further API call fails at once
// instead of waiting for its timeout
// (listings it knows are then served stale by the meta cache, blocks on disk
// by the reader, writes wait in the journal), and a probe asks the server now
// and then (1 s, doubling to 30 s) until it answers. Back online, it says so
// once and the pending uploads start (each with its conflict check). A call
// made while offline asks the server first when no probe did for a second
// (waiting at most a second for it): a server that is back (a restart takes
// seconds; the probe may be 30 s away) then serves the `cat` the user waits
// for instead of an EIO, and a server still gone costs that call a refused
// connection, or a second when it hangs.
import { ApiError, StreamUnsupported } from '../../client/errors.js';
import type { SeafileApi } from '../../client/types.js';

/** Low-level codes of a connection that reached the server and then broke: the server is there. */
const REACHED_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** The connection broke after it reached the server (a reset or close mid-answer), from the error's codes. */
function lostAfterReaching(e: ApiError): boolean {
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && REACHED_CODES.has(code)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return /^connection closed/.test(e.serverMessage);
}

/**
 * A failure that says the server cannot be reached (as opposed to an answer
 * refusing the call): no connection (refused, DNS), or no answer within the
 * timeout. A connection reset or closed after it reached the server is not:
 * one lost answer (a proxy's reset, say, which uploads do not retry in the
 * client) must not take the whole mount offline; a server that went away
 * shows on the next call as a refused connection.
 */
export function unreachable(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  if (e.kind === 'timeout') return true;
  return e.kind === 'network' && !lostAfterReaching(e);
}

export interface ConnectivityOptions {
  log: (msg: string) => void;
  /** the server answered again */
  onBack?: () => void;
  probeMinMs?: number;
  probeMaxMs?: number;
  /** how often a call made offline may ask the server, and how long it waits for the answer (default 1000 ms) */
  recheckMs?: number;
}

export class Connectivity {
  private offlineSince: number | null = null;
  private lastCause = '';
  private probeTimer: NodeJS.Timeout | null = null;
  private probeDelay: number;
  private closed = false;
  private probing: Promise<boolean> | null = null;
  private lastProbeAt = 0;
  /** times the mount went offline (for status and tests) */
  outages = 0;
  onBack: (() => void) | undefined;

  constructor(
    private readonly api: SeafileApi,
    private readonly o: ConnectivityOptions,
  ) {
    this.probeDelay = o.probeMinMs ?? 1000;
    this.onBack = o.onBack;
  }

  get online(): boolean {
    return this.offlineSince === null;
  }

  /** `status`: offline since when and why (null: online) */
  state(): { offlineSince: string; cause: string } | null {
    if (this.offlineSince === null) return null;
    return { offlineSince: new Date(this.offlineSince).toISOString(), cause: this.lastCause };
  }

  /** A call failed: go offline when it says the server is unreachable. */
  noteFailure(e: unknown): void {
    if (!unreachable(e) || this.closed) return;
    this.lastCause = (e as Error).message;
    if (this.offlineSince !== null) return;
    this.offlineSince = Date.now();
    this.outages++;
    this.o.log(
      `offline: the server is unreachable (${this.lastCause}); serving what the mount knows, writes wait for the server`,
    );
    this.probeDelay = this.o.probeMinMs ?? 1000;
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.closed || this.probeTimer) return;
    this.probeTimer = setTimeout(() => void this.probe(), this.probeDelay);
    this.probeTimer.unref();
  }

  /**
   * asks the server; true when it answered (then the mount is online again).
   * `quick`: one request without the client's retries where the API offers it,
   * so a refused connection is known in milliseconds (calls made offline wait for it)
   */
  private probe(quick = false): Promise<boolean> {
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
    this.probing ??= (async () => {
      this.lastProbeAt = Date.now();
      let answered = true;
      try {
        if (quick && this.api.reachable) answered = await this.api.reachable();
        else await this.api.accountInfo();
      } catch (e) {
        // an answer of any kind (even a refusal) means the server is there
        answered = !unreachable(e);
      }
      if (!answered) {
        this.probeDelay = Math.min(this.probeDelay * 2, this.o.probeMaxMs ?? 30_000);
        return false;
      }
      this.back();
      return true;
    })().finally(() => {
      this.probing = null;
      if (this.offlineSince !== null) this.scheduleProbe();
    });
    return this.probing;
  }

  /** offline, before failing a call: is the server back? (a probe at most once a second, waited for a second) */
  private recheck(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (!this.probing && Date.now() - this.lastProbeAt < (this.o.recheckMs ?? 1000)) return Promise.resolve(false);
    const answer = this.probe(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), this.o.recheckMs ?? 1000);
      timer.unref();
      void answer.then((ok) => {
        clearTimeout(timer);
        resolve(ok);
      });
    });
  }

  private back(): void {
    if (this.offlineSince === null) return;
    const secs = ((Date.now() - this.offlineSince) / 1000).toFixed(1);
    this.offlineSince = null;
    this.o.log(`online: the server answers again (offline for ${secs} s)`);
    this.onBack?.();
  }

  /** The error a call gets at once while offline. */
  private refusal(operation: string): ApiError {
    return new ApiError({ kind: 'network', status: 0, operation, serverMessage: `offline (${this.lastCause})` });
  }

  /**
   * The API as the vfs sees it: while offline every call fails at once (the
   * error says offline); a call that finds the server unreachable takes the
   * mount offline. Capabilities stay absent when the API lacks them.
   */
  wrap(api: SeafileApi): SeafileApi {
    return new Proxy(api, {
      get: (target, prop, receiver) => {
        const v = Reflect.get(target, prop, receiver);
        if (typeof v !== 'function') return v;
        const name = String(prop);
        const call = (args: unknown[]): unknown => {
          let out: unknown;
          try {
            out = v.apply(target, args);
          } catch (e) {
            this.noteFailure(e);
            throw e;
          }
          if (out instanceof Promise)
            return out.catch((e: unknown) => {
              this.noteFailure(e);
              throw e;
            });
          return out;
        };
        return (...args: unknown[]) => {
          if (this.offlineSince === null) return call(args);
          if (name === 'streamGet') {
            // synchronous: refused, the reader turns to download(), which asks the server first
            void this.recheck();
            throw new StreamUnsupported('offline');
          }
          return this.recheck().then((back) => (back ? call(args) : Promise.reject(this.refusal(name))));
        };
      },
    });
  }

  close(): void {
    this.closed = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = null;
  }
}
