// Passwords of the encrypted libraries this client unlocked. A server forgets
// a password a fixed time after it was given (seafile-server passwd-mgr.c:
// REAP_THRESHOLD, one hour, not extended by use) and on every restart. The
// web API then still answers (listings, links); only the file server refuses:
// a download 400 "Repo is encrypted. Please provide password to view it.", an
// upload or update 500 "Internal error" (C) or 400 (Go). So the client sends
// each password again on a timer well before the hour, and a call refused for
// want of it unlocks again (once per refusal wave: concurrent refusals share
// one unlock) and is sent once more (see relock.ts).

/** Something this keeper did on its own, for the log. */
export interface UnlockEvent {
  repo: string;
  /** 'timer': the periodic re-send; 'refused': a call was refused for want of the password */
  reason: 'timer' | 'refused';
  /** set when the unlock failed */
  error?: unknown;
}

interface Held {
  password: string;
  /** when the last unlock with it succeeded (ms) */
  at: number;
  timer?: NodeJS.Timeout;
  /** the unlock in flight, which later refusals join */
  pending?: Promise<boolean>;
}

/** The default re-send interval: well before the server's hour. */
export const UNLOCK_REFRESH_MS = 45 * 60_000;

/** After a failed timed re-send, the next try comes this soon (or at the interval, if shorter). */
const RETRY_FAILED_MS = 60_000;

export class LibraryPasswords {
  private readonly held = new Map<string, Held>();
  private closed = false;

  constructor(
    private readonly send: (repo: string, password: string) => Promise<void>,
    private readonly refreshMs = UNLOCK_REFRESH_MS,
    private readonly onEvent?: (ev: UnlockEvent) => void,
  ) {}

  /** After a successful unlock with `password`: keep it, and re-send it `refreshMs` from now. */
  remember(repo: string, password: string): void {
    if (this.closed) return;
    const old = this.held.get(repo);
    if (old?.timer) clearTimeout(old.timer);
    const h: Held = { password, at: Date.now() };
    this.held.set(repo, h);
    this.arm(repo, h, this.refreshMs);
  }

  forget(repo: string): void {
    const h = this.held.get(repo);
    if (h?.timer) clearTimeout(h.timer);
    this.held.delete(repo);
  }

  holds(repo: string): boolean {
    return this.held.has(repo);
  }

  /**
   * A call on `repo` sent at `since` (ms) was refused for want of the
   * password: true once the library is unlocked again (at once when an
   * unlock succeeded after that call was sent), false when no password is
   * held or the unlock failed.
   */
  again(repo: string, since: number): Promise<boolean> {
    const h = this.held.get(repo);
    if (!h) return Promise.resolve(false);
    if (h.at > since) return Promise.resolve(true);
    return this.resend(repo, h, 'refused');
  }

  /** Stops every timer (the client is closing). */
  close(): void {
    this.closed = true;
    for (const h of this.held.values()) if (h.timer) clearTimeout(h.timer);
    this.held.clear();
  }

  private resend(repo: string, h: Held, reason: UnlockEvent['reason']): Promise<boolean> {
    h.pending ??= this.send(repo, h.password).then(
      () => {
        // still the password held (not forgotten or replaced meanwhile): the clock starts again
        if (this.held.get(repo) === h) this.remember(repo, h.password);
        this.onEvent?.({ repo, reason });
        return true;
      },
      (error: unknown) => {
        h.pending = undefined;
        if (this.held.get(repo) === h) this.arm(repo, h, Math.min(this.refreshMs, RETRY_FAILED_MS));
        this.onEvent?.({ repo, reason, error });
        return false;
      },
    );
    return h.pending;
  }

  private arm(repo: string, h: Held, ms: number): void {
    if (this.closed) return;
    if (h.timer) clearTimeout(h.timer);
    h.timer = setTimeout(() => void this.resend(repo, h, 'timer'), ms);
    h.timer.unref();
  }
}
