// A folder listing asked for just before an upload lands answers without the
// new file; the upload's entry, recorded while that listing was on its way,
// must be made again on the answer rather than lost until the next fetch (a
// file the mount wrote would vanish from `ls` for a moment).
import { describe, expect, it } from 'vitest';
import type { DirEntry, SeafileApi } from '../../../../src/client/types.js';
import { MetaCache } from '../../../../src/vfs/listings/listing-cache.js';

const file = (name: string, id: string): DirEntry => ({ type: 'file', name, id, size: 1, mtime: 1 });

function slowServer(entries: DirEntry[]) {
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const api = {
    listDir: async () => {
      await gate;
      return { oid: 'f'.repeat(40), entries };
    },
  } as unknown as SeafileApi;
  return { api, release };
}

describe('a listing fetched while the mount changes the folder', () => {
  it('keeps the entries upserted and removed meanwhile', async () => {
    const { api, release } = slowServer([file('old.txt', '1'.repeat(40)), file('gone.txt', '2'.repeat(40))]);
    const cache = new MetaCache(api, 10_000, 100, 0);
    const p = cache.list('r', '/d');
    // an upload lands and a delete goes through while the listing is on its way
    cache.upsert('r', '/d', file('new.txt', '3'.repeat(40)));
    cache.remove('r', '/d', 'gone.txt');
    release();
    const l = await p;
    expect([...l.entries.keys()].sort()).toEqual(['new.txt', 'old.txt']);
    // and it is not trusted for long: the next look asks again
    expect(l.oid).toBeNull();
  });

  it('a listing with no change meanwhile is the server answer as it is', async () => {
    const { api, release } = slowServer([file('a.txt', '1'.repeat(40))]);
    const cache = new MetaCache(api, 10_000, 100, 0);
    const p = cache.list('r', '/d');
    cache.upsert('r', '/other', file('x.txt', '3'.repeat(40)));
    release();
    const l = await p;
    expect([...l.entries.keys()]).toEqual(['a.txt']);
    expect(l.oid).toBe('f'.repeat(40));
  });
});
