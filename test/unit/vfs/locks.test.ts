import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { apiError, FakeApi, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';

describe('files locked on the server', () => {
  const cleanups = cleanupAfterEach();

  async function setup() {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib' });
    cleanups.push(m.cleanup);
    api.putFile(repo, '/theirs.doc', 'locked content');
    api.putFile(repo, '/mine.doc', 'my content');
    api.setLockOwner(repo, '/theirs.doc', 'alice@example.com');
    api.setLockOwner(repo, '/mine.doc', 'me@example.com');
    return { api, repo, ...m };
  }

  it('a file locked by someone else shows without write bits and refuses writing at open', async () => {
    const { api, repo, vfs } = await setup();
    expect((await vfs.getattr('/theirs.doc')).mode & 0o777).toBe(0o444);
    await expect(vfs.open('/theirs.doc', FC.O_WRONLY)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(vfs.open('/theirs.doc', FC.O_RDONLY | FC.O_TRUNC)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(vfs.truncate('/theirs.doc', 0)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(vfs.access('/theirs.doc', FC.W_OK)).rejects.toMatchObject({ code: 'EACCES' });
    await expect(writeWhole(vfs, '/theirs.doc', 'overwrite')).rejects.toMatchObject({ code: 'EACCES' });
    // reading is fine, and nothing was uploaded
    expect((await readWhole(vfs, '/theirs.doc')).toString()).toBe('locked content');
    expect(api.calls.update ?? 0).toBe(0);
    expect(api.content(repo, '/theirs.doc')!.toString()).toBe('locked content');
  });

  it('a file locked by this account stays writable', async () => {
    const { api, repo, vfs } = await setup();
    expect((await vfs.getattr('/mine.doc')).mode & 0o777).toBe(0o644);
    const fh = await vfs.open('/mine.doc', FC.O_WRONLY | FC.O_TRUNC);
    await vfs.write('/mine.doc', fh, Buffer.from('edited'), 6, 0);
    await vfs.release('/mine.doc', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/mine.doc')!.toString()).toBe('edited');
  });

  it('locks and unlocks a file for this account on the server; a file locked by someone else stays theirs', async () => {
    const { api, vfs } = await setup();
    api.putFile(api.repos.keys().next().value!, '/plan.txt', 'plan');
    await vfs.setLock('/plan.txt', true);
    const listed = async () =>
      (await api.listDir(api.repos.keys().next().value!, '/')) as {
        entries: { name: string; is_locked?: boolean; locked_by_me?: boolean }[];
      };
    expect((await listed()).entries.find((e) => e.name === 'plan.txt')).toMatchObject({
      is_locked: true,
      locked_by_me: true,
    });
    // still writable for the one who locked it
    expect((await vfs.getattr('/plan.txt')).mode & 0o777).toBe(0o644);
    await vfs.setLock('/plan.txt', false);
    expect((await listed()).entries.find((e) => e.name === 'plan.txt')?.is_locked).toBeUndefined();
    await expect(vfs.setLock('/theirs.doc', false)).rejects.toMatchObject({ kind: 'forbidden' });
    await expect(vfs.setLock('/missing.txt', true)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('on a server without locks, seafs lock and unlock-file fail with ENOTSUP and one clear message, asking nothing', async () => {
    const { api, repo, vfs } = await setup();
    api.communityEdition = true;
    api.putFile(repo, '/plan.txt', 'plan');
    for (const on of [true, false]) {
      const e = await vfs.setLock('/plan.txt', on).then(
        () => null,
        (err: unknown) => err as Error & { code?: string },
      );
      expect(e).toMatchObject({ code: 'ENOTSUP', message: 'ENOTSUP: this server does not support file locks' });
    }
    expect(api.calls.lockFile ?? 0).toBe(0);
    expect(api.calls.unlockFile ?? 0).toBe(0);
  });

  it('a lock the client finds unsupported only when it sends it (no features in server-info) is ENOTSUP too', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/plan.txt', 'plan');
    api.failNext.set('lockFile', [
      apiError('unsupported', 500, 'lock file', 'this server does not support file locks'),
    ]);
    await expect(vfs.setLock('/plan.txt', true)).rejects.toMatchObject({
      code: 'ENOTSUP',
      message: 'ENOTSUP: this server does not support file locks',
    });
    expect(api.calls.lockFile).toBe(1);
  });
});
