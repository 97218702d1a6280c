// A tree walked again (ls -lR) through a real mount: what it costs in server
// requests (counted by a proxy between the mount and the server) and in calls
// into the mount (`seafs status --json`). The kernel keeps attributes and
// names for its share of --dir-cache-time, so a second walk within it is
// answered by the kernel, with one call per folder for its listing (the
// kernel never keeps those) and none per file, and the mount answers those
// from its listings without asking the server.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { mountLibrary, run, sleep, testEnv } from '../helpers/mount.js';
import { CLI, uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['Walks']);
const FOLDERS = 12;
const FILES = 8;

interface Status {
  ops: Record<string, number>;
  meta: { listRequests: number };
}

async function status(mnt: string): Promise<Status> {
  const r = await run(process.execPath, [CLI, 'status', mnt, '--json'], { env: testEnv(), timeoutMs: 10_000 });
  return (JSON.parse(r.out) as Status[])[0];
}

describe('a tree walked again', () => {
  it('a second ls -lR within the cache time makes no request and one call per folder, none per file', async () => {
    const repo = ctx.repos.Walks;
    for (let d = 0; d < FOLDERS; d++) {
      const dir = `/tree/d${d}`;
      await ctx.api.mkdir(repo, dir, { createParents: true });
      const files: Record<string, string> = {};
      for (let f = 0; f < FILES; f++) files[`f${f}.txt`] = `folder ${d} file ${f}\n`.repeat(f + 1);
      const up = await uploadTo(await ctx.api.uploadLink(repo, dir), dir, files);
      expect(up.status).toBe(200);
    }
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 3 });
    try {
      proxy.setMode('clean');
      // 120 s: the kernel keeps 60 of them, far more than the walks take however busy the machine
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Walks', dirCacheTime: 120 });
      const tree = path.join(m.mnt, 'tree');
      const s0 = await status(m.mnt);
      const r0 = proxy.counts.requests;
      const cold = await run('ls', ['-lR', tree]);
      const s1 = await status(m.mnt);
      const r1 = proxy.counts.requests;
      // longer than the 2 s the kernel kept before --attr-timeout became a share of --dir-cache-time
      await sleep(3000);
      const warm = await run('ls', ['-lR', tree]);
      const s2 = await status(m.mnt);
      const r2 = proxy.counts.requests;

      expect(cold.out.split('\n').filter((l) => l.startsWith('-'))).toHaveLength(FOLDERS * FILES);
      expect(warm.out).toBe(cold.out);
      // cold: one listing per folder (the tree's folders, /tree, and the root at most), nothing else
      const coldListings = s1.meta.listRequests - s0.meta.listRequests;
      expect(coldListings).toBeGreaterThanOrEqual(FOLDERS + 1);
      expect(coldListings).toBeLessThanOrEqual(FOLDERS + 2);
      expect(r1 - r0).toBe(coldListings);
      // warm: nothing asked of the server
      expect(r2 - r1).toBe(0);
      expect(s2.meta.listRequests - s1.meta.listRequests).toBe(0);
      // and into the mount: each folder's listing, and its own attributes (a readdir makes the kernel forget a
      // folder's access time), never a file's
      const ops = (k: string) => (s2.ops[k] ?? 0) - (s1.ops[k] ?? 0);
      expect(ops('readdir')).toBe(FOLDERS + 1);
      expect(ops('getattr')).toBeLessThanOrEqual(FOLDERS + 3);
      // the cold walk made one getattr per file and folder at least
      expect((s1.ops.getattr ?? 0) - (s0.ops.getattr ?? 0)).toBeGreaterThanOrEqual(FOLDERS * (FILES + 1));
      expect((await m.unmount()).code).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});
