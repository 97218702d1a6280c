// Changes pushed by the server's notification server. One websocket at
// ws(s)://HOST/notification (the web front's path to it), subscribed to each
// followed library with a JWT (endpoints/notifications.ts). Events become
// ServerChange calls; "jwt-expired" fetches a new token and subscribes again.
// The server pings every second: a socket silent for `deadMs` is taken for
// dead. A break (closed, dead, refused) reconnects with growing waits, and
// the first subscription after it tells `onResubscribed` (changes made
// meanwhile were not pushed). A server without a notification server (its
// ping fails) is asked again every `recheckMs`; meanwhile the mode is
// 'polling' and the mount revalidates as it would without this.
import WebSocket from 'ws';
import type { ChangeFeed, ChangeFeedHooks, ChangeMode, ServerChange } from './types.js';

export interface FeedOptions {
  /** the websocket's URL */
  url: string;
  repos: string[];
  ping: () => Promise<boolean>;
  token: (repo: string) => Promise<string>;
  /** first and longest wait before reconnecting (ms) */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** how often a server found without a notification server is asked again (ms) */
  recheckMs?: number;
  /** a socket with nothing received this long is dead (the server pings every second) */
  deadMs?: number;
  /** TLS and other options for the socket, asked at each connection */
  wsOptions?: () => WebSocket.ClientOptions;
}

export type ClientOptionsOfWs = WebSocket.ClientOptions;

const KINDS = new Set<ServerChange['kind']>(['repo-update', 'file-lock-changed', 'folder-perm-changed']);

/** the websocket URL of a server whose web API is at `baseUrl` */
export function notificationUrl(baseUrl: string): string {
  const u = new URL(baseUrl);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.pathname = `${u.pathname.replace(/\/$/, '')}/notification`;
  u.search = '';
  u.hash = '';
  return u.toString();
}

export class NotificationFeed implements ChangeFeed {
  private current: ChangeMode = 'polling';
  private closed = false;
  private ws: WebSocket | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private subscribedOnce = false;
  /** libraries whose token was renewed lately: a second jwt-expired soon after is not chased at once */
  private readonly renewedAt = new Map<string, number>();

  constructor(
    private readonly o: FeedOptions,
    private readonly hooks: ChangeFeedHooks,
  ) {
    void this.connect();
  }

  get mode(): ChangeMode {
    return this.current;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.terminate();
    this.ws = null;
  }

  private setMode(m: ChangeMode): void {
    if (m === this.current) return;
    this.current = m;
    this.hooks.onMode(m);
  }

  private later(ms: number): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.connect(), ms);
    this.timer.unref();
  }

  private retryWait(): number {
    const min = this.o.retryMinMs ?? 1000;
    const max = this.o.retryMaxMs ?? 60_000;
    return Math.min(max, min * 2 ** Math.min(this.failures++, 10));
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    if (!(await this.o.ping().catch(() => false))) {
      this.setMode('polling');
      return this.later(this.subscribedOnce ? this.retryWait() : (this.o.recheckMs ?? 300_000));
    }
    let tokens: [string, string][];
    try {
      tokens = await Promise.all(this.o.repos.map(async (r) => [r, await this.o.token(r)] as [string, string]));
    } catch (e) {
      this.hooks.log(`notifications: no token to subscribe with (${(e as Error).message}); changes are polled`);
      this.setMode('polling');
      return this.later(this.o.recheckMs ?? 300_000);
    }
    if (this.closed) return;
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.o.url, { handshakeTimeout: 10_000, ...this.o.wsOptions?.() });
    } catch (e) {
      this.hooks.log(`notifications: cannot connect (${(e as Error).message}); changes are polled`);
      this.setMode('polling');
      return this.later(this.o.recheckMs ?? 300_000);
    }
    this.ws = ws;
    let heard = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - heard > (this.o.deadMs ?? 15_000)) ws.terminate();
    }, 1000);
    watchdog.unref();
    ws.on('ping', () => (heard = Date.now()));
    ws.on('open', () => {
      heard = Date.now();
      this.send(ws, 'subscribe', tokens);
      this.failures = 0;
      this.setMode('notification');
      if (this.subscribedOnce) this.hooks.onResubscribed();
      this.subscribedOnce = true;
    });
    ws.on('message', (data) => {
      heard = Date.now();
      this.message(ws, data.toString());
    });
    ws.on('error', () => {
      // 'close' follows and reconnects
    });
    ws.on('close', () => {
      clearInterval(watchdog);
      if (this.ws === ws) this.ws = null;
      if (this.closed) return;
      this.setMode('polling');
      this.later(this.retryWait());
    });
  }

  private send(ws: WebSocket, type: 'subscribe', repos: [string, string][]): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify({ type, content: { repos: repos.map(([id, jwt_token]) => ({ id, jwt_token })) } }));
  }

  private message(ws: WebSocket, text: string): void {
    let msg: { type?: unknown; content?: Record<string, unknown> };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return this.hooks.log('notifications: a message that is not JSON, ignored');
    }
    const c = msg?.content ?? {};
    const repo = typeof c.repo_id === 'string' ? c.repo_id : '';
    if (!repo || !this.o.repos.includes(repo)) return;
    if (msg.type === 'jwt-expired') return void this.renew(ws, repo);
    if (!KINDS.has(msg.type as ServerChange['kind'])) return;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    this.hooks.onChange({
      repo,
      kind: msg.type as ServerChange['kind'],
      commitId: str(c.commit_id),
      path: str(c.path),
      changeEvent: str(c.change_event),
      lockUser: str(c.lock_user),
    });
  }

  /** a new token for `repo`, subscribed with; a token refused again within a minute waits for a reconnect */
  private async renew(ws: WebSocket, repo: string): Promise<void> {
    const last = this.renewedAt.get(repo) ?? 0;
    if (Date.now() - last < 60_000) {
      this.hooks.log(`notifications: the server refused a fresh token for ${repo}; reconnecting later`);
      ws.terminate();
      return;
    }
    this.renewedAt.set(repo, Date.now());
    try {
      const token = await this.o.token(repo);
      this.send(ws, 'subscribe', [[repo, token]]);
      // what changed while the old token had run out was not told
      this.hooks.onResubscribed();
    } catch (e) {
      this.hooks.log(`notifications: renewing the token of ${repo} failed: ${(e as Error).message}`);
      ws.terminate();
    }
  }
}
