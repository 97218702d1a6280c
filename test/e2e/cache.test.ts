// The disk cache through real mounts: `seafs cache clear` drops the
// downloaded data a running mount keeps on disk, and never a file waiting for
// upload; what one mount downloaded is read by the next one (and by two at
// once) without a byte from the server, after a kill -9 too, and while the
// server is down. Downloads are counted by a proxy in front of the server.
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, sha256, sha256File, waitRemoteFile } from '../helpers/api-check.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { CLI, mountLibrary, q, run, scratchDir, sh, sleep } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Cached']);
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });

describe('seafs cache clear', () => {
  it('drops what the mount downloaded, keeps what waits for upload, and says so', async () => {
    const m = await mountLibrary(ctx.server, { library: 'Cached' });
    const src = path.join(ctx.src, 'one.bin');
    await writeRandom(src, 1024 * 1024);
    await sh(`cp ${q(src)} ${q(m.mnt)}/one.bin`);
    await waitRemoteFile(ctx.api, ctx.repos.Cached, '/one.bin', src);
    // read through the mount with the page cache dropped: the mount downloads it (and keeps it on disk)
    await sh(`sync; echo 3 > /proc/sys/vm/drop_caches; cat ${q(m.mnt)}/one.bin > /dev/null`);
    const r = await run(process.execPath, [CLI, 'cache', 'clear', m.mnt], { env: env(), allowFail: true });
    expect(r.code, r.err).toBe(0);
    const freed = /: ([\d.]+) (B|KiB|MiB) of downloaded data dropped/.exec(r.out);
    expect(freed, r.out).not.toBeNull();
    expect(Number(freed![1])).toBeGreaterThan(0);
    // a file still open for writing is not touched, and still arrives whole
    const big = path.join(ctx.src, 'pending.bin');
    await writeRandom(big, 3 * 1024 * 1024);
    await sh(
      `exec 3>${q(m.mnt)}/pending.bin; cat ${q(big)} >&3; ${q(process.execPath)} ${q(CLI)} cache clear ${q(m.mnt)} >/dev/null; exec 3>&-`,
      { env: env() },
    );
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect((await remoteBytes(ctx.api, ctx.repos.Cached, '/pending.bin')).length).toBe(3 * 1024 * 1024);
    await waitRemoteFile(ctx.api, ctx.repos.Cached, '/pending.bin', big);
    // no mount: one line, exit 1
    const none = await run(process.execPath, [CLI, 'cache', 'clear', m.mnt], { env: env(), allowFail: true });
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/no seafs mount answers at/);
  });
});

/** Writes `files` into `dir` of `repo` through an upload link (directly on the server). */
async function seed(repo: string, dir: string, files: Record<string, Buffer>): Promise<void> {
  const link = await ctx.api.uploadLink(repo, dir);
  const r = await uploadTo(link, dir, files, { replace: true });
  expect(r.status, r.text).toBe(200);
}

const dropCaches = () => sh('sync; echo 3 > /proc/sys/vm/drop_caches');
const MiB = 1024 * 1024;

