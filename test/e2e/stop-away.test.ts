// Stopping a mount while the server is away (issue 31, section 5): SIGTERM,
// SIGINT, `seafs unmount` and a kernel unmount end the process once nothing
// has landed for the unmount's wait (SEAFS_UNMOUNT_WAIT_MS, 2 s here instead
// of 30 s), whether the server refuses connections (stopped) or holds them
// (SIGSTOP, --timeout 2) or closes every connection (a proxy whose server is
// gone: the mount stays online, every upload fails); a second SIGTERM ends it at once; a cache folder
// removed under it ends it with a line that says so. What was pending stays
// in the journal: the next mount on the same cache folder uploads it, checked
// through the API.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, remoteNames } from '../helpers/api-check.js';
import {
  CLI,
  isMountpoint,
  mountLibrary,
  q,
  run,
  scratchDir,
  sh,
  sleep,
  testEnv,
  type Mount,
} from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';

const ctx = setupE2E(['Away']);
const WAIT_MS = 2000;

type Away = 'stopped' | 'frozen';

/** Mounts with a cache folder of the case's own, writes `n` files into /NAME (half before the server goes away). */
async function mountAndWrite(name: string, n: number, away: Away, waitMs = WAIT_MS) {
  const repo = ctx.repos.Away;
  await ctx.api.mkdir(repo, `/${name}`);
  const cacheDir = path.join(scratchDir(), `cache-${name}`);
  const opts = {
    library: 'Away',
    cacheDir,
    extraArgs: ['--timeout', '2'],
    env: { SEAFS_UNMOUNT_WAIT_MS: String(waitMs) },
  };
  const m = await mountLibrary(ctx.server, opts);
  const dir = q(path.join(m.mnt, name));
  await sh(`ls ${dir} >/dev/null`);
  const write = (from: number, to: number) =>
    sh(`cd ${dir} && for i in $(seq ${from} ${to}); do echo "${name} file $i" > f$i.txt; done`);
  await write(1, n / 2);
  if (away === 'stopped') await ctx.server.halt();
  else process.kill(ctx.server.pid, 'SIGSTOP');
  await write(n / 2 + 1, n);
  return { m, opts, repo };
}

/** Waits for the mount process to end; returns its exit code and the time it took from `t0`. */
async function ended(m: Mount, t0: number, limitMs = 30_000): Promise<{ code: number; ms: number }> {
  const code = await Promise.race([m.exited, sleep(limitMs).then(() => -1)]);
  const ms = Date.now() - t0;
  expect(code, `the mount process still ran ${limitMs} ms after it was told to stop:\n${m.output()}`).not.toBe(-1);
  expect(await isMountpoint(m.mnt), 'the kernel mount is gone').toBe(false);
  return { code, ms };
}

/** The server back; a new mount on the same cache folder uploads every file; all checked through the API. */
async function nextMountUploads(name: string, n: number, away: Away, opts: Parameters<typeof mountLibrary>[1]) {
  if (away === 'stopped') await ctx.server.restart({ samePort: true });
  else process.kill(ctx.server.pid, 'SIGCONT');
  const m = await mountLibrary(ctx.server, opts);
  const un = await m.unmount();
  expect(un.code, m.output()).toBe(0);
  const repo = ctx.repos.Away;
  const names = (await remoteNames(ctx.api, repo, `/${name}`))!;
  expect(names.sort()).toEqual(Array.from({ length: n }, (_, i) => `f${i + 1}.txt`).sort());
  for (let i = 1; i <= n; i++)
    expect((await remoteBytes(ctx.api, repo, `/${name}/f${i}.txt`)).toString()).toBe(`${name} file ${i}\n`);
}

function leftInJournal(m: Mount): void {
  expect(m.output()).toMatch(
    /stopped waiting for uploads: .*; \d+ file\(s\) stay in the journal in .* and the next mount uploads them/,
  );
}

