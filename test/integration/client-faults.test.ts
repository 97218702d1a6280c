// The client against `seafs serve` through the fault proxy: a few hundred
// folder and file operations under seeded 500s, 429s, resets after the server
// did the work and stalls, checked afterwards directly against the server
// (every file exactly once, same bytes, no "(1)" copies); a frozen server
// makes calls fail within the timeout; a first login survives resets.
import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient, type ClientOptions } from '../../src/client/client.js';
import { ApiError } from '../../src/client/errors.js';
import type { DirEntry } from '../../src/client/types.js';
import { startFaultProxy, seededRandom, type FaultProxy } from '../helpers/fault-proxy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LocalFiles, adminClient, readAll } from '../helpers/client-setup.js';

const SEED = Number(process.env.SEAFS_FAULT_SEED ?? 17);
// the rates of issue 17, with shorter stalls (they stay below the timeout either way)
const RATES = { error500: 0.05, throttle429: 0.03, resetAfter: 0.04, stall: 0.02 };
// the client's defaults except shorter backoff steps, so the run stays short
const THROUGH: Partial<ClientOptions> = { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 10_000 };

let server: TestServer;
let direct: SeafileClient;
const files = new LocalFiles();
const proxies: FaultProxy[] = [];
const clients: SeafileClient[] = [];

beforeAll(async () => {
  server = await startTestServer();
  direct = await adminClient(server);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await direct?.close();
  await server?.stop();
  files.cleanup();
});

async function proxy(opts: Partial<Parameters<typeof startFaultProxy>[0]> = {}): Promise<FaultProxy> {
  const p = await startFaultProxy({ target: server.url, seed: SEED, ...opts });
  proxies.push(p);
  return p;
}

