// Shared pieces of the client's integration tests: clients logged in to a
// `seafs serve` started by test/helpers/server.ts, local files, TOTP codes.
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { SeafileClient, type ClientOptions } from '../../src/client/client.js';
import { ApiError, type ApiErrorKind } from '../../src/client/errors.js';
import { startTestServer, type TestServer } from './server.js';

export const FAST: Partial<ClientOptions> = { retryBaseMs: 20, retryMaxMs: 200, timeoutMs: 15_000 };

export async function adminClient(server: TestServer): Promise<SeafileClient> {
  const { client } = await SeafileClient.login(
    { baseUrl: server.url, ...FAST },
    server.adminEmail,
    server.adminPassword,
  );
  return client;
}

/**
 * Starts `seafs serve` (`opts` as startTestServer's), logs its admin in and
 * makes the library `name`: where the client's integration tests begin. The
 * caller closes the client and stops the server.
 */
export async function startWithLibrary(
  name: string,
  opts: Parameters<typeof startTestServer>[0] = {},
): Promise<{ server: TestServer; client: SeafileClient; repo: string }> {
  const server = await startTestServer(opts);
  const client = await adminClient(server);
  const repo = (await client.createLibrary(name)).repo_id;
  return { server, client, repo };
}

/** Creates the account through `admin` and returns a client logged in as it. */
export async function newUser(
  server: TestServer,
  admin: SeafileClient,
  email: string,
  fields: Record<string, string | number> = {},
): Promise<SeafileClient> {
  const password = `pw-${email}`;
  await admin.putAccount(email, { password, ...fields });
  const { client } = await SeafileClient.login({ baseUrl: server.url, ...FAST }, email, password);
  return client;
}

/** Expects `p` to fail with an ApiError of `kind` (and `status` when given); returns it. */
export async function expectApiError(p: Promise<unknown>, kind: ApiErrorKind, status?: number): Promise<ApiError> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err, `expected ApiError ${kind}`).toBeInstanceOf(ApiError);
  const e = err as ApiError;
  expect({ kind: e.kind, status: e.status }, e.message).toEqual({ kind, status: status ?? e.status });
  return e;
}

export class LocalFiles {
  readonly dir = mkdtempSync(join(tmpdir(), 'seafs-client-it-'));
  private n = 0;
  write(content: string | Buffer): string {
    const f = join(this.dir, `f${this.n++}`);
    writeFileSync(f, content);
    return f;
  }
  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const c of s) out.push(c as Buffer);
  return Buffer.concat(out);
}

/** Downloads a whole file through a fresh link. */
export async function fetchFile(c: SeafileClient, repo: string, path: string): Promise<Buffer> {
  // reusable: a refusal for want of an encrypted library's password spends a one-time link
  const link = await c.downloadLink(repo, path, { reuse: true });
  return readAll((await c.download(link.url, undefined, { repoId: repo })).body);
}

function base32Decode(s: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const ch of s.toUpperCase().replace(/=+$/, '')) {
    value = (value << 5) | alphabet.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 6238 code (SHA-1, 30 s, 6 digits), written here independently of the server's. */
export function totp(secret: string, now = Date.now()): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(Math.floor(now / 30_000)));
  const h = createHmac('sha1', base32Decode(secret)).update(msg).digest();
  const off = h[h.length - 1]! & 0xf;
  return String((h.readUInt32BE(off) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}
