// The extended-attribute operations as fuse-native calls them: integer
// statuses only (-61 ENODATA, -95 ENOTSUP, as Linux numbers them), a Buffer
// for a value, an array of names for a list.
import { describe, expect, it } from 'vitest';
import { makeOps } from '../../../src/fuse/ops.js';
import type { Vfs } from '../../../src/vfs/vfs.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

const call = (op: (...a: unknown[]) => void, ...args: unknown[]) =>
  new Promise<unknown[]>((r) => op(...args, (...res: unknown[]) => r(res)));

describe('fuse xattr operations', () => {
  it('answer with integer statuses, a Buffer for a value and an array of names for a list', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/f.txt', 'f');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    try {
      const logged: string[] = [];
      const ops = makeOps(vfs as Vfs, { log: (m) => logged.push(m) });
      const [code, value] = await call(ops.getxattr, '/f.txt', 'user.seafile.library', 0);
      expect(code).toBe(0);
      expect(Buffer.isBuffer(value) && value.toString()).toBe(repo);
      expect(await call(ops.getxattr, '/f.txt', 'user.nope', 0)).toEqual([-61]);
      expect(await call(ops.getxattr, '/f.txt', 'security.capability', 0)).toEqual([-61]);
      const [lcode, names] = await call(ops.listxattr, '/f.txt');
      expect(lcode).toBe(0);
      expect(names).toContain('user.seafile.status');
      expect(await call(ops.setxattr, '/f.txt', 'user.x', Buffer.from('1'), 0, 0)).toEqual([-95]);
      expect(await call(ops.removexattr, '/f.txt', 'user.seafile.id')).toEqual([-95]);
      expect(await call(ops.getxattr, '/missing', 'user.seafile.id', 0)).toEqual([-2]);
      expect(await call(ops.setxattr, '/f.txt', 'user.seafile.lock', Buffer.from('1'), 0, 0)).toEqual([0]);
      expect(api.calls.lockFile).toBe(1);
      // absent names are ordinary: nothing in the log
      expect(logged).toEqual([]);
      // --no-xattrs: the operations are left out, so the kernel answers them itself
      const off = makeOps(vfs as Vfs, { xattrs: false });
      for (const op of ['getxattr', 'listxattr', 'setxattr', 'removexattr']) expect(off[op], op).toBeUndefined();
      expect(off.getattr).toBeDefined();
    } finally {
      await cleanup();
    }
  });
});
