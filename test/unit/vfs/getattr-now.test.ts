// getattr answered without waiting (the tree walk's hot path) must give what the full getattr gives, and
// must step aside (null) whenever the answer needs the server.
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, makeVfs, sleep } from '../../helpers/fake-api.js';

describe('getattr from memory', () => {
  const cleanups = cleanupAfterEach();

  /** a library holding /top/a.txt ('hello'), and a vfs on it whose listings are fresh for 50 ms */
  async function topWithA() {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/top');
    api.putFile(repo, '/top/a.txt', 'hello');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 50 });
    cleanups.push(cleanup);
    return { api, repo, vfs };
  }

  it('gives the same attributes as getattr for the files and folders of a listed folder, without a request', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/top/sub');
    api.putFile(repo, '/top/a.txt', 'hello');
    api.putFile(repo, '/top/b.bin', 'x'.repeat(3000));
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    expect((await vfs.readdir('/top')).sort()).toEqual(['a.txt', 'b.bin', 'sub']);
    const before = api.calls.listDir ?? 0;
    for (const name of ['a.txt', 'b.bin', 'sub']) {
      const now = vfs.getattrNow(`/top/${name}`);
      expect(now).not.toBeNull();
      expect(now).toEqual(await vfs.getattr(`/top/${name}`));
    }
    expect(vfs.getattrNow('/top/a.txt')?.size).toBe(5);
    expect(vfs.getattrNow('/top/b.bin')?.size).toBe(3000);
    expect(api.calls.listDir ?? 0).toBe(before);
  });

  it('steps aside when the answer needs the server: folder not listed, listing stale, name missing, library root', async () => {
    const { api, repo, vfs } = await topWithA();
    expect(vfs.getattrNow('/top/a.txt')).toBeNull();
    expect(vfs.getattrNow('/')).toBeNull();
    await vfs.readdir('/top');
    expect(vfs.getattrNow('/top/a.txt')?.size).toBe(5);
    // a name the listing lacks: the full getattr says ENOENT
    expect(vfs.getattrNow('/top/nope')).toBeNull();
    await expect(vfs.getattr('/top/nope')).rejects.toMatchObject({ code: 'ENOENT' });
    // changed on the server, listing stale: the full getattr revalidates and sees the new size
    api.putFile(repo, '/top/a.txt', 'hello, world');
    await sleep(70);
    expect(vfs.getattrNow('/top/a.txt')).toBeNull();
    expect((await vfs.getattr('/top/a.txt')).size).toBe(12);
    expect(vfs.getattrNow('/top/a.txt')?.size).toBe(12);
  });

  it('knows a name is absent when a fresh listing lacks it and nothing local is there, as getattr says', async () => {
    const { api, vfs } = await topWithA();
    expect(vfs.absentNow('/top/new.txt')).toBe(false); // folder not listed yet: unknown
    await vfs.readdir('/top');
    const before = api.calls.listDir ?? 0;
    expect(vfs.absentNow('/top/new.txt')).toBe(true);
    await expect(vfs.getattr('/top/new.txt')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(vfs.absentNow('/top/a.txt')).toBe(false);
    expect(vfs.absentNow('/top')).toBe(false);
    // the virtual folders at the root answer to their path though no listing holds them
    expect(vfs.absentNow('/.seafile-trash')).toBe(false);
    // a file being written is there before any listing shows it
    const fh = await vfs.create('/top/new.txt', 0o644);
    expect(vfs.absentNow('/top/new.txt')).toBe(false);
    await vfs.release('/top/new.txt', fh);
    expect(api.calls.listDir ?? 0).toBe(before);
    // a stale listing: unknown again
    await sleep(70);
    expect(vfs.absentNow('/top/other.txt')).toBe(false);
  });

  it('steps aside in the all-libraries mode (the library list may need the server)', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/a.txt', 'hello');
    const { vfs, cleanup } = await makeVfs(api, {});
    cleanups.push(cleanup);
    await vfs.readdir('/lib');
    expect(vfs.getattrNow('/lib/a.txt')).toBeNull();
    expect(vfs.absentNow('/lib/none.txt')).toBe(false);
    expect((await vfs.getattr('/lib/a.txt')).size).toBe(5);
  });
});
