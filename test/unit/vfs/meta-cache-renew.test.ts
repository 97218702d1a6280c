import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MetaCache } from '../../../src/vfs/listings/listing-cache.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

// The clock is stubbed: "stale" means older than the cache time, without waiting for it.
let now = 1_000_000_000_000;
const realNow = Date.now;
beforeEach(() => {
  Date.now = () => now;
});
afterEach(() => {
  Date.now = realNow;
});

function tree(folders: number) {
  const api = new FakeApi();
  const repo = api.addLibrary('lib');
  for (let i = 0; i < folders; i++) {
    api.putDir(repo, `/top/d${i}`);
    api.putFile(repo, `/top/d${i}/f.txt`, `file ${i}`);
  }
  return { api, repo };
}

/** A tree of `folders` sub-folders of /top and a cache (no prefetch) that has listed all of it once. */
async function listedTree(folders: number) {
  const { api, repo } = tree(folders);
  const cache = new MetaCache(api, 10_000, 20_000, 0);
  await cache.list(repo, '/');
  await cache.list(repo, '/top');
  for (let i = 0; i < folders; i++) await cache.list(repo, `/top/d${i}`);
  return { api, repo, cache };
}

describe('stale listings renewed from their parent (folder ids are content hashes)', () => {
  it('a walk over a stale tree revalidates the top only: each folder below is vouched for by its parent', async () => {
    const { api, repo, cache } = await listedTree(50);
    expect(api.calls.listDir).toBe(52);
    now += 11_000;
    await cache.list(repo, '/'); // the walk starts at the top: one revalidation
    expect(cache.stats.uptodate).toBe(1);
    await cache.list(repo, '/top');
    for (let i = 0; i < 50; i++) expect((await cache.list(repo, `/top/d${i}`)).entries.has('f.txt')).toBe(true);
    expect(api.calls.listDir).toBe(53);
    expect(cache.stats.renewed).toBe(51);
  });

  it('a folder changed on the server meanwhile is fetched again and shows the change; its unchanged siblings are not', async () => {
    const { api, repo, cache } = await listedTree(5);
    api.putFile(repo, '/top/d3/new.txt', 'someone else wrote this');
    // still within the cache time: the cached listing, as before
    expect((await cache.list(repo, '/top/d3')).entries.has('new.txt')).toBe(false);
    now += 11_000;
    const before = api.calls.listDir;
    await cache.list(repo, '/'); // changed: its id for /top is new
    await cache.list(repo, '/top'); // changed: fetched, names a new id for d3 only
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await cache.list(repo, `/top/d${i}`)).entries.has('new.txt'));
    expect(seen).toEqual([false, false, false, true, false]);
    // '/', '/top' and d3 asked for; d0, d1, d2, d4 renewed
    expect(api.calls.listDir - before).toBe(3);
    expect(cache.stats.renewed).toBe(4);
  });

  it('never renews a listing changed locally, nor without a current parent', async () => {
    const { api, repo } = tree(2);
    const cache = new MetaCache(api, 10_000, 20_000, 0);
    await cache.list(repo, '/');
    await cache.list(repo, '/top');
    await cache.list(repo, '/top/d0');
    await cache.list(repo, '/top/d1');
    cache.upsert(repo, '/top/d0', { type: 'file', name: 'local.txt', id: '', size: 1, mtime: 1 });
    now += 11_000;
    // the parent is stale too: d1 is asked for (revalidated with its oid)
    const before = api.calls.listDir;
    await cache.list(repo, '/top/d1');
    expect(api.calls.listDir - before).toBe(1);
    expect(cache.stats.uptodate).toBe(1);
    await cache.list(repo, '/'); // asked: the top has no parent
    await cache.list(repo, '/top'); // renewed from '/'
    // d0's entries differ from what its oid stood for: asked again, not renewed
    expect((await cache.list(repo, '/top/d0')).entries.has('local.txt')).toBe(false);
    expect(api.calls.listDir - before).toBe(3);
    expect(cache.stats.renewed).toBe(1);
  });

  it('an empty folder, known empty from its parent without a request, is renewed the same way', async () => {
    const { api, repo } = tree(1);
    api.putDir(repo, '/top/empty');
    const cache = new MetaCache(api, 10_000, 20_000, 8);
    await cache.list(repo, '/');
    await cache.list(repo, '/top'); // prefetches d0; /top/empty needs no request
    for (let i = 0; i < 100 && cache.prefetchBacklog() > 0; i++) await new Promise((r) => setImmediate(r));
    expect(api.calls.listDir).toBe(3);
    now += 11_000;
    await cache.list(repo, '/');
    await cache.list(repo, '/top');
    expect((await cache.list(repo, '/top/empty')).entries.size).toBe(0);
    expect(api.calls.listDir).toBe(4);
    api.putFile(repo, '/top/empty/now-not.txt', 'x');
    now += 11_000;
    await cache.list(repo, '/');
    await cache.list(repo, '/top');
    expect([...(await cache.list(repo, '/top/empty')).entries.keys()]).toEqual(['now-not.txt']);
  });

  it('through the filesystem: ls -lR again after the cache time costs one request when nothing changed', async () => {
    const { api } = tree(30);
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 10_000 });
    try {
      const walk = async (dir: string): Promise<number> => {
        let n = 0;
        for (const name of await vfs.readdir(dir)) {
          const p = dir === '/' ? `/${name}` : `${dir}/${name}`;
          n++;
          if ((await vfs.getattr(p)).mode & 0o040000) n += await walk(p);
        }
        return n;
      };
      expect(await walk('/')).toBe(1 + 30 * 2);
      for (let i = 0; i < 100 && vfs.listingCache.prefetchBacklog() > 0; i++) await new Promise((r) => setImmediate(r));
      const before = api.calls.listDir;
      now += 11_000;
      expect(await walk('/')).toBe(1 + 30 * 2);
      expect(api.calls.listDir - before).toBe(1);
      expect(vfs.listingCache.stats.uptodate).toBe(1);
    } finally {
      await cleanup();
    }
  });
});