function through(p: FaultProxy, opts: Partial<ClientOptions> = {}): SeafileClient {
  const c = new SeafileClient({ baseUrl: p.url, token: direct.token, ...THROUGH, ...opts });
  clients.push(c);
  return c;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Every file of the library, read directly from the server: path -> entries with that path. */
async function serverTree(repo: string): Promise<Map<string, DirEntry[]>> {
  const l = await direct.listDir(repo, '/', { recursive: true });
  if (l.uptodate) throw new Error('expected a full listing');
  const out = new Map<string, DirEntry[]>();
  for (const e of l.entries) {
    const p = `${e.parent_dir === '/' ? '' : e.parent_dir}/${e.name}`;
    out.set(p, [...(out.get(p) ?? []), e]);
  }
  return out;
}

describe('the client through seeded faults', () => {
  it('does a few hundred operations with every file on the server exactly once, byte for byte', async () => {
    const repo = (await direct.createLibrary('Faults')).repo_id;
    const p = await proxy({ ...RATES, stallMs: 2000, retryAfterSec: 1 });
    const c = through(p);
    const rnd = seededRandom(SEED * 7919);
    const limit = pLimit(8);
    /** what the library must hold at the end: path -> content (folders: null) */
    const want = new Map<string, Buffer | null>();
    const content = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));

    // 12 folders, each with plain mkdir (a repeat after a lost answer would make "d0 (1)")
    const dirs = Array.from({ length: 12 }, (_, i) => `/d${i}`);
    await Promise.all(dirs.map((d) => limit(() => c.mkdir(repo, d))));
    for (const d of dirs) want.set(d, null);

    // 120 new files without replace (a repeat would make "f (1).bin"), 0-64 KiB
    const links = new Map<string, string>();
    for (const d of dirs) links.set(d, await c.uploadLink(repo, d));
    const plan = Array.from({ length: 120 }, (_, i) => ({
      dir: dirs[i % dirs.length]!,
      name: `f${i}.bin`,
      data: content(Math.floor(rnd() * 65536)),
    }));
    await Promise.all(
      plan.map((f) =>
        limit(async () => {
          const [up] = await c.upload(links.get(f.dir)!, f.dir, files.write(f.data), f.name, { repoId: repo });
          expect(up!.name).toBe(f.name);
          want.set(`${f.dir}/${f.name}`, f.data);
        }),
      ),
    );

    // every folder listed through the proxy shows what was uploaded
    await Promise.all(
      dirs.map((d) =>
        limit(async () => {
          const l = await c.listDir(repo, d);
          if (l.uptodate) throw new Error('expected a full listing');
          const names = l.entries.map((e) => e.name).sort();
          expect(names).toEqual(
            [...want.keys()]
              .filter((k) => k.startsWith(`${d}/`))
              .map((k) => k.slice(d.length + 1))
              .sort(),
          );
        }),
      ),
    );

    // every file read back through the proxy (a reusable link, as the mount uses)
    await Promise.all(
      plan.map((f) =>
        limit(async () => {
          const dl = await c.downloadLink(repo, `${f.dir}/${f.name}`, { reuse: true });
          expect(sha(await readAll((await c.download(dl.url)).body))).toBe(sha(f.data));
        }),
      ),
    );

    // 30 renames, 15 moves, 20 deletes, 15 updates, 6 empty files created, 2 folders renamed
    const renames = plan.slice(0, 30);
    await Promise.all(
      renames.map((f) =>
        limit(async () => {
          const to = `r-${f.name}`;
          await c.renameFile(repo, `${f.dir}/${f.name}`, to);
          want.delete(`${f.dir}/${f.name}`);
          want.set(`${f.dir}/${to}`, f.data);
        }),
      ),
    );
    const moves = plan.slice(30, 45);
    await Promise.all(
      moves.map((f) =>
        limit(async () => {
          const dst = dirs[(dirs.indexOf(f.dir) + 1) % dirs.length]!;
          await c.moveFile(repo, `${f.dir}/${f.name}`, repo, dst);
          want.delete(`${f.dir}/${f.name}`);
          want.set(`${dst}/${f.name}`, f.data);
        }),
      ),
    );
    const deletes = plan.slice(45, 65);
    await Promise.all(
      deletes.map((f) =>
        limit(async () => {
          await c.deleteFile(repo, `${f.dir}/${f.name}`);
          want.delete(`${f.dir}/${f.name}`);
        }),
      ),
    );
    const updates = plan.slice(65, 80);
    await Promise.all(
      updates.map((f) =>
        limit(async () => {
          const data = content(Math.floor(rnd() * 65536));
          await c.update(await c.updateLink(repo, f.dir), `${f.dir}/${f.name}`, files.write(data));
          want.set(`${f.dir}/${f.name}`, data);
        }),
      ),
    );
    await Promise.all(
      dirs.slice(0, 6).map((d) =>
        limit(async () => {
          await c.createFile(repo, `${d}/empty.txt`);
          want.set(`${d}/empty.txt`, Buffer.alloc(0));
        }),
      ),
    );
    for (const [from, to] of [
      ['/d10', 'ten'],
      ['/d11', 'eleven'],
    ] as const) {
      await c.renameDir(repo, from, to);
      for (const k of [...want.keys()]) {
        if (k === from || k.startsWith(`${from}/`)) {
          want.set(`/${to}${k.slice(from.length)}`, want.get(k)!);
          want.delete(k);
        }
      }
    }

    // the faults did happen, of every kind
    const n = p.counts;
    console.log(`fault proxy (seed ${SEED}): ${JSON.stringify(n)}`);
    expect(n.requests).toBeGreaterThan(500);
    for (const k of ['error500', 'throttle429', 'resetAfter', 'stall'] as const) expect(n[k], k).toBeGreaterThan(0);

    // directly against the server: exactly the wanted paths, once each, same bytes
    const tree = await serverTree(repo);
    expect([...tree.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [path, entries] of tree) expect(entries, path).toHaveLength(1);
    expect([...tree.keys()].filter((k) => / \(\d+\)/.test(k))).toEqual([]);
    await Promise.all(
      [...want].map(([path, data]) =>
        limit(async () => {
          const e = tree.get(path)![0]!;
          if (data === null) return expect(e.type, path).toBe('dir');
          expect(e.type, path).toBe('file');
          const dl = await direct.downloadLink(repo, path);
          expect(sha(await readAll((await direct.download(dl.url)).body)), path).toBe(sha(data));
        }),
      ),
    );
  });
});

