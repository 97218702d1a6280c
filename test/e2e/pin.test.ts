// Pinned files through real mounts (src/vfs/pin/): `seafs pin` of a folder
// brings every file of it into the disk cache in the background, and with
// the server gone each of them reads back as the API had it; pinning more
// than the cache may hold is refused (a line from `seafs pin`, ENOSPC from
// setfattr); a mount killed (kill -9) in the middle of pinned downloads (the
// server stopped mid-answer) goes on after a remount from where each file
// stopped, and loses nothing.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, sha256 } from '../helpers/api-check.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { CLI, mountLibrary, q, run, scratchDir, sh, sleep, type Mount } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Pins']);
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });
const MiB = 1024 * 1024;
const seafs = (args: string[]) => run(process.execPath, [CLI, ...args], { env: env(), allowFail: true });

/** Writes `files` (paths under `dir`) on the server through upload links, folders first. */
async function seed(dir: string, files: Record<string, Buffer>): Promise<void> {
  const repo = ctx.repos.Pins;
  const byDir = new Map<string, Record<string, Buffer>>();
  for (const [p, data] of Object.entries(files)) {
    const d = path.posix.join(dir, path.posix.dirname(p));
    byDir.set(d, { ...byDir.get(d), [path.posix.basename(p)]: data });
  }
  for (const [d, set] of byDir) {
    await ctx.api.mkdir(repo, d, { createParents: true }).catch(() => {});
    const r = await uploadTo(await ctx.api.uploadLink(repo, d), d, set, { replace: true });
    expect(r.status, r.text).toBe(200);
  }
}

type PinState = { files: number; doneFiles: number; roots: string[]; fetchedBytes: number };
async function pinState(m: Mount): Promise<PinState> {
  const r = await seafs(['status', m.mnt, '--json']);
  return (JSON.parse(r.out) as { pins: PinState }[])[0].pins;
}

async function waitPinned(m: Mount, files: number, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const s = await pinState(m);
    if (s.files === files && s.doneFiles === files) return;
    if (Date.now() > end) throw new Error(`pins not downloaded in time: ${JSON.stringify(s)}\n${m.output()}`);
    await sleep(200);
  }
}

const xattr = async (file: string, name: string) =>
  (await run('getfattr', ['--only-values', '-n', name, file], { allowFail: true })).out;

