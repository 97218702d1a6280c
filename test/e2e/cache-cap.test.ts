// The cache dir stays within --cache-max-size while files are copied onto the
// mount faster than they upload (a slow uplink: a proxy that takes request
// bodies at 32 MB/s): writes wait for uploads to make room, a single file
// larger than the limit is still copied whole. And a cache dir on a full disk
// (a tmpfs of 24 MiB): a copy of files that each fit goes through as uploads
// free room, a file that cannot fit fails with ENOSPC, what reached the server
// of it is an exact prefix, nothing closed before is lost, and files that fit
// go through again right after. Every file is read back through the API.
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, sha256 } from '../helpers/api-check.js';
import { mountLibrary, q, scratchDir, sh } from '../helpers/mount.js';
import { startSlowProxy } from '../helpers/slow-proxy.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const MiB = 1024 * 1024;
const ctx = setupE2E(['Capped', 'Full']);

/** allocated bytes under `dir`, as du counts them (files that go meanwhile are skipped) */
async function dirBytes(dir: string): Promise<number> {
  let sum = 0;
  for (const n of await readdir(dir).catch(() => [] as string[])) {
    const st = await lstat(path.join(dir, n)).catch(() => null);
    if (!st) continue;
    sum += st.blocks * 512;
    if (st.isDirectory()) sum += await dirBytes(path.join(dir, n));
  }
  return sum;
}

/** samples dirBytes(dir) every 50 ms until stop() resolves with the peak */
function sampleSize(dir: string): { stop(): Promise<number> } {
  let peak = 0;
  let on = true;
  const loop = (async () => {
    while (on) {
      peak = Math.max(peak, await dirBytes(dir));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      return Math.max(peak, await dirBytes(dir));
    },
  };
}

/** `n` files of `size` random bytes in a new folder `name` of the scratch folder; their contents */
async function sources(name: string, n: number, size: number): Promise<Map<string, Buffer>> {
  const dir = path.join(ctx.src, name);
  await mkdir(dir, { recursive: true });
  const out = new Map<string, Buffer>();
  for (let i = 0; i < n; i++) {
    const b = randomBytes(size);
    await writeFile(path.join(dir, `f${i}.bin`), b);
    out.set(`f${i}.bin`, b);
  }
  return out;
}

async function expectOnServer(repo: string, dir: string, files: Map<string, Buffer>): Promise<void> {
  for (const [name, b] of files) {
    const got = await remoteBytes(ctx.api, repo, `${dir}/${name}`);
    expect(got.length, name).toBe(b.length);
    expect(sha256(got), name).toBe(sha256(b));
  }
}

describe('--cache-max-size holds while copies outrun uploads', () => {
  it('10 files of 16 MiB under a 32 MiB limit: the cache dir stays within it; a 48 MiB file still goes', async () => {
    const proxy = await startSlowProxy(ctx.server.url, 32 * MiB);
    try {
      const m = await mountLibrary(
        { ...ctx.server, url: proxy.url },
        {
          library: 'Capped',
          extraArgs: ['--cache-max-size', '32'],
        },
      );
      const files = await sources('many', 10, 16 * MiB);
      const size = sampleSize(m.cacheDir);
      await sh(`cp -r ${q(path.join(ctx.src, 'many'))} ${q(m.mnt)}/many`);
      const peak = await size.stop();
      // slack: the journal and listings, and the writes FUSE hands over at once (cp: one at a time)
      expect(peak / MiB).toBeLessThanOrEqual(32 + 4);
      // one file larger than the limit is copied whole (its temp file alone exceeds the limit)
      const big = randomBytes(48 * MiB);
      await writeFile(path.join(ctx.src, 'big.bin'), big);
      await sh(`cp ${q(path.join(ctx.src, 'big.bin'))} ${q(m.mnt)}/big.bin`);
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      await expectOnServer(ctx.repos.Capped, '/many', files);
      await expectOnServer(ctx.repos.Capped, '', new Map([['big.bin', big]]));
    } finally {
      await proxy.close();
    }
  });
});

describe('a cache dir on a full disk', () => {
  it('files that fit go through as uploads free room; one that cannot fails with ENOSPC and loses nothing before it', async () => {
    const disk = path.join(scratchDir(), 'small-disk');
    await mkdir(disk, { recursive: true });
    await sh(`mount -t tmpfs -o size=24m tmpfs ${q(disk)}`);
    const proxy = await startSlowProxy(ctx.server.url, 32 * MiB);
    try {
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Full', cacheDir: disk });
      try {
        // 48 MiB in files of 4 MiB onto 24 MiB: the copy outruns the uploads and fills the disk
        const files = await sources('fits', 12, 4 * MiB);
        const cp = await sh(`cp -r ${q(path.join(ctx.src, 'fits'))} ${q(m.mnt)}/fits`, { allowFail: true });
        expect(cp.code, cp.err).toBe(0);
        // 40 MiB in one file cannot fit: ENOSPC, said cleanly
        const big = randomBytes(40 * MiB);
        await writeFile(path.join(ctx.src, 'big.bin'), big);
        const bad = await sh(`cp ${q(path.join(ctx.src, 'big.bin'))} ${q(m.mnt)}/big.bin`, { allowFail: true });
        expect(bad.code).not.toBe(0);
        expect(bad.err).toMatch(/No space left on device/);
        // right after, with the disk still full of what was written of it: files that fit go through again
        const again = await sources('again', 6, 4 * MiB);
        const cp2 = await sh(`cp -r ${q(path.join(ctx.src, 'again'))} ${q(m.mnt)}/again`, { allowFail: true });
        expect(cp2.code, cp2.err).toBe(0);
        const un = await m.unmount();
        expect(un.code, un.out + un.err).toBe(0);
        await expectOnServer(ctx.repos.Full, '/fits', files);
        await expectOnServer(ctx.repos.Full, '/again', again);
        // what reached the server of the big file is an exact prefix of it
        const got = await remoteBytes(ctx.api, ctx.repos.Full, '/big.bin');
        expect(got.length).toBeLessThan(big.length);
        expect(sha256(got)).toBe(sha256(big.subarray(0, got.length)));
      } finally {
        await m.unmount();
      }
    } finally {
      await proxy.close();
      // the mount is gone (unmounted above, or by the cleanup of a failed start): the tmpfs goes too
      const u = await sh(`umount ${q(disk)}`, { allowFail: true });
      if (u.code !== 0) await sh(`umount -l ${q(disk)}`, { allowFail: true });
    }
  });
});