describe('the disk cache across mounts', () => {
  it('a file read once is read again after a remount with the page cache dropped: the same bytes, not one byte downloaded; two mounts share the cache dir at once', async () => {
    const repo = ctx.repos.Cached;
    const data = randomBytes(40 * MiB + 123); // streamed front to back
    await seed(repo, '/', { 'again.bin': data });
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 1 });
    const via = { ...ctx.server, url: proxy.url };
    proxy.setMode('clean');
    const cacheDir = path.join(scratchDir(), 'cache-remount');
    try {
      const m1 = await mountLibrary(via, { library: 'Cached', cacheDir });
      await dropCaches();
      expect((await sh(`sha256sum < ${q(m1.mnt)}/again.bin`)).out.split(' ')[0]).toBe(sha256(data));
      const first = proxy.counts.downloadBytes;
      expect(first).toBeGreaterThanOrEqual(data.length);
      // chunks the disk cache skipped because the disk fell behind (a busy machine) are downloaded again
      const skipped = (
        JSON.parse(
          (await run(process.execPath, [CLI, 'status', m1.mnt, '--json'], { env: env(), timeoutMs: 10_000 })).out,
        ) as { disk: { skippedBytes: number } }[]
      )[0].disk.skippedBytes;
      const st = await run(process.execPath, [CLI, 'status', m1.mnt], { env: env() });
      const used = /cache: ([\d.]+) (KiB|MiB|GiB) of ([\d.]+) GiB/.exec(st.out);
      expect(used, st.out).not.toBeNull();
      expect(Number(used![1]) * (used![2] === 'MiB' ? 1 : used![2] === 'GiB' ? 1024 : 1 / 1024)).toBeGreaterThan(39);
      expect((await m1.unmount()).code).toBe(0);

      await dropCaches();
      const [m2, m3] = [
        await mountLibrary(via, { library: 'Cached', cacheDir }),
        await mountLibrary(via, { library: 'Cached', cacheDir }),
      ];
      const [a, b] = await Promise.all([
        sh(`sha256sum < ${q(m2.mnt)}/again.bin`),
        sh(`sha256sum < ${q(m3.mnt)}/again.bin`),
      ]);
      expect(a.out.split(' ')[0]).toBe(sha256(data));
      expect(b.out.split(' ')[0]).toBe(sha256(data));
      // by one of the two mounts, or both when they reach a hole at once
      expect(proxy.counts.downloadBytes - first).toBeLessThanOrEqual(2 * skipped);
      if (skipped === 0) expect(proxy.counts.downloadBytes - first).toBe(0);
      expect((await m2.unmount()).code).toBe(0);
      expect((await m3.unmount()).code).toBe(0);
      console.log(
        `remount: first read downloaded ${first} bytes (${skipped} not written to the disk cache), the reads after the remount ${proxy.counts.downloadBytes - first}`,
      );
    } finally {
      await proxy.close();
    }
  });

  it('a mount killed (kill -9) while it writes the disk cache leaves nothing that a later mount serves wrong', async () => {
    const repo = ctx.repos.Cached;
    const data = randomBytes(64 * MiB);
    await seed(repo, '/', { 'crash.bin': data });
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 2 });
    const via = { ...ctx.server, url: proxy.url };
    proxy.setMode('clean');
    const cacheDir = path.join(scratchDir(), 'cache-crash');
    try {
      const m1 = await mountLibrary(via, { library: 'Cached', cacheDir });
      await dropCaches();
      // a quarter read, its chunks recorded (their markers follow within a second); then half, and the
      // process dies while the stream's readahead is still being written to the cache, markers pending
      await sh(`head -c ${16 * MiB} ${q(m1.mnt)}/crash.bin > /dev/null`);
      await sleep(2500);
      await sh(`dd if=${q(m1.mnt)}/crash.bin of=/dev/null bs=1M skip=16 count=16 2>/dev/null`);
      await m1.kill9();
      await run('fusermount', ['-uz', m1.mnt], { allowFail: true });
      const blocks = path.join(cacheDir, (await readdir(cacheDir))[0], 'blocks');
      expect((await readdir(blocks)).length).toBeGreaterThan(0);

      await dropCaches();
      const before = proxy.counts.downloadBytes;
      const m2 = await mountLibrary(via, { library: 'Cached', cacheDir });
      const copy = path.join(ctx.src, 'crash-copy.bin');
      await sh(`cat ${q(m2.mnt)}/crash.bin > ${q(copy)}`);
      expect(await sha256File(copy)).toBe(sha256(await remoteBytes(ctx.api, repo, '/crash.bin')));
      expect(await sha256File(copy)).toBe(sha256(data));
      const fetched = proxy.counts.downloadBytes - before;
      // part of it came from the chunks the killed mount had recorded, the rest from the server
      expect(fetched).toBeGreaterThan(0);
      expect(fetched).toBeLessThan(data.length);
      console.log(`kill -9 mid-write: the remount downloaded ${fetched} of ${data.length} bytes`);
      expect((await m2.unmount()).code).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a file read fully once is readable after a remount while the server is down, from the disk cache', async () => {
    const repo = ctx.repos.Cached;
    const data = randomBytes(20 * MiB + 7);
    await ctx.api.mkdir(repo, '/off');
    await seed(repo, '/off', { 'away.bin': data });
    const cacheDir = path.join(scratchDir(), 'cache-offline');
    const m1 = await mountLibrary(ctx.server, { library: 'Cached', cacheDir });
    // one pass: chunks the disk skipped while behind (a busy machine) are still in memory and written at unmount
    await dropCaches();
    await sh(`cat ${q(m1.mnt)}/off/away.bin > /dev/null`);
    expect((await m1.unmount()).code).toBe(0);

    const m2 = await mountLibrary(ctx.server, { library: 'Cached', cacheDir, extraArgs: ['--timeout', '3'] });
    await sh(`ls -l ${q(m2.mnt)}/off`); // the listing (with the file's id) is known before the server goes
    await ctx.server.halt();
    let back = false;
    try {
      await dropCaches();
      const r = await sh(`sha256sum < ${q(m2.mnt)}/off/away.bin`, { allowFail: true, timeoutMs: 60_000 });
      expect(r.code, r.err).toBe(0);
      expect(r.out.split(' ')[0]).toBe(sha256(data));
      const st = JSON.parse(
        (await run(process.execPath, [CLI, 'status', m2.mnt, '--json'], { env: env(), timeoutMs: 10_000 })).out,
      ) as { reader: { diskChunks: number; bytesFetched: number } }[];
      expect(st[0].reader.bytesFetched).toBe(0);
      expect(st[0].reader.diskChunks).toBeGreaterThanOrEqual(161); // every chunk of it
      await ctx.server.restart({ samePort: true });
      back = true;
    } finally {
      if (!back) await ctx.server.restart({ samePort: true });
    }
    expect((await m2.unmount()).code).toBe(0);
  });
});

