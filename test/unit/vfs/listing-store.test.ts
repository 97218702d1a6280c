import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DirEntry } from '../../../src/client/types.js';
import { errnoOf } from '../../../src/vfs/errors.js';
import { ListingStore } from '../../../src/vfs/listings/listing-disk-store.js';
import { Vfs } from '../../../src/vfs/vfs.js';
import { FakeApi, makeVfs, readWhole, sleep, writeWhole } from '../../helpers/fake-api.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'seafs-listings-'));
  dirs.push(d);
  return d;
}

/** the one saved listing file under `dir` */
async function onlyFile(dir: string): Promise<string> {
  const sub = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  expect(sub).toHaveLength(1);
  const files = await readdir(join(dir, sub[0].name));
  expect(files).toHaveLength(1);
  return join(dir, sub[0].name, files[0]);
}

const entries: DirEntry[] = [
  { type: 'file', name: 'a.txt', id: 'f'.repeat(40), mtime: 1_700_000_000, size: 3 },
  { type: 'dir', name: 'sub', id: 'd'.repeat(40), mtime: 1_700_000_001 },
];

describe('the listings kept on disk', () => {
  it('keeps a listing and gives it back, per library and folder', async () => {
    const dir = await tmp();
    const s = new ListingStore(dir, () => {});
    s.save('repo-1', '/x', 'o'.repeat(40), entries, 1234);
    await s.flush();
    const got = await s.load('repo-1', '/x');
    expect(got?.oid).toBe('o'.repeat(40));
    expect(got?.savedAt).toBe(1234);
    expect([...got!.entries.values()]).toEqual(entries);
    expect(await s.load('repo-2', '/x')).toBeNull();
    expect(await s.load('repo-1', '/y')).toBeNull();
  });

  for (const [what, spoil] of [
    ['a file cut short', (t: string) => t.slice(0, t.length - 9)],
    ['not JSON at all', () => '\u0000\u0000garbage'],
    ['the listing of another folder', (t: string) => t.replace('"/x"', '"/elsewhere"')],
    ['an entry with a slash in its name', (t: string) => t.replace('"a.txt"', '"../a.txt"')],
    ['no folder id', (t: string) => t.replace(/"oid":"o+",/, '')],
  ] as const) {
    it(`ignores ${what}, with a log line, and removes it`, async () => {
      const dir = await tmp();
      const log: string[] = [];
      const s = new ListingStore(dir, (l) => log.push(l));
      s.save('repo-1', '/x', 'o'.repeat(40), entries);
      await s.flush();
      const file = await onlyFile(dir);
      await writeFile(file, spoil(await readFile(file, 'utf8')));
      expect(await s.load('repo-1', '/x')).toBeNull();
      expect(log).toHaveLength(1);
      expect(log[0]).toMatch(/^ignoring the saved listing of \/x \(.*\): /);
      await expect(readFile(file)).rejects.toThrow(/ENOENT/);
    });
  }

  it('a corrupt library list is ignored with a log line', async () => {
    const dir = await tmp();
    const log: string[] = [];
    const s = new ListingStore(dir, (l) => log.push(l));
    await writeFile(join(dir, 'libraries.json'), '{"v":1,"libraries":[{"id":7}]}');
    expect(await s.loadLibraries()).toBeNull();
    expect(log[0]).toMatch(/^ignoring the saved library list .*: a library is malformed/);
  });

  it('keeps at most the bound of listings (across runs), says so once, and still updates those it keeps', async () => {
    const dir = await tmp();
    const log: string[] = [];
    const first = new ListingStore(dir, (l) => log.push(l), 3);
    for (const d of ['/a', '/b']) first.save('r', d, 'o'.repeat(40), entries);
    first.close();
    const s = new ListingStore(dir, (l) => log.push(l), 3);
    for (const d of ['/c', '/d', '/e']) s.save('r', d, 'o'.repeat(40), entries);
    s.save('r', '/a', 'a'.repeat(40), entries);
    await s.flush();
    expect((await s.load('r', '/c'))?.oid).toBe('o'.repeat(40));
    expect(await s.load('r', '/d')).toBeNull();
    expect(await s.load('r', '/e')).toBeNull();
    expect((await s.load('r', '/a'))?.oid).toBe('a'.repeat(40));
    expect(log).toEqual([
      expect.stringMatching(/^3 folder listings are kept in .*; listings of further folders are not$/),
    ]);
  });

  it('files are readable by their owner only', async () => {
    const dir = await tmp();
    const s = new ListingStore(dir, () => {});
    s.saveLibraries([]);
    s.save('r', '/', 'o'.repeat(40), entries);
    await s.flush();
    const { stat } = await import('node:fs/promises');
    expect((await stat(join(dir, 'libraries.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(await onlyFile(dir))).mode & 0o777).toBe(0o600);
  });
});

describe('a vfs started with the server unreachable', () => {
  it('serves the listings and files an earlier one saw, fails a folder never listed at once, uploads writes once back', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/dir/deep/deeper');
    api.putFile(repo, '/dir/a.txt', 'content a\n');
    api.putFile(repo, '/dir/deep/deeper/n.txt', 'never listed\n');
    const cacheDir = await tmp();
    const opts = { library: 'lib', cacheDir, prefetchDirs: 0, probeMinMs: 20, probeMaxMs: 50 };
    const first = await Vfs.create(api, { durableJournal: false, ...opts });
    expect(await first.readdir('/dir')).toEqual(expect.arrayContaining(['a.txt', 'deep']));
    expect((await readWhole(first, '/dir/a.txt')).toString()).toBe('content a\n');
    first.close();
    await first.reader.closeDisk();
    await first.listings.flush();

    api.down = true;
    const log: string[] = [];
    const m = await makeVfs(api, { ...opts, log: (l) => log.push(l) });
    const { vfs } = m;
    try {
      expect(vfs.connectivity.online).toBe(false);
      expect(log.filter((l) => l.startsWith('offline:'))).toHaveLength(1);
      expect((await vfs.readdir('/dir')).sort()).toEqual(['a.txt', 'deep']);
      expect((await readWhole(vfs, '/dir/a.txt')).toString()).toBe('content a\n');
      const t0 = Date.now();
      const err = await vfs.readdir('/dir/deep').catch((e: unknown) => e);
      expect(errnoOf(err)).toBe('EIO');
      expect(Date.now() - t0).toBeLessThan(2000);
      await writeWhole(vfs, '/dir/new.txt', 'written offline\n');
      expect((await vfs.readdir('/dir')).sort()).toEqual(['a.txt', 'deep', 'new.txt']);

      api.down = false;
      for (let i = 0; i < 100 && !vfs.connectivity.online; i++) await sleep(20);
      expect(vfs.connectivity.online).toBe(true);
      expect(await vfs.drain()).toEqual([]);
      expect(api.content(repo, '/dir/new.txt')!.toString()).toBe('written offline\n');
      expect((await vfs.readdir('/dir/deep')).sort()).toEqual(['deeper']);
    } finally {
      await m.cleanup();
    }
  });

  it('all-libraries mode: the root shows the libraries last seen', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.addLibrary('other');
    api.putFile(repo, '/a.txt', 'a\n');
    const cacheDir = await tmp();
    const opts = { cacheDir, prefetchDirs: 0, durableJournal: false, probeMinMs: 60_000 };
    const first = await Vfs.create(api, opts);
    expect((await first.readdir('/')).sort()).toEqual(['lib', 'other']);
    expect(await first.readdir('/lib')).toEqual(['a.txt']);
    first.close();
    await first.listings.flush();
    api.down = true;
    const second = await Vfs.create(api, opts);
    try {
      expect((await second.readdir('/')).sort()).toEqual(['lib', 'other']);
      expect(await second.readdir('/lib')).toEqual(['a.txt']);
      expect(errnoOf(await second.readdir('/other').catch((e: unknown) => e))).toBe('EIO');
    } finally {
      second.close();
      await second.listings.flush();
    }
  });

  it('online, a saved listing is asked for by its folder id: an unchanged folder is not sent again', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/dir');
    api.putFile(repo, '/dir/a.txt', 'a\n');
    const cacheDir = await tmp();
    const opts = { library: 'lib', cacheDir, prefetchDirs: 0, durableJournal: false };
    const first = await Vfs.create(api, opts);
    await first.readdir('/dir');
    first.close();
    await first.listings.flush();
    const second = await Vfs.create(api, opts);
    try {
      expect((await second.readdir('/dir')).sort()).toEqual(['a.txt']);
      expect(second.listingCache.stats.uptodate).toBe(2); // the root and /dir
      expect(second.listingCache.stats.fullListings).toBe(0);
    } finally {
      second.close();
      await second.listings.flush();
    }
  });
});
