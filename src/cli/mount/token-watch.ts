// A running mount whose token the server refuses (revoked in the web
// interface, `seafs logout`, expired). Every call would fail alike, so the
// mount says it once (log, `seafs status`) and from then on holds every call
// without sending it, failing it as unreachable: the vfs then does what it
// does offline (known folders and cached files are served, files written wait
// in the journal, nothing is lost at unmount). Meanwhile it looks every 2 s
// whether a saved account has a new token (`seafs login NAME` again) and every
// 30 s whether the server takes the token again (a proxy's passing 401); then
// it lets calls through again and says so, and the vfs's probe finds the
// server back and uploads what waited.
import { ApiError } from '../../client/errors.js';

export interface TokenHolder {
  readonly token: string | undefined;
  setToken(token: string): void;
  authPing(): Promise<void>;
  readonly http: {
    tokenRefused: ((token: string) => void) | undefined;
    hold: ((op: string) => ApiError | null) | undefined;
  };
}

export interface TokenWatchOptions {
  /** what the user does about it, e.g. "log in again: seafs login NAME" */
  hint: string;
  log: (msg: string) => void;
  /** the saved token now (a saved account), to take a new login without a remount */
  reload?: () => Promise<string | undefined>;
  /** calls go through again: retry what waited */
  onBack?: () => void;
  reloadEveryMs?: number;
  pingEveryMs?: number;
}

export class TokenWatch {
  private refusedAt: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastPing = 0;
  private checking: Promise<void> | null = null;
  /** the watch's own ping goes through the hold */
  private pinging = false;

  constructor(
    private readonly client: TokenHolder,
    private readonly o: TokenWatchOptions,
  ) {
    client.http.tokenRefused = (token) => this.refused(token);
    client.http.hold = (op) =>
      this.refusedAt === null || this.pinging
        ? null
        : new ApiError({
            kind: 'network',
            status: 0,
            operation: op,
            serverMessage: "the server refuses the mount's token",
          });
  }

  get isRefused(): boolean {
    return this.refusedAt !== null;
  }

  /** The server refused `token` (the one a call carried). */
  refused(token: string): void {
    // a late answer to a call made with a token already replaced
    if (token !== this.client.token || this.refusedAt !== null) return;
    this.refusedAt = Date.now();
    this.lastPing = Date.now();
    this.o.log(
      `the server refuses the mount's token (revoked or expired): ${this.o.hint}; ` +
        'until then the mount serves what it knows and files written wait in the journal',
    );
    this.timer = setInterval(() => void this.check(), this.o.reloadEveryMs ?? 2000);
    this.timer.unref();
  }

  /** One look: a new saved token, or the old one taken again. Resolves once done (tests wait for it). */
  check(): Promise<void> {
    this.checking ??= (async () => {
      try {
        if (this.refusedAt === null) return;
        const saved = await this.o.reload?.().catch((e: unknown) => {
          this.o.log(`cannot read the saved login again: ${(e as Error).message}`);
          return undefined;
        });
        if (saved && saved !== this.client.token) {
          this.client.setToken(saved);
          return this.back('the account was logged in again: the mount uses its new token');
        }
        if (Date.now() - this.lastPing < (this.o.pingEveryMs ?? 30_000)) return;
        this.lastPing = Date.now();
        this.pinging = true;
        const ok = await this.client.authPing().then(
          () => true,
          () => false,
        );
        this.pinging = false;
        if (ok) this.back("the server takes the mount's token again");
      } finally {
        this.pinging = false;
        this.checking = null;
      }
    })();
    return this.checking;
  }

  private back(msg: string): void {
    this.refusedAt = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.o.log(`${msg}; uploading what waited`);
    this.o.onBack?.();
  }

  /** for `seafs status`: refused since when, and what to do (null: the token is fine) */
  state(): { since: string; hint: string } | null {
    return this.refusedAt === null ? null : { since: new Date(this.refusedAt).toISOString(), hint: this.o.hint };
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
