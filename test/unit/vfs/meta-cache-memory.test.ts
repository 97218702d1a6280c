import { describe, expect, it } from 'vitest';
import type { DirEntry, DirListing, SeafileApi } from '../../../src/client/types.js';
import { MetaCache } from '../../../src/vfs/listings/listing-cache.js';

const REPO = 'repo';

/** A file entry as a server lists it: the fields the mount uses and the dozen it does not. */
function fatFile(i: number, extra: Partial<DirEntry> = {}): DirEntry {
  return {
    type: 'file',
    name: `f${String(i).padStart(5, '0')}.bin`,
    id: String(i).padStart(40, '0'),
    mtime: 1_700_000_000 + i,
    size: 100 + i,
    permission: 'rw',
    modifier_email: 'someone@example.com',
    modifier_name: 'Someone',
    modifier_contact_email: 'someone@example.com',
    starred: false,
    is_locked: false,
    lock_owner: '',
    lock_time: 0,
    locked_by_me: false,
    ...extra,
  };
}

/** Folders /a, /b, /c, ... of `perFolder` files each; counts the listings asked for. */
function serverOf(perFolder: number, lockedFirst = false) {
  const asked: string[] = [];
  const api = {
    async listDir(_repo: string, path: string): Promise<DirListing> {
      asked.push(path);
      await new Promise((r) => setImmediate(r));
      const entries = Array.from({ length: perFolder }, (_, i) =>
        fatFile(i, lockedFirst && i === 0 ? { is_locked: true, lock_owner: 'other@example.com' } : {}),
      );
      return { uptodate: false, oid: `oid:${path}`, entries };
    },
  };
  return { api: api as unknown as SeafileApi, asked };
}

describe('metadata cache memory', () => {
  it('keeps the fields of an entry the mount uses and drops the rest (modifier name, starred, lock time)', async () => {
    const { api } = serverOf(3, true);
    const cache = new MetaCache(api, 60_000, 100, 0);
    const l = await cache.list(REPO, '/a');
    expect(l.entries.get('f00001.bin')).toEqual({
      type: 'file',
      name: 'f00001.bin',
      id: String(1).padStart(40, '0'),
      mtime: 1_700_000_001,
      size: 101,
      permission: 'rw',
      modifier_email: 'someone@example.com',
    });
    // a file locked by someone else keeps what the mount needs to refuse writing it
    expect(l.entries.get('f00000.bin')).toMatchObject({ is_locked: true, lock_owner: 'other@example.com' });
    expect(l.entries.get('f00000.bin')).not.toHaveProperty('modifier_name');
  });

  it('reports the folders and entries it holds, and bytes growing with the entries', async () => {
    const { api } = serverOf(50);
    const cache = new MetaCache(api, 60_000, 100, 0);
    expect(cache.held()).toMatchObject({ folders: 0, entries: 0, bytes: 0 });
    await cache.list(REPO, '/a');
    const one = cache.held();
    await cache.list(REPO, '/b');
    await cache.list(REPO, '/c');
    const three = cache.held();
    expect(one).toMatchObject({ folders: 1, entries: 50 });
    expect(three).toMatchObject({ folders: 3, entries: 150 });
    // each entry holds a name and a 40-character id at least
    expect(three.bytes).toBeGreaterThan(150 * 50);
    expect(three.bytes).toBeGreaterThan(2.5 * one.bytes);
  });

  it('past its entry budget drops the least recently used listings, which are asked for again when next needed', async () => {
    const { api, asked } = serverOf(100);
    // room for two folders of 100 entries (each counts its entries plus one)
    const cache = new MetaCache(api, 60_000, 100, 0, 64, 8, 250);
    await cache.list(REPO, '/a');
    await cache.list(REPO, '/b');
    await cache.list(REPO, '/a'); // /a is now the more recently used
    await cache.list(REPO, '/c');
    const held = cache.held();
    expect(held.entries).toBeLessThanOrEqual(250);
    expect(held).toMatchObject({ folders: 2, maxEntries: 250 });
    expect(cache.peek(REPO, '/b')).toBeUndefined();
    expect(cache.peek(REPO, '/a')?.entries.size).toBe(100);
    expect(asked).toEqual(['/a', '/b', '/c']);
    expect((await cache.list(REPO, '/b')).entries.size).toBe(100);
    expect(asked).toEqual(['/a', '/b', '/c', '/b']);
  });
});
