// A file manager opening a folder: it reads the first 4 KiB of every file to
// tell its type. Through a real mount on a fresh cache, counted by a proxy in
// front of the server: each sniff downloads one chunk (128 KiB), not the
// readahead a sequential reader gets; reading one of the files on to its end
// still brings all of it, right.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../helpers/api-check.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { mountLibrary, q, sh } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Sniffed']);
const MiB = 1024 * 1024;

describe('a file manager sniffing a folder', () => {
  it('the first 4 KiB of each of 20 files of 4 MiB download at most one 128 KiB chunk per file', async () => {
    const repo = ctx.repos.Sniffed;
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 20; i++) files[`photo${i}.raw`] = randomBytes(4 * MiB);
    await ctx.api.mkdir(repo, '/folder');
    const r = await uploadTo(await ctx.api.uploadLink(repo, '/folder'), '/folder', files);
    expect(r.status, r.text).toBe(200);
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 7 });
    proxy.setMode('clean');
    try {
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Sniffed' });
      const dir = `${m.mnt}/folder`;
      const before = proxy.counts.downloadBytes;
      // as GIO does: open, read the head, close, file after file
      const heads = await sh(`cd ${q(dir)} && for f in *; do head -c 4096 "$f" | sha256sum; done`);
      const sniffed = proxy.counts.downloadBytes - before;
      const names = Object.keys(files).sort();
      expect(heads.out.trim().split('\n')).toEqual(names.map((n) => `${sha256(files[n].subarray(0, 4096))}  -`));
      console.log(`20 sniffs of 4 KiB: ${(sniffed / 1024).toFixed(0)} KiB downloaded`);
      expect(sniffed).toBeGreaterThanOrEqual(20 * 4096);
      // (a few bytes more: the body of an error answer, e.g. the direct download this server lacks)
      expect(sniffed).toBeLessThanOrEqual(20 * 128 * 1024 + 4096);
      // a reader that keeps going gets the whole file
      const whole = await sh(`sha256sum < ${q(dir)}/photo3.raw`);
      expect(whole.out.split(' ')[0]).toBe(sha256(files['photo3.raw']));
      expect((await m.unmount()).code).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});