describe('a frozen server', () => {
  it('makes each call fail as a timeout within its bound instead of waiting for minutes', async () => {
    const repo = (await direct.createLibrary('Frozen')).repo_id;
    await direct.mkdir(repo, '/a');
    const p = await proxy();
    const timeoutMs = 1500;
    const c = through(p, { timeoutMs, retryBaseMs: 50 });
    await c.listDir(repo, '/'); // a kept-alive connection that will hang
    const link = await c.uploadLink(repo, '/');
    p.setMode('freeze');
    const calls: [string, () => Promise<unknown>][] = [
      ['list folder', () => c.listDir(repo, '/a')],
      ['download link', () => c.downloadLink(repo, '/x')],
      ['mkdir', () => c.mkdir(repo, '/b')],
      ['rename', () => c.renameDir(repo, '/a', 'c')],
      ['upload', () => c.upload(link, '/', files.write('frozen'), 'frozen.txt', { repoId: repo })],
    ];
    const took: Record<string, number> = {};
    for (const [name, call] of calls) {
      const t0 = Date.now();
      const e = await call().then(
        () => null,
        (err: unknown) => err,
      );
      took[name] = Date.now() - t0;
      expect(e, name).toBeInstanceOf(ApiError);
      expect((e as ApiError).kind, name).toBe('timeout');
      // bounded: one timeout and a little, never several timeouts in a row (generous margin for a loaded machine)
      expect(took[name], name).toBeGreaterThanOrEqual(timeoutMs - 100);
      expect(took[name], name).toBeLessThan(3 * timeoutMs + 2000);
    }
    console.log(`frozen server, timeout ${timeoutMs} ms, each call took (ms): ${JSON.stringify(took)}`);
    expect(p.counts.frozen).toBeGreaterThanOrEqual(calls.length);
    // nothing of it reached the server
    const l = await direct.listDir(repo, '/');
    if (l.uptodate) throw new Error('expected a full listing');
    expect(l.entries.map((e) => e.name).sort()).toEqual(['a']);
  });
});

describe('the first login', () => {
  it('survives connection resets after the server answered, and the token works', async () => {
    let hits = 0;
    // the first three logins reach the server and then lose their answer
    const p = await proxy({ resetAfter: 1, only: (_m, url) => url.startsWith('/api2/auth-token/') && ++hits <= 3 });
    const { client, token } = await SeafileClient.login(
      { baseUrl: p.url, ...THROUGH },
      server.adminEmail,
      server.adminPassword,
    );
    clients.push(client);
    expect(p.counts.resetAfter).toBe(3);
    expect(token.length).toBeGreaterThan(0);
    expect(client.token).toBe(token);
    expect((await client.accountInfo()).email).toBe(server.adminEmail);
  });

  it('waits out a server that refuses connections at first, within its login time', async () => {
    const p = await proxy();
    p.setMode('refuse');
    setTimeout(() => p.setMode('clean'), 1500);
    const t0 = Date.now();
    const { client } = await SeafileClient.login(
      { baseUrl: p.url, ...THROUGH, loginRetryMs: 20_000 },
      server.adminEmail,
      server.adminPassword,
    );
    clients.push(client);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
    expect(p.counts.refused).toBeGreaterThan(0);
    expect((await client.accountInfo()).email).toBe(server.adminEmail);
  });

  it('gives up on a login that keeps failing once loginRetryMs is spent', async () => {
    const p = await proxy({ resetAfter: 1 });
    const t0 = Date.now();
    const e = await SeafileClient.login(
      { baseUrl: p.url, ...THROUGH, loginRetryMs: 2000 },
      server.adminEmail,
      server.adminPassword,
    ).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).kind).toBe('network');
    expect(Date.now() - t0).toBeLessThan(2000 + 3 * 10_000);
    expect(p.counts.resetAfter).toBeGreaterThan(1);
  });
});
