// mkdir answered by the mount before the server holds the folder (write/pending-folders.ts): the folder
// shows at once, files written into it upload once it is created, a kill -9 replays it from the journal,
// a failed creation is retried and surfaces through the uploads that need it, and rmdir and rename of a
// folder not yet on the server do what they would do to any other.
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { apiError, expectErrno, FakeApi, gate, makeVfs, readWhole, sleep, writeWhole } from '../../helpers/fake-api.js';

/** 'answered' when `p` settles within 5 s (a mkdir that waits for a held server does not) */
async function answered(p: Promise<unknown>): Promise<string> {
  return Promise.race([p.then(() => 'answered'), sleep(5000).then(() => 'still waiting')]);
}

describe('vfs mkdir answered locally', () => {
  const cleanups = cleanupAfterEach();

  async function setup(opts = {}) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const logs: string[] = [];
    const m = await makeVfs(api, { library: 'lib', log: (s) => logs.push(s), ...opts });
    cleanups.push(m.cleanup);
    return { api, repo, logs, ...m };
  }

  it('answers mkdir while the server holds the call, shows the folder, and uploads its files once it exists', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.mkdirGate = g.wait;
    expect(await answered(vfs.mkdir('/new', 0o755))).toBe('answered');
    expect(await answered(vfs.mkdir('/new/deeper', 0o755))).toBe('answered');
    expect(await vfs.readdir('/')).toContain('new');
    expect((await vfs.getattr('/new')).mode & 0o170000).toBe(0o040000);
    expect(await vfs.readdir('/new')).toEqual(['deeper']);
    await writeWhole(vfs, '/new/a.txt', 'alpha');
    await writeWhole(vfs, '/new/deeper/b.txt', 'beta');
    await expectErrno(vfs.mkdir('/new', 0o755), 'EEXIST');
    // nothing reached the server: the files wait for their folders
    await sleep(50);
    expect(api.names(repo, '/')).toEqual([]);
    expect(
      vfs
        .status()
        .pendingFolders.map((f) => f.path)
        .sort(),
    ).toEqual(['/new', '/new/deeper']);
    g.open();
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/new/a.txt')?.toString()).toBe('alpha');
    expect(api.content(repo, '/new/deeper/b.txt')?.toString()).toBe('beta');
    // two creations, none made again by an upload that found its folder missing
    expect(api.calls.mkdir).toBe(2);
    expect(vfs.status().pendingFolders).toEqual([]);
    expect((await readWhole(vfs, '/new/deeper/b.txt')).toString()).toBe('beta');
  });

  it('keeps a pending folder in its parent listing when the parent is fetched again from the server', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.mkdirGate = g.wait;
    expect(await answered(vfs.mkdir('/p', 0o755))).toBe('answered');
    expect(await answered(vfs.mkdir('/p/q', 0o755))).toBe('answered');
    vfs.listingCache.invalidateTree(repo, '/');
    expect(await vfs.readdir('/')).toEqual(['p']);
    // the server has no /p to list: the mount's own listing answers
    expect(await vfs.readdir('/p')).toEqual(['q']);
    expect((await vfs.getattr('/p/q')).mode & 0o170000).toBe(0o040000);
    g.open();
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/p')).toEqual(['q']);
    vfs.listingCache.invalidateTree(repo, '/');
    expect(await vfs.readdir('/p')).toEqual(['q']);
  });

  it('creates a folder journaled by a mount that died before the server had it', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const g = gate();
    api.mkdirGate = g.wait;
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    expect(await answered(first.vfs.mkdir('/empty', 0o755))).toBe('answered');
    expect(await answered(first.vfs.mkdir('/full', 0o755))).toBe('answered');
    await writeWhole(first.vfs, '/full/f.txt', 'kept');
    // the mount dies: no drain, its journal is left as it is
    first.vfs.close();
    api.mkdirGate = null;
    const logs: string[] = [];
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir, log: (s) => logs.push(s) });
    cleanups.push(second.cleanup);
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.names(repo, '/').sort()).toEqual(['empty', 'full']);
    expect(api.content(repo, '/full/f.txt')?.toString()).toBe('kept');
    expect(logs.some((l) => l.includes('recovering the folder /empty'))).toBe(true);
    // once created, the folder's record is gone: a third mount has nothing to replay
    const third = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    cleanups.push(third.cleanup);
    expect(third.vfs.status().pendingFolders).toEqual([]);
    g.open();
  });

  it('retries a failed creation, and uploads into the folder wait for it', async () => {
    const { api, repo, vfs, logs } = await setup();
    api.failNext.set('mkdir', [apiError('server', 500, 'mkdir'), apiError('server', 500, 'mkdir')]);
    await vfs.mkdir('/r', 0o755);
    await writeWhole(vfs, '/r/f.txt', 'data');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/r/f.txt')?.toString()).toBe('data');
    expect(api.calls.mkdir).toBe(3);
    expect(logs.some((l) => l.includes('creating the folder /r on the server failed'))).toBe(true);
  });

  it('fails fsync of a file inside with the refusal of its folder, and reports the folder at unmount', async () => {
    const { api, repo, vfs } = await setup();
    api.failNext.set(
      'mkdir',
      Array.from({ length: 1000 }, () => apiError('forbidden', 403, 'mkdir')),
    );
    await vfs.mkdir('/x', 0o755);
    const fh = await vfs.create('/x/f.txt', 0o644);
    await vfs.write('/x/f.txt', fh, Buffer.from('abc'), 3, 0);
    await expectErrno(vfs.fsync('/x/f.txt', fh), 'EACCES');
    await vfs.release('/x/f.txt', fh);
    const failed = await vfs.drain();
    expect(failed.map((f) => f.path).sort()).toEqual(['/x', '/x/f.txt']);
    expect(vfs.status().pendingFolders).toEqual([{ repo, path: '/x', error: expect.any(String) }]);
    // the folder and its file are still shown (and kept for a later attempt)
    expect(await vfs.readdir('/x')).toEqual(['f.txt']);
    expect(api.names(repo, '/')).toEqual([]);
  });

  it('removes a folder the server never took without asking it, and waits for one being created', async () => {
    const { api, repo, vfs } = await setup();
    api.failNext.set(
      'mkdir',
      Array.from({ length: 1000 }, () => apiError('forbidden', 403, 'mkdir')),
    );
    await vfs.mkdir('/never', 0o755);
    await vfs.mkdir('/never/child', 0o755);
    await expectErrno(vfs.rmdir('/never'), 'ENOTEMPTY');
    await vfs.rmdir('/never/child');
    await vfs.rmdir('/never');
    expect(await vfs.readdir('/')).toEqual([]);
    expect(vfs.status().pendingFolders).toEqual([]);
    expect(api.calls.deleteDir ?? 0).toBe(0);
    api.failNext.delete('mkdir');
    const g = gate();
    api.mkdirGate = g.wait;
    await vfs.mkdir('/soon', 0o755);
    let removed = false;
    const rm = vfs.rmdir('/soon').then(() => (removed = true));
    await sleep(50);
    // the creation is on its way to the server: rmdir waits for it, then deletes the folder there
    expect(removed).toBe(false);
    g.open();
    await rm;
    expect(api.names(repo, '/')).toEqual([]);
    expect(await vfs.readdir('/')).toEqual([]);
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual([]);
  });

  it('renames a folder whose creation is pending, with its files, once the server has it', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.mkdirGate = g.wait;
    expect(await answered(vfs.mkdir('/a', 0o755))).toBe('answered');
    await writeWhole(vfs, '/a/f.txt', 'moved');
    const mv = vfs.rename('/a', '/b');
    await sleep(50);
    g.open();
    await mv;
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['b']);
    expect(api.content(repo, '/b/f.txt')?.toString()).toBe('moved');
    expect((await readWhole(vfs, '/b/f.txt')).toString()).toBe('moved');
  });

  it('a rename tries the creation of a folder made here again when it failed (issue 31: one mv, not an EIO)', async () => {
    // background retries far away: only the rename's own tries can create it in time
    const { api, repo, vfs } = await setup({ writeBack: { retryBaseMs: 60_000 } });
    const boom = () => apiError('server', 500, 'mkdir', 'injected');
    // the first creations of /a and /a/inner fail, and then the rename's first two tries
    api.failNext.set('mkdir', [boom(), boom(), boom(), boom()]);
    await vfs.mkdir('/a', 0o755);
    await vfs.mkdir('/a/inner', 0o755);
    await vfs.rename('/a', '/b');
    expect(api.calls.mkdir).toBe(6);
    expect(api.names(repo, '/')).toEqual(['b']);
    expect(api.names(repo, '/b')).toEqual(['inner']);
    expect(vfs.status().pendingFolders).toEqual([]);
  });

  it('renames a folder of the server only once the empty folders made inside it are there', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/old');
    const g = gate();
    api.mkdirGate = g.wait;
    expect(await answered(vfs.mkdir('/old/inner', 0o755))).toBe('answered');
    expect(await answered(vfs.mkdir('/old/inner/deeper', 0o755))).toBe('answered');
    const mv = vfs.rename('/old', '/new');
    await sleep(50);
    g.open();
    await mv;
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['new']);
    expect(api.names(repo, '/new')).toEqual(['inner']);
    expect(api.names(repo, '/new/inner')).toEqual(['deeper']);
    expect(await vfs.readdir('/new/inner')).toEqual(['deeper']);
  });

  describe('a folder name the server may refuse (the newest seahub refuses emoji)', () => {
    it('is created before mkdir answers: a refusal is EINVAL and nothing stays pending', async () => {
      const { api, repo, vfs, logs } = await setup();
      api.refuseMkdirNames = /\u{1F389}/u;
      await expectErrno(vfs.mkdir('/party \u{1F389}', 0o755), 'EINVAL');
      expect(await vfs.readdir('/')).toEqual([]);
      expect(vfs.status().pendingFolders).toEqual([]);
      expect(api.names(repo, '/')).toEqual([]);
      // a server that takes the name (10.0): created at once, before mkdir answers
      api.refuseMkdirNames = null;
      const g = gate();
      api.mkdirGate = g.wait;
      let done = false;
      const made = vfs.mkdir('/cake \u{1F382}', 0o755).then(() => (done = true));
      await sleep(200);
      expect(done).toBe(false);
      g.open();
      await made;
      expect(api.names(repo, '/')).toEqual(['cake \u{1F382}']);
      expect(await vfs.readdir('/')).toEqual(['cake \u{1F382}']);
      expect(vfs.status().pendingFolders).toEqual([]);
      expect(logs.filter((l) => l.includes('refuses'))).toEqual([]);
    });

    it('offline it is made locally; once the server answers and refuses it, it is not retried and says so once', async () => {
      const { api, repo, vfs, logs } = await setup();
      api.refuseMkdirNames = /\u{1F389}/u;
      expect(await vfs.readdir('/')).toEqual([]);
      api.down = true;
      await vfs.mkdir('/party \u{1F389}', 0o755);
      expect(await vfs.readdir('/')).toEqual(['party \u{1F389}']);
      api.down = false;
      await sleep(400);
      const tries = api.calls.mkdir;
      await sleep(600);
      expect(api.calls.mkdir).toBe(tries);
      expect(logs.filter((l) => l.includes('the server refuses the folder name /party \u{1F389}'))).toHaveLength(1);
      expect(vfs.status().pendingFolders).toEqual([
        { repo, path: '/party \u{1F389}', error: expect.stringContaining('invalid') },
      ]);
      expect(api.names(repo, '/')).toEqual([]);
    });
  });
});