describe('seafs pin', () => {
  it('a pinned folder is downloaded in the background and every file of it reads with the server stopped', async () => {
    const repo = ctx.repos.Pins;
    const files: Record<string, Buffer> = {
      'big.bin': randomBytes(6 * MiB + 11),
      'notes.txt': Buffer.from('pinned notes\n'),
      'empty.txt': Buffer.alloc(0),
      'a/b/deep.bin': randomBytes(700 * 1024),
      'a/second.bin': randomBytes(1 * MiB),
    };
    await seed('/trip', files);
    await seed('/', { 'other.bin': randomBytes(300 * 1024), 'huge.bin': randomBytes(9 * MiB) });
    // what the API has: the reference for every read below
    const want = new Map<string, string>();
    for (const p of Object.keys(files)) want.set(p, sha256(await remoteBytes(ctx.api, repo, `/trip/${p}`)));
    const m = await mountLibrary(ctx.server, { library: 'Pins', extraArgs: ['--cache-max-size', '16'] });
    const trip = path.join(m.mnt, 'trip');
    const pinned = await seafs(['pin', trip]);
    expect(pinned.code, pinned.err).toBe(0);
    expect(pinned.out).toMatch(/trip: pinned, 5 file\(s\), 7\.7 MiB; downloading in the background/);
    await waitPinned(m, 5);
    expect(await xattr(trip, 'user.seafile.pinned')).toBe('1');
    expect(await xattr(path.join(trip, 'a/b/deep.bin'), 'user.seafile.status')).toBe('synced, pinned');
    expect(await xattr(trip, 'user.seafile.status')).toBe('synced, pinned');
    expect(await xattr(path.join(m.mnt, 'other.bin'), 'user.seafile.status')).toBe('synced');
    const st = await seafs(['status', m.mnt]);
    expect(st.out).toMatch(/pinned: \/trip: 5 file\(s\), 7\.7 MiB; all on this machine/);
    // 14.4 MiB may be pinned (90% of 16): 9 MiB more does not fit, said by both ways of pinning
    const huge = path.join(m.mnt, 'huge.bin');
    const refused = await seafs(['pin', huge]);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(
      /^seafs: cannot pin .*huge\.bin: it needs 9\.0 MiB more on disk, pinned files take 7\.7 MiB already, and at most 14\.4 MiB may be pinned/,
    );
    const set = await run('setfattr', ['-n', 'user.seafile.pinned', '-v', '1', huge], { allowFail: true });
    expect(set.code).not.toBe(0);
    expect(set.err).toMatch(/No space left on device/);
    expect(await xattr(huge, 'user.seafile.pinned')).toBe('0');

    await ctx.server.halt();
    try {
      await sh('sync; echo 3 > /proc/sys/vm/drop_caches');
      for (const [p, sum] of want) {
        const r = await sh(`sha256sum < ${q(path.join(trip, p))}`, { allowFail: true, timeoutMs: 20_000 });
        expect(r.code, `${p}: ${r.err}`).toBe(0);
        expect(r.out.split(' ')[0], p).toBe(sum);
      }
    } finally {
      await ctx.server.restart({ samePort: true });
    }
    expect((await seafs(['unpin', trip])).out).toMatch(/trip: unpinned \(5 file\(s\)/);
    expect(await xattr(trip, 'user.seafile.pinned')).toBe('0');
    expect((await m.unmount()).code).toBe(0);
  });

  it('a mount killed (kill -9) in the middle of pinned downloads goes on after a remount and loses nothing', async () => {
    const repo = ctx.repos.Pins;
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 3; i++) files[`part${i}.bin`] = randomBytes(12 * MiB + i);
    await seed('/kill', files);
    const total = Object.values(files).reduce((a, b) => a + b.length, 0);
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 3 });
    proxy.setMode('clean');
    const via = { ...ctx.server, url: proxy.url };
    const cacheDir = path.join(scratchDir(), 'cache-pin-kill');
    let stopped = false;
    try {
      const m1 = await mountLibrary(via, { library: 'Pins', cacheDir });
      // setfattr, as a script would; once 12 MiB came (three files under way, 4 MiB each or so) the server
      // stops mid-answer (SIGSTOP), what reached the mount is written, and the mount dies
      await sh(`setfattr -n user.seafile.pinned -v 1 ${q(path.join(m1.mnt, 'kill'))}`);
      for (let t = 0; proxy.counts.downloadBytes < 12 * MiB && t < 1000; t++) await sleep(5);
      process.kill(ctx.server.pid, 'SIGSTOP');
      stopped = true;
      const first = proxy.counts.downloadBytes;
      expect(first).toBeGreaterThanOrEqual(12 * MiB);
      expect(first).toBeLessThan(total);
      await sleep(1500);
      await m1.kill9();
      await run('fusermount', ['-uz', m1.mnt], { allowFail: true });
      process.kill(ctx.server.pid, 'SIGCONT');
      stopped = false;

      const m2 = await mountLibrary(via, { library: 'Pins', cacheDir });
      expect(await xattr(path.join(m2.mnt, 'kill'), 'user.seafile.pinned')).toBe('1');
      await waitPinned(m2, 3);
      const again = (await pinState(m2)).fetchedBytes;
      // each file goes on from what the first mount had marked (every 2 MiB of a file)
      expect(m2.output()).toMatch(/pinned \/kill\/part\d\.bin: resuming its download \(\d+ of 9\d chunks here\)/);
      expect(again, m2.output()).toBeLessThanOrEqual(total - 4 * MiB);
      console.log(
        `pin kill -9: the first mount had ${first} of ${total} bytes through the proxy, the remount fetched ${again}`,
      );
      await proxy.close().catch(() => {});
      await sh('sync; echo 3 > /proc/sys/vm/drop_caches');
      for (const [name, data] of Object.entries(files)) {
        const r = await sh(`sha256sum < ${q(path.join(m2.mnt, 'kill', name))}`, { allowFail: true });
        expect(r.code, `${name}: ${r.err}`).toBe(0);
        expect(r.out.split(' ')[0], name).toBe(sha256(await remoteBytes(ctx.api, repo, `/kill/${name}`)));
        expect(r.out.split(' ')[0], name).toBe(sha256(data));
      }
      expect((await m2.unmount()).code).toBe(0);
    } finally {
      if (stopped) process.kill(ctx.server.pid, 'SIGCONT');
      await proxy.close().catch(() => {});
    }
  });
});
