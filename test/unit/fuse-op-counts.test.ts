// The FUSE operations count their calls into an object the mount hands them
// (no module-global counters): two tables never share counts.
import { describe, expect, it } from 'vitest';
import { makeOps, type OpCounts } from '../../src/fuse/ops.js';
import type { Vfs } from '../../src/vfs/vfs.js';
import { VfsError } from '../../src/vfs/errors.js';

const fakeVfs = {
  getattr: async (p: string) => {
    if (p === '/missing') throw new VfsError('ENOENT');
    return { mode: 0o40755 };
  },
  // in memory: /known; everything else waits for getattr
  getattrNow: (p: string) => (p === '/known' ? { mode: 0o100644, size: 7 } : null),
  read: () => 0,
} as unknown as Vfs;

const call = (op: (...a: unknown[]) => void, ...args: unknown[]) =>
  new Promise<unknown[]>((r) => op(...args, (...res: unknown[]) => r(res)));

describe('fuse operation counters', () => {
  it('counts each call, failed ones included, into the injected object only', async () => {
    const a: OpCounts = {};
    const b: OpCounts = {};
    const opsA = makeOps(fakeVfs, { counts: a });
    const opsB = makeOps(fakeVfs, { counts: b });
    await call(opsA.getattr, '/');
    const [code] = await call(opsA.getattr, '/missing');
    expect(code).toBeLessThan(0);
    await call(opsA.read, '/f', 1, Buffer.alloc(4), 4, 0);
    await call(opsB.getattr, '/');
    expect(a).toEqual({ getattr: 2, read: 1 });
    expect(b).toEqual({ getattr: 1 });
  });

  it('answers a getattr held in memory at once, in the same turn, and counts it', () => {
    const counts: OpCounts = {};
    const ops = makeOps(fakeVfs, { counts });
    let res: unknown[] | null = null;
    ops.getattr('/known', (...r: unknown[]) => (res = r));
    expect(res).toEqual([0, { mode: 0o100644, size: 7 }]);
    expect(counts).toEqual({ getattr: 1 });
  });
});
