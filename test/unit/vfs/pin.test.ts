import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { RangeDownload } from '../../../src/client/types.js';
import type { Vfs } from '../../../src/vfs/vfs.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { apiError, expectErrno, FakeApi, makeVfs, readWhole, sleep } from '../../helpers/fake-api.js';

const KiB = 1024;
const get = async (vfs: Vfs, p: string, name: string) => (await vfs.xattrs.get(p, name)).toString();
/** the status attribute as it is now (a value read is otherwise answered unchanged for a second) */
const statusOf = async (vfs: Vfs, p: string) => {
  await sleep(1001);
  return get(vfs, p, 'user.seafile.status');
};
/** a file with the folders above it */
function put(api: FakeApi, repo: string, p: string, data: Buffer | string): void {
  const dir = p.slice(0, p.lastIndexOf('/'));
  if (dir) api.putDir(repo, dir);
  api.putFile(repo, p, data);
}
/** byte equality (toEqual walks a Buffer element by element: seconds for a MiB) */
const same = (a: Buffer, b: Buffer) => a.length === b.length && a.equals(b);
const pin = (vfs: Vfs, p: string, on = true) => vfs.xattrs.set(p, 'user.seafile.pinned', Buffer.from(on ? '1' : '0'));

describe('pinned files', () => {
  const cleanups = cleanupAfterEach();

  async function setup(opts: { diskCacheBytes?: number; cacheDir?: string } = {}) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const log: string[] = [];
    const m = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 50, log: (l) => log.push(l), ...opts });
    cleanups.push(m.cleanup);
    return { api, repo, vfs: m.vfs, log, cacheDir: m.cacheDir };
  }

  it('a pinned folder comes whole into the cache and reads with the server gone', async () => {
    const { api, repo, vfs } = await setup();
    const files: Record<string, Buffer> = {
      '/keep/a.bin': randomBytes(700 * KiB),
      '/keep/sub/b.txt': Buffer.from('small\n'),
      '/keep/sub/deep/c.bin': randomBytes(300 * KiB),
      '/keep/empty.txt': Buffer.alloc(0),
    };
    for (const [p, data] of Object.entries(files)) put(api, repo, p, data);
    put(api, repo, '/other.txt', 'not pinned');
    put(api, repo, '/read.txt', 'read once');
    await pin(vfs, '/keep');
    // the pin is recorded before setfattr returns
    expect(await get(vfs, '/keep', 'user.seafile.pinned')).toBe('1');
    expect(await get(vfs, '/keep/sub/deep/c.bin', 'user.seafile.pinned')).toBe('1');
    expect(await get(vfs, '/other.txt', 'user.seafile.pinned')).toBe('0');
    // `seafs pin` / `unpin` (through the vfs, not setfattr): getfattr right after says so, not an answer held
    await vfs.pin('/other.txt');
    expect(await get(vfs, '/other.txt', 'user.seafile.pinned')).toBe('1');
    await vfs.unpin('/other.txt');
    expect(await get(vfs, '/other.txt', 'user.seafile.pinned')).toBe('0');
    // not listed: cp -a within the mount must not pin the copies
    expect(await vfs.xattrs.list('/keep/a.bin')).not.toContain('user.seafile.pinned');
    await vfs.pins.idle();
    expect(vfs.pins.status()).toMatchObject({ roots: ['/keep'], files: 4, doneFiles: 4, failed: [] });
    expect(await readWhole(vfs, '/read.txt')).toEqual(Buffer.from('read once'));
    await vfs.reader.diskIdle();
    // the status attribute tells pinned, cached and cloud-only apart
    expect(await statusOf(vfs, '/keep/a.bin')).toBe('synced, pinned');
    expect(await get(vfs, '/keep', 'user.seafile.status')).toBe('synced, pinned');
    expect(await get(vfs, '/read.txt', 'user.seafile.status')).toBe('synced, cached');
    expect(await get(vfs, '/other.txt', 'user.seafile.status')).toBe('synced');

    api.down = true;
    const served = api.bytesServed;
    for (const [p, data] of Object.entries(files)) expect(same(await readWhole(vfs, p), data), p).toBe(true);
    expect(api.bytesServed).toBe(served);
    // what was never fetched stays out of reach
    await expectErrno(readWhole(vfs, '/other.txt'), 'EIO');
  });

  it('a file that changes on the server is fetched again, a new one is added, a removed one dropped', async () => {
    const { api, repo, vfs } = await setup();
    put(api, repo, '/docs/plan.txt', 'v1');
    put(api, repo, '/docs/gone.txt', 'bye');
    await pin(vfs, '/docs');
    await vfs.pins.idle();
    const oldId = api.fileIdAt(repo, '/docs/plan.txt');
    const changed = randomBytes(200 * KiB);
    put(api, repo, '/docs/plan.txt', changed);
    put(api, repo, '/docs/new/added.txt', 'added on the server');
    await api.deleteFile(repo, '/docs/gone.txt');
    expect(api.fileIdAt(repo, '/docs/plan.txt')).not.toBe(oldId);
    const lists = api.calls.listDir ?? 0;
    await vfs.pins.refresh();
    expect((api.calls.listDir ?? 0) - lists).toBe(1); // one recursive listing for the whole folder
    await vfs.pins.idle();
    expect(vfs.pins.status()).toMatchObject({ files: 2, doneFiles: 2 });
    // nothing changed since: the folder's id says so, and nothing is fetched
    const before = api.bytesServed;
    await vfs.pins.refresh();
    await vfs.pins.idle();
    expect(api.bytesServed).toBe(before);

    api.down = true;
    await sleep(60); // past the listing cache time: the listings the pin brought in are served stale
    expect(same(await readWhole(vfs, '/docs/plan.txt'), changed)).toBe(true);
    expect((await readWhole(vfs, '/docs/new/added.txt')).toString()).toBe('added on the server');
    expect((await vfs.readdir('/docs')).sort()).toEqual(['new', 'plan.txt']);
  });

  it('a pinned folder renamed through the mount stays pinned, with nothing fetched again', async () => {
    const { api, repo, vfs } = await setup();
    put(api, repo, '/a/one.bin', randomBytes(300 * KiB));
    put(api, repo, '/loose.txt', 'moved in later');
    await pin(vfs, '/a');
    await vfs.pins.idle();
    await vfs.rename('/a', '/b');
    expect(await get(vfs, '/b/one.bin', 'user.seafile.pinned')).toBe('1');
    expect(vfs.pins.status()).toMatchObject({ roots: ['/b'], files: 1, doneFiles: 1 });
    const served = api.bytesServed;
    await vfs.pins.refresh();
    await vfs.pins.idle();
    expect(api.bytesServed).toBe(served);
    expect(vfs.pins.status()).toMatchObject({ roots: ['/b'], files: 1, doneFiles: 1 });
    // a file moved into it is taken in
    await vfs.rename('/loose.txt', '/b/loose.txt');
    await vfs.pins.refresh();
    await vfs.pins.idle();
    expect(vfs.pins.status()).toMatchObject({ roots: ['/b'], files: 2, doneFiles: 2 });
  });

  it('the cache never evicts pinned files, and seafs cache clear keeps them', async () => {
    const { api, repo, vfs } = await setup({ diskCacheBytes: 2 * 1024 * KiB });
    const kept = randomBytes(600 * KiB);
    put(api, repo, '/kept.bin', kept);
    for (let i = 0; i < 6; i++) put(api, repo, `/read${i}.bin`, randomBytes(400 * KiB));
    await pin(vfs, '/kept.bin');
    await vfs.pins.idle();
    // 2.4 MiB read through a 2 MiB cache: the least recently used go, the pinned file (read least recently) stays
    for (let i = 0; i < 6; i++) {
      await readWhole(vfs, `/read${i}.bin`);
      await vfs.reader.diskIdle();
    }
    await sleep(50);
    expect(vfs.chunkCache!.stats.evictions).toBeGreaterThan(0);
    expect(await statusOf(vfs, '/read0.bin')).toBe('synced');
    expect(await get(vfs, '/read5.bin', 'user.seafile.status')).toBe('synced, cached');
    expect(await get(vfs, '/kept.bin', 'user.seafile.status')).toBe('synced, pinned');
    expect(vfs.clearCache()).toBeGreaterThan(0);
    expect(await statusOf(vfs, '/read5.bin')).toBe('synced');
    api.down = true;
    const served = api.bytesServed;
    // from disk: the pin's download never went through the reader's memory
    expect(same(await readWhole(vfs, '/kept.bin'), kept)).toBe(true);
    expect(api.bytesServed).toBe(served);
    expect(await get(vfs, '/kept.bin', 'user.seafile.status')).toBe('synced, pinned');
  });

  it('pinning more than the cache holds is refused with ENOSPC and a clear line, and changes nothing', async () => {
    const { api, repo, vfs, log } = await setup({ diskCacheBytes: 1024 * KiB });
    put(api, repo, '/big/a.bin', randomBytes(600 * KiB));
    put(api, repo, '/big/b.bin', randomBytes(600 * KiB));
    put(api, repo, '/small.bin', randomBytes(500 * KiB));
    const downloads = api.calls.download ?? 0;
    await expectErrno(pin(vfs, '/big'), 'ENOSPC');
    expect(log.find((l) => l.startsWith('cannot pin /big:'))).toMatch(
      /needs 1\.2 MiB more on disk, pinned files take 0 B already, and at most 921\.6 KiB may be pinned \(90% of --cache-max-size 1\.0 MiB\)/,
    );
    expect(await get(vfs, '/big/a.bin', 'user.seafile.pinned')).toBe('0');
    expect(api.calls.download ?? 0).toBe(downloads);
    // one that fits is taken; then the next one no longer fits
    await pin(vfs, '/small.bin');
    await expectErrno(pin(vfs, '/big/a.bin'), 'ENOSPC');
    // a file pinned through its folder is unpinned with the folder only
    put(api, repo, '/d/x.txt', 'x');
    await sleep(60); // past the listing cache time
    await pin(vfs, '/d');
    await expectErrno(pin(vfs, '/d/x.txt', false), 'EINVAL');
    await pin(vfs, '/d', false);
    expect(await get(vfs, '/d/x.txt', 'user.seafile.pinned')).toBe('0');
    await expectErrno(vfs.xattrs.set('/small.bin', 'user.seafile.pinned', Buffer.from('yes')), 'EINVAL');
  });

  it('files of a pinned folder that no longer fit are counted until the folder is unpinned', async () => {
    const { api, repo, vfs } = await setup({ diskCacheBytes: 1024 * KiB });
    put(api, repo, '/f/a.bin', randomBytes(100 * KiB));
    await pin(vfs, '/f');
    put(api, repo, '/f/huge.bin', randomBytes(950 * KiB));
    await sleep(60); // past the listing cache time
    await vfs.pins.refresh();
    expect(vfs.pins.status().unfit).toEqual({ files: 1, bytes: 950 * KiB });
    await pin(vfs, '/f', false);
    expect(vfs.pins.status().unfit).toEqual({ files: 0, bytes: 0 });
  });

  it('pins outlive the mount, and a download cut short goes on where it stopped', async () => {
    const first = await setup();
    const { api, repo, cacheDir } = first;
    const data = randomBytes(1024 * KiB);
    put(api, repo, '/p/big.bin', data);
    put(api, repo, '/loose.bin', randomBytes(200 * KiB));
    await readWhole(first.vfs, '/loose.bin');
    // the connection breaks after 3 of its 8 chunks, as when the mount is killed
    const real = api.download.bind(api);
    api.download = async (url: string, range?: { start: number; end?: number }): Promise<RangeDownload> => {
      const res = await real(url, range);
      const body = res.body;
      let sent = 0;
      res.body = Readable.from(
        (async function* () {
          for await (const piece of body) {
            if (sent >= 384 * KiB) {
              api.down = true;
              throw apiError('network', 0, 'download', 'connect ECONNREFUSED');
            }
            sent += (piece as Buffer).length;
            yield piece as Buffer;
          }
        })(),
      );
      return res;
    };
    await pin(first.vfs, '/p');
    await first.vfs.pins.idle();
    expect(first.vfs.pins.status()).toMatchObject({ files: 1, doneFiles: 0, waiting: 1 });
    await first.vfs.reader.diskIdle();
    first.vfs.close();
    const stored = JSON.parse(await readFile(join(cacheDir, 'pins', `${repo}.json`), 'utf8')) as {
      roots: { path: string }[];
    };
    expect(stored.roots.map((r) => r.path)).toEqual(['/p']);

    api.down = false;
    api.download = real;
    const served = api.bytesServed;
    const log: string[] = [];
    const m = await makeVfs(api, { library: 'lib', cacheDir, log: (l) => log.push(l) });
    cleanups.push(m.cleanup);
    expect(await get(m.vfs, '/p/big.bin', 'user.seafile.pinned')).toBe('1');
    await m.vfs.pins.idle();
    expect(m.vfs.pins.status()).toMatchObject({ files: 1, doneFiles: 1 });
    // only what the first mount did not get
    expect(api.bytesServed - served).toBeLessThanOrEqual(data.length - 384 * KiB);
    expect(log).toContain('pinned: 1 file(s) in 1 library; checking them');
    // a file the first mount read, left on disk: told apart without being opened for use
    expect(await get(m.vfs, '/loose.bin', 'user.seafile.status')).toBe('synced, cached');
    api.down = true;
    expect(same(await readWhole(m.vfs, '/p/big.bin'), data)).toBe(true);
    expect((await readdir(join(cacheDir, 'pins'))).filter((n) => n.includes('.tmp'))).toEqual([]);
  });

  it('a mount started offline reads pinned files in folders it never listed itself (the pin listing is kept on disk)', async () => {
    const { api, repo, vfs, cacheDir } = await setup();
    const deep = randomBytes(200 * KiB);
    put(api, repo, '/keep/sub/deep/c.bin', deep);
    put(api, repo, '/keep/top.txt', 'top\n');
    await pin(vfs, '/keep');
    await vfs.pins.idle();
    await vfs.reader.diskIdle();
    vfs.close();
    await vfs.reader.closeDisk();
    await vfs.listings.flush();

    api.down = true;
    const again = await makeVfs(api, { library: 'lib', cacheDir, dirCacheTimeMs: 50 });
    cleanups.push(again.cleanup);
    expect(again.vfs.connectivity.online).toBe(false);
    expect(same(await readWhole(again.vfs, '/keep/sub/deep/c.bin'), deep)).toBe(true);
    expect((await readWhole(again.vfs, '/keep/top.txt')).toString()).toBe('top\n');
  });
});
