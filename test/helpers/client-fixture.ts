// A throwaway node:http server on port 0 for the client's unit tests: the
// handler decides how to misbehave; every request is recorded.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { ApiError } from '../../src/client/errors.js';

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface TinyServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, n: number) => void;

export async function tinyServer(handler: Handler, opts: { readBody?: boolean } = {}): Promise<TinyServer> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    if (opts.readBody === false) {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.alloc(0) });
      handler(req, res, Buffer.alloc(0), seen.length);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handler(req, res, body, seen.length);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: http.ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export function text(
  res: http.ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** The ApiError `p` fails with (the test fails when it resolves, or fails otherwise). */
export async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error('expected a failure');
}

export interface ClientFixture {
  /** the servers and clients made (closed after each test); tests may add their own */
  servers: TinyServer[];
  clients: SeafileClient[];
  /** a tinyServer answering with `handler` and a client of token 'tok' on it, quick to retry (`opts` over that) */
  setup(
    handler: Handler,
    opts?: Partial<ConstructorParameters<typeof SeafileClient>[0]>,
    serverOpts?: { readBody?: boolean },
  ): Promise<{ srv: TinyServer; client: SeafileClient }>;
}

/** Registers an afterEach that closes every client and server made; returns the fixture. */
export function clientFixture(): ClientFixture {
  const f: ClientFixture = {
    servers: [],
    clients: [],
    async setup(handler, opts = {}, serverOpts = {}) {
      const srv = await tinyServer(handler, serverOpts);
      f.servers.push(srv);
      const client = new SeafileClient({
        baseUrl: srv.url,
        token: 'tok',
        retryBaseMs: 10,
        retryMaxMs: 50,
        timeoutMs: 2000,
        ...opts,
      });
      f.clients.push(client);
      return { srv, client };
    },
  };
  afterEach(async () => {
    await Promise.all(f.clients.splice(0).map((c) => c.close()));
    await Promise.all(f.servers.splice(0).map((s) => s.close()));
  });
  return f;
}
