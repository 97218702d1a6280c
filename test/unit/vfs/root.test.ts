import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { expectErrno, FakeApi, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';

describe('vfs all-libraries mode', () => {
  const cleanups = cleanupAfterEach();

  async function setup() {
    const api = new FakeApi();
    const a = api.addLibrary('Alpha');
    const b = api.addLibrary('Beta');
    const s = api.addLibrary('Shared', { permission: 'r', type: 'srepo' });
    api.putFile(a, '/in-a.txt', 'from alpha');
    api.putFile(s, '/readme', 'read only');
    const m = await makeVfs(api, { dirCacheTimeMs: 0 });
    cleanups.push(m.cleanup);
    return { api, a, b, s, ...m };
  }

  it('lists every library as a folder and reads inside them', async () => {
    const { vfs } = await setup();
    expect((await vfs.readdir('/')).sort()).toEqual(['Alpha', 'Beta', 'Shared']);
    expect((await vfs.getattr('/Alpha')).mode & 0o040000).toBeTruthy();
    expect(await vfs.readdir('/Alpha')).toEqual(['in-a.txt']);
    expect((await readWhole(vfs, '/Alpha/in-a.txt')).toString()).toBe('from alpha');
    await expectErrno(vfs.getattr('/Nope'), 'ENOENT');
  });

  it('refuses to create, delete or rename at the root', async () => {
    const { vfs } = await setup();
    await expectErrno(vfs.mkdir('/NewLib', 0o755), 'EPERM');
    await expectErrno(vfs.create('/file', 0o644), 'EPERM');
    await expectErrno(vfs.rmdir('/Alpha'), 'EPERM');
    await expectErrno(vfs.unlink('/Alpha'), 'EPERM');
    await expectErrno(vfs.rename('/Alpha', '/Gamma'), 'EPERM');
    await expectErrno(vfs.rename('/Alpha/in-a.txt', '/x.txt'), 'EPERM');
  });

  it('moves files and folders across libraries and refuses writes to an r library', async () => {
    const { api, a, b, vfs } = await setup();
    await vfs.rename('/Alpha/in-a.txt', '/Beta/moved.txt');
    expect(api.names(a, '/')).toEqual([]);
    expect(api.content(b, '/moved.txt')!.toString()).toBe('from alpha');
    await vfs.mkdir('/Alpha/dir', 0o755);
    await writeWhole(vfs, '/Alpha/dir/f', 'dirty one');
    await vfs.drain();
    await vfs.rename('/Alpha/dir', '/Beta/dir');
    expect(api.content(b, '/dir/f')!.toString()).toBe('dirty one');
    expect(api.names(a, '/')).toEqual([]);
    await expectErrno(vfs.create('/Shared/x', 0o644), 'EROFS');
    await expectErrno(vfs.rename('/Beta/moved.txt', '/Shared/moved.txt'), 'EROFS');
  });
});