describe('stopping a mount while the server is away', () => {
  it('SIGTERM with the server stopped (connection refused): 200 files stay in the journal, the next mount uploads them', async () => {
    const { m, opts } = await mountAndWrite('term', 200, 'stopped');
    const t0 = Date.now();
    m.child.kill('SIGTERM');
    const r = await ended(m, t0);
    console.log(`SIGTERM, server stopped, 200 files: exit ${r.code} after ${r.ms} ms (wait ${WAIT_MS} ms)`);
    expect(r.code).toBe(1);
    leftInJournal(m);
    await nextMountUploads('term', 200, 'stopped', opts);
  }, 60_000);

  it('SIGINT with the server frozen (no answer): ends after --timeout and the wait', async () => {
    const { m, opts } = await mountAndWrite('int', 20, 'frozen');
    const t0 = Date.now();
    m.child.kill('SIGINT');
    const r = await ended(m, t0);
    console.log(`SIGINT, server frozen, --timeout 2: exit ${r.code} after ${r.ms} ms`);
    expect(r.code).toBe(1);
    leftInJournal(m);
    await nextMountUploads('int', 20, 'frozen', opts);
  }, 60_000);

  it('seafs unmount with the server stopped: says the files are kept and exits 1', async () => {
    const { m, opts } = await mountAndWrite('unmount', 20, 'stopped');
    const t0 = Date.now();
    const un = await run(process.execPath, [CLI, 'unmount', m.mnt], {
      allowFail: true,
      env: testEnv(),
      timeoutMs: 30_000,
    });
    const r = await ended(m, t0);
    console.log(`seafs unmount, server stopped: exit ${un.code}, process gone after ${r.ms} ms`);
    expect(un.code).toBe(1);
    expect(un.out + un.err).toMatch(/stay in the journal/);
    expect(un.err).toMatch(/kept for the next mount/);
    await nextMountUploads('unmount', 20, 'stopped', opts);
  }, 60_000);

  it('a kernel unmount (fusermount -uz) with the server stopped ends the process', async () => {
    const { m, opts } = await mountAndWrite('kernel', 20, 'stopped');
    const t0 = Date.now();
    await run('fusermount', ['-uz', m.mnt]);
    const r = await ended(m, t0);
    console.log(`fusermount -uz, server stopped: exit ${r.code} after ${r.ms} ms`);
    expect(r.code).toBe(1);
    leftInJournal(m);
    await nextMountUploads('kernel', 20, 'stopped', opts);
  }, 60_000);

  it('SIGTERM with the server gone behind a proxy (every connection closed, not refused): ends after the wait', async () => {
    const repo = ctx.repos.Away;
    await ctx.api.mkdir(repo, '/proxied');
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 1 });
    proxy.setMode('clean');
    try {
      const opts = {
        library: 'Away',
        cacheDir: path.join(scratchDir(), 'cache-proxied'),
        extraArgs: ['--timeout', '2'],
        env: { SEAFS_UNMOUNT_WAIT_MS: String(WAIT_MS) },
      };
      const via = { ...ctx.server, url: proxy.url };
      const m = await mountLibrary(via, opts);
      const dir = q(path.join(m.mnt, 'proxied'));
      await sh(`ls ${dir} >/dev/null`);
      proxy.setMode('refuse');
      await sh(`cd ${dir} && for i in $(seq 1 20); do echo "proxied file $i" > f$i.txt; done`);
      const t0 = Date.now();
      m.child.kill('SIGTERM');
      const r = await ended(m, t0);
      console.log(`SIGTERM, connections closed by a proxy: exit ${r.code} after ${r.ms} ms`);
      expect(r.code).toBe(1);
      leftInJournal(m);
      proxy.setMode('clean');
      const next = await mountLibrary(via, opts);
      expect((await next.unmount()).code, next.output()).toBe(0);
      for (let i = 1; i <= 20; i++)
        expect((await remoteBytes(ctx.api, repo, `/proxied/f${i}.txt`)).toString()).toBe(`proxied file ${i}\n`);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('a second SIGTERM ends it at once (a 60 s wait), the journal intact', async () => {
    const { m, opts } = await mountAndWrite('twice', 20, 'stopped', 60_000);
    m.child.kill('SIGTERM');
    await sleep(500);
    expect(m.child.exitCode).toBeNull();
    const t0 = Date.now();
    m.child.kill('SIGTERM');
    const r = await ended(m, t0, 10_000);
    console.log(`second SIGTERM, server stopped: exit ${r.code} after ${r.ms} ms`);
    expect(r.code).toBe(1);
    expect(m.output()).toMatch(/stopped waiting for uploads: a second SIGTERM; 20 file\(s\) stay in the journal/);
    await nextMountUploads('twice', 20, 'stopped', { ...opts, env: {} });
  }, 60_000);

  it('the cache folder removed while the unmount waits: one line, and the process ends', async () => {
    const { m } = await mountAndWrite('gone', 20, 'stopped', 60_000);
    m.child.kill('SIGTERM');
    await sleep(500);
    const t0 = Date.now();
    await sh(`rm -rf ${q(m.cacheDir)}`);
    const r = await ended(m, t0, 10_000);
    console.log(`cache folder removed while waiting: exit ${r.code} after ${r.ms} ms`);
    expect(r.code).toBe(1);
    expect(m.output()).toMatch(/stopped waiting for uploads: the cache folder .* was removed/);
    await ctx.server.restart({ samePort: true });
  }, 60_000);
});
