import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import type { ApiError } from '../../../src/client/errors.js';
import { errnoOf } from '../../../src/vfs/errors.js';
import { apiError, expectErrno, FakeApi, makeVfs, writeWhole } from '../../helpers/fake-api.js';

describe('vfs errno', () => {
  const cleanups = cleanupAfterEach();

  it('maps API failures to errno names', () => {
    const cases: [ApiError, string][] = [
      [apiError('forbidden', 403, 'x'), 'EACCES'],
      [apiError('unauthorized', 401, 'x'), 'EACCES'],
      [apiError('not_found', 404, 'x'), 'ENOENT'],
      [apiError('quota', 443, 'x'), 'ENOSPC'],
      [apiError('invalid_name', 400, 'x'), 'EINVAL'],
      [apiError('server', 500, 'x'), 'EIO'],
      [apiError('network', 0, 'x'), 'EIO'],
      [apiError('timeout', 0, 'x'), 'ETIMEDOUT'],
    ];
    for (const [e, code] of cases) expect(errnoOf(e)).toBe(code);
    expect(errnoOf(new Error('boom'))).toBe('EIO');
  });

  it('answers POSIX errors for namespace operations', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/dir/sub');
    api.putDir(repo, '/y');
    api.putFile(repo, '/file.txt', 'x');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    await expectErrno(vfs.getattr('/missing'), 'ENOENT');
    await expectErrno(vfs.getattr('/file.txt/below'), 'ENOTDIR');
    await expectErrno(vfs.readdir('/file.txt'), 'ENOTDIR');
    await expectErrno(vfs.mkdir('/dir', 0o755), 'EEXIST');
    await expectErrno(vfs.rmdir('/dir'), 'ENOTEMPTY');
    await expectErrno(vfs.rmdir('/file.txt'), 'ENOTDIR');
    await expectErrno(vfs.unlink('/dir'), 'EISDIR');
    await expectErrno(vfs.open('/dir', FC.O_RDONLY), 'EISDIR');
    await expectErrno(vfs.open('/missing', FC.O_RDONLY), 'ENOENT');
    await expectErrno(vfs.create('/' + 'n'.repeat(256), 0o644), 'ENAMETOOLONG');
    await expectErrno(vfs.mkdir('/a\ufffdb', 0o755), 'EINVAL');
    await expectErrno(vfs.rename('/dir', '/dir/sub/inside'), 'EINVAL');
    await vfs.rmdir('/dir/sub');
    await vfs.rmdir('/dir');
    expect(api.names(repo, '/').sort()).toEqual(['file.txt', 'y']);
    // a server failure is EIO, a refusal EACCES (mkdir answers at once: a folder's creation
    // fails on the server for the fsync of a file inside it, test/unit/vfs/mkdir-local.test.ts)
    api.failNext.set('deleteDir', [apiError('server', 500, 'deleteDir'), apiError('forbidden', 403, 'deleteDir')]);
    await expectErrno(vfs.rmdir('/y'), 'EIO');
    await expectErrno(vfs.rmdir('/y'), 'EACCES');
  });

  it('refuses writes with EROFS on a read-only mount and on an r library', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('shared', { permission: 'r', type: 'srepo' });
    api.putFile(repo, '/f', 'data');
    const { vfs, cleanup } = await makeVfs(api, { library: 'shared' });
    cleanups.push(cleanup);
    await expectErrno(vfs.create('/new', 0o644), 'EROFS');
    await expectErrno(vfs.open('/f', FC.O_WRONLY), 'EROFS');
    await expectErrno(vfs.mkdir('/d', 0o755), 'EROFS');
    await expectErrno(vfs.unlink('/f'), 'EROFS');
    await expectErrno(vfs.rename('/f', '/g'), 'EROFS');
    await expectErrno(vfs.truncate('/f', 0), 'EROFS');
    await expectErrno(vfs.access('/f', FC.W_OK), 'EROFS');
    expect((await vfs.getattr('/f')).mode & 0o222).toBe(0);

    const api2 = new FakeApi();
    api2.addLibrary('mine');
    const ro = await makeVfs(api2, { library: 'mine', readOnly: true });
    cleanups.push(ro.cleanup);
    await expectErrno(ro.vfs.create('/new', 0o644), 'EROFS');
    await expectErrno(ro.vfs.mkdir('/d', 0o755), 'EROFS');
  });

  it('names an unknown library', async () => {
    const api = new FakeApi();
    api.addLibrary('lib');
    await expect(makeVfs(api, { library: 'nope' })).rejects.toThrow(/nope/);
  });

  it('statfs reports the quota in 1 MiB blocks', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.quotaTotal = 10 * 1024 * 1024 * 1024 * 1024; // 10 TiB: overflows 32-bit 4 KiB blocks
    api.putFile(repo, '/f', Buffer.alloc(3 * 1024 * 1024));
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    const s = await vfs.statfs('/');
    expect(s.bsize).toBe(1024 * 1024);
    expect(s.blocks).toBe(10 * 1024 * 1024);
    expect(s.bfree).toBe(10 * 1024 * 1024 - 3);
    await writeWhole(vfs, '/g', 'x');
  });
});
