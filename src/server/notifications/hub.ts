// The notification server's protocol, served on the web API's own port (as
// behind the usual web front): a websocket at /notification where a client
// subscribes to libraries, each with a JWT, and is sent
// {"type":"repo-update","content":{"repo_id","commit_id"}} for every commit
// whoever made it, and "file-lock-changed" when a lock is taken or released.
// GET /notification/ping answers {"ret": "pong"}. As the real server: HS256
// tokens holding repo_id, username and exp; a subscription whose token is bad,
// for another library or expired is answered "jwt-expired"; a ping every
// second, and a client that answered none for 5 s is dropped; subscriptions
// whose token ran out are ended with "jwt-expired" (checked hourly there,
// every minute here).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export interface NotificationOptions {
  pingMs?: number;
  /** a client silent this long is dropped */
  deadMs?: number;
  /** lifetime of a token handed out, seconds (seahub: 3 days) */
  tokenTtlSec?: number;
  /** how often subscriptions are checked for expired tokens */
  expiryCheckMs?: number;
}

interface Client {
  ws: WebSocket;
  /** library -> token expiry (s) */
  repos: Map<string, number>;
  alive: number;
}

/** JSON Web Tokens signed with HMAC-SHA256, the one algorithm the notification server accepts */
export class Hs256 {
  constructor(private readonly key: Buffer) {}

  sign(claims: Record<string, unknown>): string {
    const head = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${head}.${body}.${this.mac(`${head}.${body}`).toString('base64url')}`;
  }

  /** the claims of a token this key signed, else null */
  verify(token: string): Record<string, unknown> | null {
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    const want = this.mac(`${parts[0]}.${parts[1]}`);
    const got = Buffer.from(parts[2], 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return null;
    try {
      const head = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: unknown };
      if (head.alg !== 'HS256') return null;
      const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
      return claims && typeof claims === 'object' && !Array.isArray(claims)
        ? (claims as Record<string, unknown>)
        : null;
    } catch {
      return null;
    }
  }

  private mac(data: string): Buffer {
    return createHmac('sha256', this.key).update(data).digest();
  }
}

export class NotificationHub {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });
  private readonly clients = new Set<Client>();
  private readonly subs = new Map<string, Set<Client>>();
  /** a key per start, as a restart of the real server with a new private_key would */
  private readonly jwt = new Hs256(randomBytes(32));
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly pingMs: number;
  private readonly deadMs: number;
  private readonly tokenTtlSec: number;

  constructor(o: NotificationOptions = {}) {
    this.pingMs = o.pingMs ?? 1000;
    this.deadMs = o.deadMs ?? 5000;
    this.tokenTtlSec = o.tokenTtlSec ?? 3 * 24 * 3600;
    this.timers.push(setInterval(() => this.pingAll(), this.pingMs));
    this.timers.push(setInterval(() => this.expire(), o.expiryCheckMs ?? 60_000));
    for (const t of this.timers) t.unref();
  }

  /** a token for `user` on `repo`, as seahub's repo-notification-jwt-token and the fileserver's jwt-token give */
  token(repo: string, user: string): string {
    return this.jwt.sign({ exp: Math.floor(Date.now() / 1000) + this.tokenTtlSec, repo_id: repo, username: user });
  }

  /** Takes a websocket upgrade at /notification; false: not ours (the caller answers it). */
  upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    if (p !== '/notification' && p !== '/notification/') return false;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
    return true;
  }

  repoUpdate(repo: string, commitId: string): void {
    this.send(repo, { type: 'repo-update', content: { repo_id: repo, commit_id: commitId } });
  }

  fileLockChanged(repo: string, path: string, event: 'locked' | 'unlocked', lockUser: string): void {
    this.send(repo, {
      type: 'file-lock-changed',
      content: { repo_id: repo, path, change_event: event, lock_user: lockUser },
    });
  }

  /** how many clients are connected (for tests and the log) */
  get connected(): number {
    return this.clients.size;
  }

  close(): void {
    for (const t of this.timers) clearInterval(t);
    for (const c of this.clients) c.ws.terminate();
    this.wss.close();
  }

  private accept(ws: WebSocket): void {
    const c: Client = { ws, repos: new Map(), alive: Date.now() };
    this.clients.add(c);
    ws.on('pong', () => (c.alive = Date.now()));
    ws.on('message', (data, isBinary) => {
      if (isBinary || !this.handle(c, data.toString())) ws.close(1003);
    });
    const drop = () => this.drop(c);
    ws.on('close', drop);
    ws.on('error', drop);
  }

  /** false: a message the real server ends the connection for */
  private handle(c: Client, text: string): boolean {
    let msg: { type?: unknown; content?: { repos?: unknown } };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return false;
    }
    const repos = msg?.content?.repos;
    if (!Array.isArray(repos)) return false;
    if (msg.type === 'subscribe') {
      for (const r of repos as { id?: unknown; jwt_token?: unknown }[]) {
        const id = typeof r?.id === 'string' ? r.id : '';
        const exp = this.check(typeof r?.jwt_token === 'string' ? r.jwt_token : '', id);
        if (exp === null) {
          this.write(c, { type: 'jwt-expired', content: { repo_id: id } });
          continue;
        }
        c.repos.set(id, exp);
        let set = this.subs.get(id);
        if (!set) this.subs.set(id, (set = new Set()));
        set.add(c);
      }
      return true;
    }
    if (msg.type === 'unsubscribe') {
      for (const id of repos) if (typeof id === 'string') this.unsubscribe(c, id);
      return true;
    }
    return false;
  }

  /** the token's expiry (s) when it is valid for `repo` now, else null */
  private check(token: string, repo: string): number | null {
    const claims = token ? this.jwt.verify(token) : null;
    const exp = claims?.exp;
    if (!claims || claims.repo_id !== repo || typeof exp !== 'number') return null;
    return exp > Date.now() / 1000 ? exp : null;
  }

  private unsubscribe(c: Client, repo: string): void {
    c.repos.delete(repo);
    const set = this.subs.get(repo);
    set?.delete(c);
    if (set?.size === 0) this.subs.delete(repo);
  }

  private drop(c: Client): void {
    if (!this.clients.delete(c)) return;
    for (const id of [...c.repos.keys()]) this.unsubscribe(c, id);
  }

  private send(repo: string, msg: object): void {
    for (const c of this.subs.get(repo) ?? []) this.write(c, msg);
  }

  private write(c: Client, msg: object): void {
    if (c.ws.readyState === c.ws.OPEN) c.ws.send(JSON.stringify(msg));
  }

  private pingAll(): void {
    const now = Date.now();
    for (const c of [...this.clients]) {
      if (now - c.alive > this.deadMs) {
        c.ws.terminate();
        this.drop(c);
      } else if (c.ws.readyState === c.ws.OPEN) c.ws.ping();
    }
  }

  private expire(): void {
    const now = Date.now() / 1000;
    for (const c of this.clients) {
      for (const [id, exp] of [...c.repos]) {
        if (exp > now) continue;
        this.unsubscribe(c, id);
        this.write(c, { type: 'jwt-expired', content: { repo_id: id } });
      }
    }
  }
}
