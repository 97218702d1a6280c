import { describe, expect, it } from 'vitest';
import type { DirEntry, DirListing, SeafileApi } from '../../../src/client/types.js';
import { MetaCache } from '../../../src/vfs/listings/listing-cache.js';

const REPO = 'repo';
const sub = (i: number) => `s${String(i).padStart(4, '0')}`;
const oidOf = (path: string) => `oid:${path}`;

const folder = (name: string): DirEntry => ({ type: 'dir', name, id: 'd'.repeat(40), mtime: 1 });

/**
 * A server holding /top with `n` sub-folders (s0000, s0001, ...), each with
 * `m` sub-folders (t0, t1, ...) and one file; every t folder holds one file.
 * It records every listing asked for and answers on a later turn of the
 * event loop, like a network would.
 */
function serverOf(n: number, m = 0) {
  const asked: { path: string; oid?: string }[] = [];
  const dirs = Array.from({ length: n }, (_, i) => folder(sub(i)));
  const file: DirEntry = { type: 'file', name: 'f', id: 'f'.repeat(40), size: 1, mtime: 1 };
  const api = {
    async listDir(_repo: string, path: string, opts?: { oid?: string }): Promise<DirListing> {
      asked.push({ path, oid: opts?.oid });
      await new Promise((r) => setImmediate(r));
      const oid = oidOf(path);
      if (opts?.oid === oid) return { uptodate: true, oid };
      const depth = path.split('/').length - 1;
      const entries: DirEntry[] =
        path === '/top' ? dirs : depth === 2 ? [...Array.from({ length: m }, (_, j) => folder(`t${j}`)), file] : [file];
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
  asked
    .filter((a) => a.path.startsWith('/top/'))
    .map((a) => a.path)
    .slice(from, to);

describe('listing prefetch window', () => {
  it('a look at a folder of 1,000 sub-folders lists the first 64 ahead, not all of them, and nothing deeper', async () => {
    const { api, asked } = serverOf(1000, 3);
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
      expect(again.slice(1)).toEqual(
        Array.from({ length: 64 }, (_, i) => ({ path: `/top/${sub(i)}`, oid: oidOf(`/top/${sub(i)}`) })),
      );
      expect(cache.stats.uptodate).toBe(65);
      // the walk goes on from there as before
      await cache.list(REPO, `/top/${sub(0)}`);
      await settled(cache);
      expect(asked.slice(before + 65).map((a) => a.path)).toEqual([`/top/${sub(64)}`]);
    } finally {
      Date.now = realNow;
    }
  });

  it('runs waiting prefetches in depth-first order and, once a walk goes in, lists the first sub-folders of the folders ahead', async () => {
    const { api, asked } = serverOf(100, 10);
    // one at a time, so the order is the queue's
    const cache = new MetaCache(api, 60_000, 20_000, 1, 64, 8);
    await cache.list(REPO, '/top');
    await cache.list(REPO, `/top/${sub(0)}`); // the walk enters the first sub-folder
    await settled(cache);
    const got = asked.map((a) => a.path).slice(0, 2 + 10 + 3 * 9);
    const t = (i: number, n: number) => Array.from({ length: n }, (_, j) => `/top/${sub(i)}/t${j}`);
    expect(got).toEqual([
      '/top',
      `/top/${sub(0)}`,
      // the folder the walk is in first, all of its sub-folders (its own window)
      ...t(0, 10),
      // then each sibling ahead, followed by its first 8 sub-folders, before the next sibling
      `/top/${sub(1)}`,
      ...t(1, 8),
      `/top/${sub(2)}`,
      ...t(2, 8),
      `/top/${sub(3)}`,
      ...t(3, 8),
    ]);
    // bounded, one level deep only: s0000 and its 10, then the window s0001..s0064 and 8 of each
    expect(asked.filter((a) => a.path.startsWith('/top/')).length).toBe(1 + 10 + 64 + 64 * 8);
  });
});
