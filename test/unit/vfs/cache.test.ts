import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

describe('vfs metadata cache', () => {
  const cleanups = cleanupAfterEach();

  it('answers ls -l of a 1,000-entry folder with one listing request', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/big');
    for (let i = 0; i < 1000; i++) api.putFile(repo, `/big/f${i}.txt`, `content ${i}`);
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    const before = api.calls.listDir ?? 0;
    const names = await vfs.readdir('/big');
    expect(names).toHaveLength(1000);
    for (const n of names) {
      const a = await vfs.getattr(`/big/${n}`);
      expect(a.size).toBe(`content ${n.slice(1, -4)}`.length);
    }
    // the root listing (to check /big is a folder) and /big itself
    expect((api.calls.listDir ?? 0) - before).toBe(2);
    expect(api.calls.fileDetail ?? 0).toBe(0);
    // negative lookups come from the same listing
    await expect(vfs.getattr('/big/nope')).rejects.toMatchObject({ code: 'ENOENT' });
    expect((api.calls.listDir ?? 0) - before).toBe(2);
  });

  it('revalidates a stale listing with its oid and sees remote changes after the cache time', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/a.txt', 'aaa');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 50 });
    cleanups.push(cleanup);
    expect(await vfs.readdir('/')).toEqual(['a.txt']);
    expect(vfs.listingCache.stats.fullListings).toBe(1);
    await sleep(70);
    expect(await vfs.readdir('/')).toEqual(['a.txt']);
    expect(vfs.listingCache.stats.uptodate).toBe(1);
    expect(vfs.listingCache.stats.fullListings).toBe(1);
    // a change made by someone else
    api.putFile(repo, '/b.txt', 'bb');
    expect(await vfs.readdir('/')).toEqual(['a.txt']); // still fresh
    await sleep(70);
    expect((await vfs.readdir('/')).sort()).toEqual(['a.txt', 'b.txt']);
    expect(vfs.listingCache.stats.fullListings).toBe(2);
  });

  it('shows local changes at once, before any upload', async () => {
    const api = new FakeApi();
    api.addLibrary('lib');
    let release!: () => void;
    api.uploadGate = () => new Promise<void>((r) => (release = r));
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(async () => {
      release?.();
      await cleanup();
    });
    await vfs.mkdir('/d', 0o755);
    await writeWhole(vfs, '/d/new.txt', 'hello world');
    expect(await vfs.readdir('/d')).toEqual(['new.txt']);
    expect((await vfs.getattr('/d/new.txt')).size).toBe(11);
    expect(api.calls.upload ?? 0).toBeLessThanOrEqual(1);
  });
});

describe('vfs folder prefetch', () => {
  it('a tree walk finds sub-folders already listed: one request per folder, in parallel', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    for (let a = 0; a < 10; a++) {
      for (let b = 0; b < 5; b++) {
        api.putDir(repo, `/d${a}/e${b}`);
        api.putFile(repo, `/d${a}/e${b}/f.txt`, `${a}${b}`);
      }
    }
    api.putDir(repo, '/empty');
    api.listDelayMs = 20;
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    try {
      const t0 = Date.now();
      // the walk of `find`: list a folder, stat its entries, descend
      const walk = async (dir: string): Promise<number> => {
        let n = 0;
        for (const name of await vfs.readdir(dir)) {
          const p = dir === '/' ? `/${name}` : `${dir}/${name}`;
          const a = await vfs.getattr(p);
          n++;
          if (a.mode & 0o040000) n += await walk(p);
        }
        return n;
      };
      expect(await walk('/')).toBe(10 + 50 + 50 + 1);
      const took = Date.now() - t0;
      // 61 folders with files one after another would take 61 x 20 ms
      expect(took).toBeLessThan(61 * 20 * 0.6);
      // every non-empty folder listed exactly once; the empty one never
      expect(api.calls.listDir).toBe(1 + 10 + 50);
      expect(vfs.listingCache.stats.prefetched).toBeGreaterThan(40);
    } finally {
      await cleanup();
    }
  });
});

describe('vfs remote changes', () => {
  it('a file changed on the server while its listing is cached reads the new content and refreshes the folder', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/f.txt', 'old content');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    try {
      expect((await vfs.getattr('/f.txt')).size).toBe(11);
      api.putFile(repo, '/f.txt', 'NEW CONTENT');
      const { readWhole } = await import('../../helpers/fake-api.js');
      expect((await readWhole(vfs, '/f.txt')).toString()).toBe('NEW CONTENT');
      api.putFile(repo, '/f.txt', 'newer, and longer');
      await readWhole(vfs, '/f.txt'); // notices the change; the listing is refreshed
      expect((await vfs.getattr('/f.txt')).size).toBe(17);
      expect((await readWhole(vfs, '/f.txt')).toString()).toBe('newer, and longer');
    } finally {
      await cleanup();
    }
  });
});
