// `seafs serve` as a library: startServer() binds node:http, routes the web
// API (/api2/, /api/v2.1/) and the file server (/seafhttp/), and stores
// everything under opts.dataDir.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promises as fsp } from 'node:fs';
import { accountRoutes } from './web-api/account.js';
import { dirRoutes } from './web-api/dirs.js';
import { extraRoutes } from './web-api/starred-search-links.js';
import { fileRoutes } from './web-api/files.js';
import { thumbnailRoutes } from './web-api/thumbnails.js';
import { historyRoutes } from './web-api/history.js';
import { linkRoutes } from './web-api/links.js';
import { blockRoutes } from './web-api/block-links.js';
import { repoRoutes } from './web-api/repos.js';
import { shareRoutes } from './web-api/shares.js';
import { groupRoutes } from './web-api/groups.js';
import { folderShareRoutes } from './web-api/folder-shares.js';
import { historyWebRoutes, revertOpRoutes } from './web-api/history-web.js';
import { linksWebRoutes } from './web-api/links-web.js';
import { sharingWebRoutes } from './web-api/sharing-web.js';
import { taskRoutes } from './web-api/tasks.js';
import { webRoutes } from './web-api/web-ui.js';
import { linkHtmlRoutes } from './links/html-pages.js';
import { linkPageRoutes } from './links/visitor-api.js';
import { directDownload } from './fileserver/direct-download.js';
import { sendGoError, sendGoNotFound } from './fileserver/go-answers.js';
import { forVersion } from './web-api/version-routes.js';
import { notificationRoutes } from './notifications/routes.js';
import { Ctx, type Req, type ServerOptions } from './context.js';
import { checkPassword, hashPassword } from './store/db.js';
import { download, update, upload } from './fileserver/files.js';
import { commitUpdateBlocks, commitUploadBlocks, downloadBlock, uploadRawBlocks } from './fileserver/blocks.js';
import { drainBody, FileServerError, HttpError, parseBody, sendFileServerError, sendJson } from './http.js';
import { Router } from './router.js';
import { SecretBox } from './auth/secret-box.js';
import path from 'node:path';

export type { ServerOptions } from './context.js';

export interface RunningServer {
  url: string; // http://host:port, no trailing slash
  port: number;
  close(): Promise<void>;
}

const SHUTDOWN_WAIT_MS = 10_000;

async function prepare(ctx: Ctx): Promise<void> {
  const { dataDir, adminEmail, adminPassword } = ctx.opts;
  await fsp.mkdir(dataDir, { recursive: true, mode: 0o700 });
  // Leftovers of uploads interrupted by a crash: never part of any library.
  await fsp.rm(ctx.tmpDir, { recursive: true, force: true });
  await fsp.mkdir(ctx.tmpDir, { recursive: true, mode: 0o700 });
  await ctx.store.init();
  await ctx.blocks.init();
  await ctx.heads.init();
  await ownerOnly(dataDir);
  await ctx.db.load(await SecretBox.open(dataDir));
  const admin = ctx.db.user(adminEmail);
  if (!admin) {
    ctx.db.createUser(adminEmail, adminPassword, true);
  } else {
    admin.isStaff = true;
    admin.isActive = true;
    if (!checkPassword(adminPassword, admin.passwordHash)) admin.passwordHash = hashPassword(adminPassword);
  }
  await ctx.db.save();
}

/** The data dir and every folder in it (objects/xx included) are 0700: only the server's user reads them. */
async function ownerOnly(dir: string, depth = 2): Promise<void> {
  await fsp.chmod(dir, 0o700);
  if (depth === 0) return;
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) await ownerOnly(path.join(dir, e.name), depth - 1);
  }
}

/** A request line for the log without the secrets URLs carry: link tokens, passwords. */
export function redactUrl(url: string): string {
  const [p, q] = url.split(/\?(.*)/s, 2);
  const pathPart = p
    .replace(
      /^(\/seafhttp\/(?:files|upload-api|update-api|upload-aj|repos|upload-raw-blks-api|upload-blks-api|update-blks-api|blks|zip)\/)[^/]+/,
      '$1<token>',
    )
    .replace(/^(\/(?:f|d|u\/d|api2\/d|api\/v2\.1\/(?:repos\/[^/]+\/)?(?:share|upload)-links)\/)[^/]+/, '$1<token>');
  if (q === undefined) return pathPart;
  const params = new URLSearchParams(q);
  for (const k of [...params.keys()]) if (/pass|token|secret|otp|key/i.test(k)) params.set(k, '<redacted>');
  return `${pathPart}?${params.toString()}`;
}

