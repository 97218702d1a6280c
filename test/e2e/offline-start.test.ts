// A mount started while the server is unreachable (issue 31, section 2): it
// mounts from what an earlier mount kept in the same cache folder (the login,
// the library list, the folder listings, the disk cache), says once that it is
// offline, serves listed folders and read files, fails a folder never listed
// with EIO at once, queues writes in the journal (a kill -9 loses none of
// them: the next mount, offline too, has them), and goes online by itself
// when the server answers: everything written lands, checked through the API.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, remoteNames, waitRemoteFile } from '../helpers/api-check.js';
import { CLI, mountLibrary, q, run, scratchDir, sh, testEnv } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Offline']);

describe('starting a mount with the server away', () => {
  it('mounts from what an earlier mount kept, queues writes, and uploads them once the server answers', async () => {
    const repo = ctx.repos.Offline;
    await ctx.api.mkdir(repo, '/docs/sub', { createParents: true });
    // far from what the first mount walks (its prefetch lists sub-folders ahead of a walk)
    await ctx.api.mkdir(repo, '/far/a/b/never', { createParents: true });
    for (const [dir, files] of [
      ['/docs', { 'a.txt': 'first a\n', 'cold.txt': 'never read\n' }],
      ['/docs/sub', { 'b.txt': 'first b\n' }],
      ['/far/a/b/never', { 'n.txt': 'never listed\n' }],
    ] as const)
      expect((await uploadTo(await ctx.api.uploadLink(repo, dir), dir, files, { replace: true })).status).toBe(200);
    const cacheDir = path.join(scratchDir(), 'cache-offline');
    const opts = { library: 'Offline', cacheDir, extraArgs: ['--timeout', '2'] };

    // an earlier mount lists and reads
    const first = await mountLibrary(ctx.server, opts);
    const F = (p: string) => q(path.join(first.mnt, p));
    await sh(`ls ${F('docs')} ${F('docs/sub')} && cat ${F('docs/a.txt')} ${F('docs/sub/b.txt')}`);
    expect((await first.unmount()).code).toBe(0);

    await ctx.server.halt();
    let back = false;
    try {
      // a mount at the same mount point that is to give up at once (the password goes in SEAFS_PASSWORD)
      const failedMount = (cache: string, password: string) =>
        run(
          process.execPath,
          [
            CLI,
            'mount',
            ctx.server.url,
            first.mnt,
            '--user',
            ctx.server.adminEmail,
            '--cache-dir',
            cache,
            '--timeout',
            '2',
          ],
          { allowFail: true, env: testEnv({ SEAFS_PASSWORD: password }), timeoutMs: 30_000 },
        );
      // no earlier mount in this cache folder: the usual error, and why it cannot start offline
      const none = await failedMount(`${cacheDir}-none`, ctx.server.adminPassword);
      expect(none.code).toBe(1);
      expect(none.err).toMatch(/cannot reach the server.*no earlier mount of this account here to start offline from/);
      // a wrong password does not open what was kept
      const wrong = await failedMount(cacheDir, 'not the password');
      expect(wrong.code).toBe(1);
      expect(wrong.err).toMatch(/password does not match/);

      const off = await mountLibrary(ctx.server, { ...opts, mountpoint: first.mnt });
      const M = (p: string) => q(path.join(off.mnt, p));
      const m0 = off;
      expect(m0.output().match(/offline: the server is unreachable/g)).toHaveLength(1);
      expect((await sh(`ls ${M('docs')}`)).out.split('\n').filter(Boolean).sort()).toEqual([
        'a.txt',
        'cold.txt',
        'sub',
      ]);
      expect((await sh(`cat ${M('docs/a.txt')} ${M('docs/sub/b.txt')}`)).out).toBe('first a\nfirst b\n');
      for (const script of [`ls ${M('far/a/b/never')}`, `cat ${M('docs/cold.txt')}`]) {
        const t0 = Date.now();
        const r = await sh(script, { allowFail: true });
        const ms = Date.now() - t0;
        console.log(`offline start: ${script.split(' ')[0]} of what was never listed/read: exit ${r.code} in ${ms} ms`);
        expect(r.err).toMatch(/Input\/output error/);
        expect(ms).toBeLessThan(5000);
      }
      await sh(
        `echo "new offline" > ${M('docs/new.txt')} && echo "second a" > ${M('docs/a.txt')} && mkdir ${M('docs/made')} && echo "in made" > ${M('docs/made/c.txt')}`,
      );
      expect((await sh(`cat ${M('docs/new.txt')} ${M('docs/a.txt')}`)).out).toBe('new offline\nsecond a\n');
      // kill -9 while offline: the next mount, offline too, has every write from the journal
      await off.kill9();
      const m = await mountLibrary(ctx.server, { ...opts, mountpoint: first.mnt });
      expect(m.output()).toMatch(/recovered \d+ file\(s\) left by an earlier mount/);
      expect((await sh(`cat ${M('docs/new.txt')} ${M('docs/a.txt')} ${M('docs/made/c.txt')}`)).out).toBe(
        'new offline\nsecond a\nin made\n',
      );

      await ctx.server.restart({ samePort: true });
      back = true;
      await waitRemoteFile(ctx.api, repo, '/docs/new.txt', Buffer.from('new offline\n'), 30_000);
      await waitRemoteFile(ctx.api, repo, '/docs/a.txt', Buffer.from('second a\n'), 30_000);
      await waitRemoteFile(ctx.api, repo, '/docs/made/c.txt', Buffer.from('in made\n'), 30_000);
      expect(m.output()).toMatch(/online: the server answers again/);
      // online again: a folder never listed is listed now
      expect((await sh(`cat ${M('far/a/b/never/n.txt')}`)).out).toBe('never listed\n');
      const un = await m.unmount();
      expect(un.code, m.output()).toBe(0);
      expect((await remoteBytes(ctx.api, repo, '/docs/sub/b.txt')).toString()).toBe('first b\n');
      expect((await remoteNames(ctx.api, repo, '/docs'))!.sort()).toEqual([
        'a.txt',
        'cold.txt',
        'made',
        'new.txt',
        'sub',
      ]);
    } finally {
      if (!back) await ctx.server.restart({ samePort: true });
    }
  }, 60_000);
});
