// Owners and modes: every entry shows the mount's --uid/--gid and 777/666 less
// --umask (write bits off where the mount or library is read-only); chmod and
// chown succeed and change nothing (the server keeps neither), as in rclone mount.
import { constants as C } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { AttrShaper } from '../../../src/vfs/common/stat-attrs.js';
import type { VfsError } from '../../../src/vfs/errors.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

const perms = (mode: number) => (mode & 0o7777).toString(8);

describe('attributes', () => {
  it('shows 755 folders and 644 files by default, without write bits when read-only', () => {
    const a = new AttrShaper(1000, 100);
    expect(perms(a.dir(0, false).mode)).toBe('755');
    expect(perms(a.file(1, 0, false).mode)).toBe('644');
    expect(perms(a.dir(0, true).mode)).toBe('555');
    expect(perms(a.file(1, 0, true).mode)).toBe('444');
    expect(a.dir(0, false).mode & C.S_IFMT).toBe(C.S_IFDIR);
    expect(a.file(1, 0, false).mode & C.S_IFMT).toBe(C.S_IFREG);
    expect([a.file(1, 0, false).uid, a.file(1, 0, false).gid]).toEqual([1000, 100]);
  });

  it('takes the umask away from 777 and 666', () => {
    const a = new AttrShaper(1, 2, 0o027);
    expect(perms(a.dir(0, false).mode)).toBe('750');
    expect(perms(a.file(1, 0, false).mode)).toBe('640');
    expect(perms(a.file(1, 0, true).mode)).toBe('440');
    const open = new AttrShaper(1, 2, 0);
    expect(perms(open.dir(0, false).mode)).toBe('777');
    expect(perms(open.file(1, 0, false).mode)).toBe('666');
    const closed = new AttrShaper(1, 2, 0o077);
    expect(perms(closed.dir(0, false).mode)).toBe('700');
    expect(perms(closed.file(1, 0, false).mode)).toBe('600');
  });
});

describe('owners and modes through the vfs', () => {
  const cleanups = cleanupAfterEach();

  it('shows --uid, --gid and --umask on the root, folders and files of every library', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/d');
    api.putFile(repo, '/d/f.txt', 'x');
    api.addLibrary('shared-ro', { permission: 'r' });
    const { vfs, cleanup } = await makeVfs(api, { uid: 1234, gid: 2345, umask: 0o027 });
    cleanups.push(cleanup);
    for (const [p, want] of [
      ['/lib', '750'],
      ['/lib/d', '750'],
      ['/lib/d/f.txt', '640'],
      ['/shared-ro', '550'],
    ] as const) {
      const a = await vfs.getattr(p);
      expect([a.uid, a.gid, perms(a.mode)], p).toEqual([1234, 2345, want]);
    }
    expect(perms((await vfs.getattr('/')).mode)).toBe('550');
  });

  it('accepts chmod and chown and changes nothing; a missing path is ENOENT', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/f.sh', '#!/bin/sh\n');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', uid: 10, gid: 20 });
    cleanups.push(cleanup);
    const before = await vfs.getattr('/f.sh');
    await vfs.chmod('/f.sh', 0o755);
    await vfs.chown('/f.sh', 0, 0);
    const after = await vfs.getattr('/f.sh');
    expect([after.uid, after.gid, perms(after.mode)]).toEqual([before.uid, before.gid, '644']);
    const e = await vfs.chmod('/nope', 0o644).catch((x: unknown) => x);
    expect((e as VfsError).code).toBe('ENOENT');
  });
});