function authenticate(ctx: Ctx, req: http.IncomingMessage) {
  const h = req.headers.authorization;
  if (!h) throw new HttpError(403, '', { detail: 'Authentication credentials were not provided.' });
  const m = /^(Token|Bearer)\s+(\S+)\s*$/i.exec(h);
  // "Bearer" from 11.0 on; before, DRF's TokenAuthentication passes over it as if no credentials came
  if (m && !ctx.behaviour.bearer && m[1].toLowerCase() === 'bearer')
    throw new HttpError(403, '', { detail: 'Authentication credentials were not provided.' });
  const user = m ? ctx.db.userByToken(m[2]) : undefined;
  if (!user) throw new HttpError(401, '', { detail: 'Invalid token' }, { 'WWW-Authenticate': 'Token' });
  if (!user.isActive)
    throw new HttpError(401, '', { detail: 'User inactive or deleted.' }, { 'WWW-Authenticate': 'Token' });
  return user;
}

/**
 * While a request body is arriving, the connection is closed once no byte
 * came for `ms` (a client that sent headers and then nothing holds no socket
 * and handler for ever). Slow uploads are fine as long as bytes keep coming.
 * Its own timer watching the socket's byte count, not socket.setTimeout,
 * which the server uses for keep-alive.
 */
function bodyIdleTimeout(req: http.IncomingMessage, res: http.ServerResponse, ms: number): void {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody || ms <= 0) return;
  const socket = req.socket;
  let seen = socket.bytesRead;
  let since = Date.now();
  const timer = setInterval(
    () => {
      if (req.complete) return clear();
      if (socket.bytesRead !== seen) {
        seen = socket.bytesRead;
        since = Date.now();
      } else if (Date.now() - since >= ms) {
        clear();
        socket.destroy();
      }
    },
    Math.max(10, ms / 4),
  );
  timer.unref();
  const clear = () => clearInterval(timer);
  req.once('end', clear);
  res.once('finish', clear);
  res.once('close', clear);
}

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const ctx = new Ctx(opts);
  await prepare(ctx);
  const router = new Router();
  router.add(
    forVersion(ctx, [
      ...revertOpRoutes, // before fileRoutes and dirRoutes: it hands them every other operation
      ...accountRoutes,
      ...repoRoutes,
      ...shareRoutes,
      ...groupRoutes,
      ...dirRoutes,
      ...fileRoutes,
      ...thumbnailRoutes,
      ...linkRoutes,
      ...blockRoutes,
      ...historyRoutes,
      ...extraRoutes,
      ...linkPageRoutes,
      ...linkHtmlRoutes,
      // what seahub's web interface (seafile-js) calls beyond the spec; after the routes above, which win a tie
      ...webRoutes,
      ...historyWebRoutes,
      ...taskRoutes,
      ...linksWebRoutes,
      ...sharingWebRoutes,
      ...folderShareRoutes,
      ...notificationRoutes,
    ]),
  );
  const host = opts.host ?? '127.0.0.1';
  let boundUrl = '';
  // Fixed one-minute windows per caller, like real servers' rate limits (off unless asked for).
  const windows = new Map<string, { start: number; count: number }>();
  const throttle = (key: string) => {
    const limit = opts.throttlePerMin;
    if (!limit) return;
    const now = Date.now();
    let w = windows.get(key);
    if (!w || now - w.start >= 60_000) {
      w = { start: now, count: 0 };
      windows.set(key, w);
    }
    if (++w.count > limit) {
      const wait = Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000));
      throw new HttpError(
        429,
        '',
        { detail: `Request was throttled. Expected available in ${wait} seconds.` },
        { 'Retry-After': String(wait) },
      );
    }
  };
  const inflight = new Set<Promise<void>>();

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    if (opts.latencyMs) await new Promise((resolve) => setTimeout(resolve, opts.latencyMs));
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const r: Req = {
      raw: req,
      res,
      method,
      path: url.pathname,
      query: url.searchParams,
      params: [],
      // links name the scheme the client used: an https front (nginx, a test's TLS proxy) says so in X-Forwarded-Proto
      base: req.headers.host ? `${forwardedProto(req)}://${req.headers.host}` : boundUrl,
      user: null,
      form: (o) => parseBody(req, { json: o?.json ?? false }),
    };
    let fileServer = false;
    try {
      const fsMatch =
        /^\/seafhttp\/(files|upload-api|update-api|upload-raw-blks-api|upload-blks-api|update-blks-api|blks)\/([^/]+)(?:\/(.*))?$/.exec(
          url.pathname,
        );
      const direct = /^\/seafhttp\/repos\/([0-9a-f-]{36})\/files\/(.*)$/.exec(url.pathname);
      if (direct && ctx.behaviour.directDownload) {
        fileServer = true;
        r.params = [direct[1], direct[2]];
        return await directDownload(ctx, r);
      }
      if (fsMatch) {
        fileServer = true;
        r.params = [fsMatch[2], fsMatch[3] ?? ''];
        const kind = fsMatch[1];
        if (kind === 'blks' && (method === 'GET' || method === 'HEAD')) return await downloadBlock(ctx, r);
        if (kind === 'upload-raw-blks-api' && method === 'POST') return await uploadRawBlocks(ctx, r);
        if (kind === 'upload-blks-api' && method === 'POST') return await commitUploadBlocks(ctx, r);
        if (kind === 'update-blks-api' && ctx.goFileserver) return sendGoNotFound(res);
        if (kind === 'update-blks-api' && method === 'POST') return await commitUpdateBlocks(ctx, r);
        if (kind === 'files' && (method === 'GET' || method === 'HEAD')) return await download(ctx, r);
        if (kind === 'upload-api' && method === 'POST') return await upload(ctx, r);
        if (kind === 'update-api' && method === 'POST') return await update(ctx, r);
        throw new FileServerError(405, 'Method not allowed.');
      }
      const m = router.match(method, url.pathname);
      if (m === null) throw new HttpError(404, '', { detail: 'Not found.' });
      if (m === 'method') throw new HttpError(405, '', { detail: `Method "${method}" not allowed.` });
      r.params = m.params;
      const throttleKey =
        m.route.auth !== 'none' && req.headers.authorization
          ? req.headers.authorization
          : `ip:${req.socket.remoteAddress}`;
      throttle(throttleKey);
      if (m.route.auth !== 'none') {
        r.user = authenticate(ctx, req);
        if (m.route.auth === 'admin' && !r.user.isStaff) {
          throw new HttpError(403, '', { detail: 'You do not have permission to perform this action.' });
        }
      }
      await m.route.handler(ctx, r);
    } catch (e) {
      if (!req.complete) await drainBody(req, res);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (e instanceof HttpError) {
        if (e instanceof FileServerError || (fileServer && e.body === undefined)) {
          for (const [k, v] of Object.entries(e.headers)) res.setHeader(k, v);
          if (ctx.goFileserver) return sendGoError(res, e.status, e.message);
          return sendFileServerError(res, e.status, e.message);
        }
        return sendJson(res, e.status, e.body ?? { error_msg: e.message }, e.headers);
      }
      ctx.log(`error: ${method} ${redactUrl(url.pathname)}: ${(e as Error)?.stack ?? e}`);
      if (fileServer && ctx.goFileserver) return sendGoError(res, 500, '');
      if (fileServer) return sendFileServerError(res, 500, 'Internal server error.');
      sendJson(res, 500, { error_msg: 'Internal Server Error' });
    }
  };

  const server = http.createServer((req, res) => {
    if (opts.logRequests) {
      const t0 = Date.now();
      res.on('finish', () =>
        ctx.log(`${req.method} ${redactUrl(req.url ?? '/')} ${res.statusCode} ${Date.now() - t0}ms`),
      );
    }
    bodyIdleTimeout(req, res, (opts.bodyIdleSec ?? 30) * 1000);
    const p = handle(req, res).catch((e) => {
      ctx.log(`error: ${(e as Error)?.stack ?? e}`);
      res.destroy();
    });
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  });
  server.on('upgrade', (req, socket, head) => {
    if (!ctx.notifications?.upgrade(req, socket, head)) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
    }
  });
  // Uploads of large files may take long: no whole-request timeout, but a body
  // that stops arriving is dropped after bodyIdleSec (bodyIdleTimeout).
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  server.keepAliveTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  boundUrl = `http://${shownHost}:${port}`;

  // blocks sent raw that no commit used within the grace period are removed (store/block-store.ts sweep)
  const graceMs = ctx.blockGraceMs;
  const sweeper = setInterval(
    () => {
      try {
        ctx.blocks.sweep(graceMs);
      } catch (e) {
        ctx.log(`error: removing unused blocks: ${(e as Error).message}`);
      }
    },
    Math.min(60_000, Math.max(1000, graceMs / 4)),
  );
  sweeper.unref();

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      clearInterval(sweeper);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_WAIT_MS);
      await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, SHUTDOWN_WAIT_MS))]);
      server.closeIdleConnections();
      ctx.notifications?.close();
      await closed;
      clearTimeout(timer);
      await ctx.db.save();
    })());

  return { url: boundUrl, port, close };
}

/** `https` when a TLS front in front of the server says the client came over https, else `http`. */
function forwardedProto(req: http.IncomingMessage): 'http' | 'https' {
  const p = req.headers['x-forwarded-proto'];
  return (Array.isArray(p) ? p[0] : p)?.split(',')[0].trim().toLowerCase() === 'https' ? 'https' : 'http';
}