describe('reading by block', () => {
  it('a 40 MiB file another client changed in one block: the re-read downloads under 2 blocks, after a remount too', async () => {
    const repo = ctx.repos.Cached;
    const name = 'byblock.bin';
    const data = randomBytes(40 * MiB);
    await seed(repo, '/', { [name]: data });
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 5 });
    const via = { ...ctx.server, url: proxy.url };
    proxy.setMode('clean');
    const cacheDir = path.join(scratchDir(), 'cache-byblock');
    /** another client rewrites 1 MiB at `at` (one 8 MiB block of the server's cut) */
    const change = async (from: Buffer, at: number) => {
      const next = Buffer.from(from);
      randomBytes(MiB).copy(next, at);
      await seed(repo, '/', { [name]: next });
      return next;
    };
    /** the bytes the mount downloads for one whole read, checked against what the API returns */
    const reread = async (mnt: string, want: Buffer) => {
      await dropCaches();
      const before = proxy.counts.downloadBytes;
      const sum = (await sh(`sha256sum < ${q(mnt)}/${name}`)).out.split(' ')[0];
      const got = proxy.counts.downloadBytes - before;
      expect(sum).toBe(sha256(await remoteBytes(ctx.api, repo, `/${name}`)));
      expect(sum).toBe(sha256(want));
      return got;
    };
    try {
      const m1 = await mountLibrary(via, { library: 'Cached', cacheDir, dirCacheTime: 1 });
      expect(await reread(m1.mnt, data)).toBeGreaterThanOrEqual(data.length);
      const v2 = await change(data, 20 * MiB);
      // the mount lists the new version (its listing lives 1 s)
      const id2 = (await ctx.api.fileDetail(repo, `/${name}`)).id;
      for (let i = 0; i < 100; i++) {
        const r = await run('getfattr', ['--only-values', '-n', 'user.seafile.id', `${m1.mnt}/${name}`], {
          allowFail: true,
        });
        if (r.out.trim() === id2) break;
        await sleep(100);
      }
      const same = await reread(m1.mnt, v2);
      expect(same).toBeLessThan(16 * MiB);
      expect((await m1.unmount()).code).toBe(0);

      // changed again while no mount runs: the next mount takes the other blocks from the disk cache
      const v3 = await change(v2, 36 * MiB);
      const m2 = await mountLibrary(via, { library: 'Cached', cacheDir });
      const after = await reread(m2.mnt, v3);
      expect(after).toBeLessThan(16 * MiB);
      expect((await m2.unmount()).code).toBe(0);
      console.log(
        `by block: one 8 MiB block of 40 MiB changed, re-read downloaded ${same} B; after a remount ${after} B`,
      );
    } finally {
      await proxy.close();
    }
  });
});
