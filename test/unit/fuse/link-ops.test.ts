// readlink and symlink as fuse-native calls them: integer statuses, the target as a string; symlink's
// first argument is the target (kept as given), its second the path (NFC). Without --links neither is
// offered, so the kernel answers ENOSYS itself, as before links existed.
import { describe, expect, it } from 'vitest';
import { makeOps } from '../../../src/fuse/ops.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { vfsOnLibrary } from '../../helpers/fake-api.js';

const call = (op: (...a: unknown[]) => void, ...args: unknown[]) =>
  new Promise<unknown[]>((r) => op(...args, (...res: unknown[]) => r(res)));

describe('fuse link operations', () => {
  const cleanups = cleanupAfterEach();

  it('symlink then readlink, with integer statuses', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    const ops = makeOps(vfs, {});
    const decomposed = 'cafe\u0301';
    expect(await call(ops.symlink, `../${decomposed}`, `/${decomposed}`)).toEqual([0]);
    // the path is stored in NFC, the target byte for byte
    expect(await call(ops.readlink, '/caf\u00e9')).toEqual([0, `../${decomposed}`]);
    const [code, attr] = await call(ops.getattr, '/caf\u00e9');
    expect(code).toBe(0);
    expect((attr as { mode: number }).mode).toBe(0o120777);
    expect(await call(ops.readlink, '/missing')).toEqual([-2]);
    expect(await call(ops.symlink, 'x', '/caf\u00e9')).toEqual([-17]);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/caf\u00e9.rclonelink')?.toString()).toBe(`../${decomposed}`);
  });

  it('without --links: no readlink or symlink operation', async () => {
    const { vfs } = await vfsOnLibrary(cleanups);
    const ops = makeOps(vfs, {});
    expect(ops.symlink).toBeUndefined();
    expect(ops.readlink).toBeUndefined();
    expect(ops.getattr).toBeDefined();
  });
});
