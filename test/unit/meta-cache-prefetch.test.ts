import { describe, expect, it } from 'vitest';
import type { DirEntry, DirListing, SeafileApi } from '../../src/client/types.js';
import { MetaCache } from '../../src/vfs/meta-cache.js';

const REPO = 'repo';
const sub = (i: number) => `s${String(i).padStart(4, '0')}`;
const oidOf = (path: string) => `oid:${path}`;

/**
 * A server holding /top with `n` sub-folders (s0000, s0001, ...), each with one
 * file. It records every listing asked for and answers on a later turn of the
 * event loop, like a network would.
 */
function serverOf(n: number) {
  const asked: { path: string; oid?: string }[] = [];
  const dirs: DirEntry[] = Array.from({ length: n }, (_, i) => ({ type: 'dir', name: sub(i), id: 'd'.repeat(40), mtime: 1 }));
  const api = {
    async listDir(_repo: string, path: string, opts?: { oid?: string }): Promise<DirListing> {
      asked.push({ path, oid: opts?.oid });
      await new Promise((r) => setImmediate(r));
      const oid = oidOf(path);
      if (opts?.oid === oid) return { uptodate: true, oid };
      const entries: DirEntry[] =
        path === '/top' ? dirs : [{ type: 'file', name: 'f', id: 'f'.repeat(40), size: 1, mtime: 1 }];
      return { uptodate: false, oid, entries };
    },
  };
  return { api: api as unknown as SeafileApi, asked };
}

async function settled(cache: MetaCache): Promise<void> {
  for (let i = 0; i < 10_000 && cache.prefetchBacklog() > 0; i++) await new Promise((r) => setImmediate(r));
  expect(cache.prefetchBacklog()).toBe(0);
}

const askedFor = (asked: { path: string }[], from: number, to: number) =>
  asked.filter((a) => a.path.startsWith('/top/')).map((a) => a.path).slice(from, to);

describe('listing prefetch window', () => {
  it('a look at a folder of 1,000 sub-folders lists the first 64 ahead, not all of them', async () => {
    const { api, asked } = serverOf(1000);
    const cache = new MetaCache(api, 60_000, 20_000, 8, 64);
    await cache.list(REPO, '/top');
    await settled(cache);
    const children = askedFor(asked, 0, Infinity);
    expect(children).toEqual(Array.from({ length: 64 }, (_, i) => `/top/${sub(i)}`));
  });

  it('slides with the walk: entering sub-folder i queues its siblings up to i + 64, in listing order', async () => {
    const { api, asked } = serverOf(1000);
    const cache = new MetaCache(api, 60_000, 20_000, 8, 64);
    await cache.list(REPO, '/top');
    await settled(cache);
    // a walk that jumps to s0500 (listed by the walk itself: it was not ahead yet)
    await cache.list(REPO, `/top/${sub(500)}`);
    await settled(cache);
    expect(askedFor(asked, 64, Infinity)).toEqual([
      `/top/${sub(500)}`,
      ...Array.from({ length: 64 }, (_, i) => `/top/${sub(501 + i)}`),
    ]);
  });

  it('a walk in listing order finds every folder ahead of it and lists each exactly once, past the first window', async () => {
    const { api, asked } = serverOf(700);
    const cache = new MetaCache(api, 60_000, 20_000, 8, 64);
    await cache.list(REPO, '/top');
    for (let i = 0; i < 700; i++) {
      // as `find` does: look at the folder, then wait for the prefetch to catch up before the next step
      expect((await cache.list(REPO, `/top/${sub(i)}`)).entries.has('f')).toBe(true);
      await settled(cache);
      if (i < 636) expect(cache.peek(REPO, `/top/${sub(i + 64)}`)).toBeDefined();
    }
    const children = askedFor(asked, 0, Infinity);
    expect(children).toHaveLength(700);
    expect(new Set(children).size).toBe(700);
    // all but the very first were fetched by the prefetch, none by the walk
    expect(cache.stats.prefetched).toBe(700);
  });

  it('a revalidated folder revalidates its window of sub-folders again, with their oids', async () => {
    const { api, asked } = serverOf(300);
    let now = 1_000_000;
    const realNow = Date.now;
    Date.now = () => now;
    try {
      const cache = new MetaCache(api, 10_000, 20_000, 8, 64);
      await cache.list(REPO, '/top');
      for (let i = 0; i < 300; i++) await cache.list(REPO, `/top/${sub(i)}`);
      await settled(cache);
      const before = asked.length;
      now += 11_000; // everything is stale now
      await cache.list(REPO, '/top');
      await settled(cache);
      const again = asked.slice(before);
      expect(again[0]).toEqual({ path: '/top', oid: oidOf('/top') });
      expect(again.slice(1)).toEqual(Array.from({ length: 64 }, (_, i) => ({ path: `/top/${sub(i)}`, oid: oidOf(`/top/${sub(i)}`) })));
      expect(cache.stats.uptodate).toBe(65);
      // the walk goes on from there as before
      await cache.list(REPO, `/top/${sub(0)}`);
      await settled(cache);
      expect(asked.slice(before + 65).map((a) => a.path)).toEqual([`/top/${sub(64)}`]);
    } finally {
      Date.now = realNow;
    }
  });
});
