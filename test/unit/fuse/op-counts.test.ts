// The FUSE operations count their calls into an object the mount hands them
// (no module-global counters): two tables never share counts.
import { describe, expect, it } from 'vitest';
import { makeOps, type OpCounts } from '../../../src/fuse/ops.js';
import type { Vfs } from '../../../src/vfs/vfs.js';
import { VfsError } from '../../../src/vfs/errors.js';

const fakeVfs = {
  getattr: async (p: string) => {
    if (p === '/missing') throw new VfsError('ENOENT');
    return { mode: 0o40755 };
  },
  // in memory: /known; everything else waits for getattr
  getattrNow: (p: string) => (p === '/known' ? { mode: 0o100644, size: 7 } : null),
  read: () => 0,
  // /new: a name a fresh listing lacks
  absentNow: (p: string) => p === '/new',
  // fd 1: a file in memory; fd 2: a file whose write and close must wait
  writeNow: (_p: string, fd: number, _b: Buffer, len: number) => (fd === 1 ? len : Promise.resolve(len)),
  flushNow: (_p: string, fd: number) => fd === 1,
  flush: async () => {},
  release: () => {},
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
    // the two getattrs the fake cannot answer from memory waited, and are counted as such too
    expect(a).toEqual({ getattr: 2, getattrWaited: 2, read: 1 });
    expect(b).toEqual({ getattr: 1, getattrWaited: 1 });
  });

  it('answers a getattr held in memory at once, in the same turn, and counts it', () => {
    const counts: OpCounts = {};
    const ops = makeOps(fakeVfs, { counts });
    let res: unknown[] | null = null;
    ops.getattr('/known', (...r: unknown[]) => (res = r));
    expect(res).toEqual([0, { mode: 0o100644, size: 7 }]);
    expect(counts).toEqual({ getattr: 1 });
  });

  it('answers a write kept in memory, a close journaled at once, a release and a lookup of a known-absent name in the same turn', async () => {
    const counts: OpCounts = {};
    const ops = makeOps(fakeVfs, { counts });
    const got: unknown[][] = [];
    ops.getattr('/new', (...r: unknown[]) => got.push(r));
    ops.write('/f', 1, Buffer.alloc(5), 5, 0, (...r: unknown[]) => got.push(r));
    ops.flush('/f', 1, (...r: unknown[]) => got.push(r));
    ops.release('/f', 1, (...r: unknown[]) => got.push(r));
    expect(got).toEqual([[-2], [5], [0], [0]]); // -ENOENT, 5 bytes written, 0, 0
    // a write and a close that wait answer later, and the close is counted as one that waited
    expect(await call(ops.write, '/g', 2, Buffer.alloc(3), 3, 0)).toEqual([3]);
    expect(await call(ops.flush, '/g', 2)).toEqual([0]);
    expect(counts).toEqual({ getattr: 1, write: 2, flush: 2, flushWaited: 1, release: 1 });
  });
});
