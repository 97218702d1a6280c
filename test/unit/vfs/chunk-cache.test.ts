import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readlink, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChunkCache } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';

const C = 64 * 1024;
const MiB = 1024 * 1024;
const chunk = (i: number, n = C) => Buffer.alloc(n, i + 1);
/** a file id as Seafile gives them (the sha1 of the content): such versions persist */
const fileId = (s: string) => createHash('sha1').update(s).digest('hex');
const fileName = (version: string) => createHash('sha256').update(version).digest('hex');

describe('disk block cache', () => {
  const dirs: string[] = [];
  const caches: ChunkCache[] = [];
  afterEach(async () => {
    while (caches.length) await caches.pop()!.close();
    while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
  });
  async function tempDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'seafs-bc-'));
    dirs.push(dir);
    return dir;
  }
  async function cacheIn(dir: string, maxBytes = 64 * MiB, maxQueued?: number, markDelayMs?: number) {
    const c = new ChunkCache(dir, C, maxBytes, maxQueued, markDelayMs);
    caches.push(c);
    await c.init();
    return c;
  }
  async function idle(c: ChunkCache) {
    while (c.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
  }

  it('skips writes beyond its queue limit instead of holding their buffers, and serves what it wrote', async () => {
    const cache = await cacheIn(await tempDir(), 64 * MiB, 4 * C);
    await cache.open('v1', 10 * C);
    // ten puts in one turn: only four fit the queue
    for (let i = 0; i < 10; i++) cache.put('v1', i, [chunk(i)], C);
    expect(cache.stats.skipped).toBe(6);
    expect(cache.stats.skippedBytes).toBe(6 * C);
    await idle(cache);
    for (let i = 0; i < 4; i++) expect((await cache.get('v1', i, C))?.equals(chunk(i))).toBe(true);
    expect(cache.has('v1', 4)).toBe(false);
    expect(cache.wasSkipped('v1', 4)).toBe(true); // its owner may offer it again
    expect(cache.wasSkipped('v1', 3)).toBe(false);
    expect(await cache.get('v1', 4, C)).toBeNull();
    // once the queue drained, writes are taken again
    cache.put('v1', 7, [chunk(7)], C);
    await idle(cache);
    expect((await cache.get('v1', 7, C))?.equals(chunk(7))).toBe(true);
  });

  it('copies the buffers it is told are reused, so a later change to them does not reach the disk', async () => {
    const cache = await cacheIn(await tempDir());
    await cache.open('v1', 3 * C);
    const bufs = [chunk(0), chunk(1), chunk(2)];
    for (let i = 0; i < 3; i++) cache.put('v1', i, [bufs[i]], C, true);
    for (const b of bufs) b.fill(0xee); // the pool hands them out again
    await idle(cache);
    for (let i = 0; i < 3; i++) expect((await cache.get('v1', i, C))?.equals(chunk(i))).toBe(true);
  });

  it('clear drops every chunk, says how many bytes it freed, and keeps working', async () => {
    const cache = await cacheIn(await tempDir());
    await cache.open('v1', 3 * C);
    await cache.open('v2', C);
    for (let i = 0; i < 3; i++) cache.put('v1', i, [chunk(i)], C);
    cache.put('v2', 0, [chunk(9)], C);
    await idle(cache);
    expect(cache.clear()).toBe(4 * C);
    expect(cache.has('v1', 0)).toBe(false);
    expect(await cache.get('v2', 0, C)).toBeNull();
    expect(cache.clear()).toBe(0);
    await cache.open('v1', 3 * C);
    cache.put('v1', 1, [chunk(1)], C);
    await idle(cache);
    expect((await cache.get('v1', 1, C))?.equals(chunk(1))).toBe(true);
  });

  it('a later instance on the same dir serves what an earlier one wrote, by file id, and nothing for another id', async () => {
    const dir = await tempDir();
    const id = fileId('content one');
    const size = 2 * C + 1000; // a short last chunk
    const a = await cacheIn(dir);
    await a.open(id, size);
    a.put(id, 0, [chunk(0)], C);
    a.put(id, 2, [chunk(2, 1000)], 1000);
    await a.close();
    const b = await cacheIn(dir);
    expect(b.usage().used).toBeGreaterThan(0);
    expect(b.has(id, 0)).toBe(false); // not known before open()
    await b.open(id, size);
    expect(b.has(id, 0)).toBe(true);
    expect(b.has(id, 1)).toBe(false);
    expect((await b.get(id, 0, C))?.equals(chunk(0))).toBe(true);
    expect((await b.get(id, 2, 1000))?.equals(chunk(2, 1000))).toBe(true);
    expect(await b.get(id, 1, C)).toBeNull();
    // the file changed on the server: a new id, nothing of the old one is served
    const other = fileId('content two');
    await b.open(other, size);
    expect(b.has(other, 0)).toBe(false);
    expect(await b.get(other, 0, C)).toBeNull();
    // the same id with another size or chunk size is a mismatch: the file is dropped, not served
    const c = new ChunkCache(dir, C / 2, 64 * MiB);
    caches.push(c);
    await c.init();
    await c.open(id, size);
    expect(c.has(id, 0)).toBe(false);
    expect(await readdir(dir)).not.toContain(fileName(id));
  });

  it('a chunk whose data was written but whose marker was not (a kill -9 before it) is never served', async () => {
    const dir = await tempDir();
    const id = fileId('crash');
    // markers wait an hour: the process "dies" with the data on disk and no marker
    const a = await cacheIn(dir, 64 * MiB, undefined, 3_600_000);
    await a.open(id, 4 * C);
    for (let i = 0; i < 4; i++) a.put(id, i, [chunk(i)], C);
    await idle(a);
    expect(a.has(id, 3)).toBe(true); // this process knows it wrote them
    const b = await cacheIn(dir); // a's close() never ran
    await b.open(id, 4 * C);
    for (let i = 0; i < 4; i++) expect(b.has(id, i)).toBe(false);
    caches.splice(caches.indexOf(a), 1);
  });

  it('markers a process set without a datasync are trusted within the same boot only: after a reboot their chunks are misses, and are never revived under the new boot', async () => {
    const dir = await tempDir();
    const id = fileId('reboot');
    const bootA = 'aaaaaaaa-0000-4000-8000-000000000001';
    const bootB = 'bbbbbbbb-0000-4000-8000-000000000002';
    const inBoot = async (boot: string, settleMs = 3_600_000) => {
      const c = new ChunkCache(dir, C, 64 * MiB, undefined, undefined, undefined, settleMs, boot);
      caches.push(c);
      await c.init();
      await c.open(id, 4 * C);
      return c;
    };
    // boot A: four chunks written, markers set (not synced: no idle time, no unmount), then a kill -9
    const a = await inBoot(bootA);
    for (let i = 0; i < 4; i++) a.put(id, i, [chunk(i)], C);
    await a.flush();
    caches.splice(caches.indexOf(a), 1);
    // the same boot: the page cache holds what a wrote, so its markers are good
    const same = await inBoot(bootA);
    for (let i = 0; i < 4; i++) expect((await same.get(id, i, C))?.equals(chunk(i))).toBe(true);
    await same.close(); // nothing of its own to settle: a's markers stay unsynced
    // after a reboot (power loss may have taken the data behind them): none of them is served
    const b = await inBoot(bootB);
    for (let i = 0; i < 4; i++) expect(b.has(id, i)).toBe(false);
    expect(await b.get(id, 1, C)).toBeNull();
    // boot B writes chunk 0 again: the file now vouches for boot B's markers, and a's are gone for good
    b.put(id, 0, [chunk(0)], C);
    await b.flush();
    caches.splice(caches.indexOf(b), 1); // killed too
    const againB = await inBoot(bootB);
    expect(againB.has(id, 0)).toBe(true);
    for (let i = 1; i < 4; i++) expect(againB.has(id, i)).toBe(false);
    await againB.close();
    // a third boot trusts neither (the header names boot B; a's markers were zeroed, not left to boot A's id)
    const back = await inBoot(bootA);
    for (let i = 0; i < 4; i++) expect(back.has(id, i)).toBe(false);
    await back.close();
  });

  it('markers are made durable at unmount and once a version has been idle: a later boot trusts those', async () => {
    const dir = await tempDir();
    const bootA = 'aaaaaaaa-0000-4000-8000-000000000003';
    const bootB = 'bbbbbbbb-0000-4000-8000-000000000004';
    const ids = [fileId('unmounted'), fileId('idle')];
    const a = new ChunkCache(dir, C, 64 * MiB, undefined, 10, undefined, 200, bootA);
    caches.push(a);
    await a.init();
    for (const id of ids) {
      await a.open(id, 2 * C);
      a.put(id, 0, [chunk(0)], C);
      a.put(id, 1, [chunk(1)], C);
    }
    await a.flush();
    // idle past settleMs: synced and marked for good, with no unmount (a kill -9 after it loses nothing)
    for (let t = 0; a.unsyncedVersions > 0 && t < 500; t++) await new Promise((r) => setTimeout(r, 20));
    expect(a.unsyncedVersions).toBe(0);
    const b = new ChunkCache(dir, C, 64 * MiB, undefined, undefined, undefined, undefined, bootB);
    caches.push(b);
    await b.init();
    for (const id of ids) {
      await b.open(id, 2 * C);
      expect((await b.get(id, 1, C))?.equals(chunk(1))).toBe(true);
    }
    // one more chunk, then an unmount: durable at once
    await a.open(fileId('late'), 2 * C);
    a.put(fileId('late'), 0, [chunk(5)], C);
    await a.close();
    await b.open(fileId('late'), 2 * C);
    expect((await b.get(fileId('late'), 0, C))?.equals(chunk(5))).toBe(true);
  });

  it('a torn or foreign file under a version name is dropped, and a partial chunk without its marker is not read', async () => {
    const dir = await tempDir();
    const id = fileId('torn');
    await cacheIn(dir);
    // a header that is not one (a creation cut short would not even be under the name)
    await writeFile(join(dir, fileName(id)), Buffer.alloc(8192, 7));
    const b = await cacheIn(dir);
    await b.open(id, 2 * C);
    expect(b.has(id, 0)).toBe(false);
    expect(await readdir(dir)).not.toContain(fileName(id));
    // a valid file whose chunk 1 data is there, half written, and unmarked
    b.put(id, 0, [chunk(0)], C);
    await b.close();
    const fh = await open(join(dir, fileName(id)), 'r+');
    const dataOff = 4096;
    await fh.write(chunk(1, C / 2), 0, C / 2, dataOff + C);
    await fh.close();
    const c = await cacheIn(dir);
    await c.open(id, 2 * C);
    expect((await c.get(id, 0, C))?.equals(chunk(0))).toBe(true);
    expect(c.has(id, 1)).toBe(false);
    expect(await c.get(id, 1, C)).toBeNull();
  });

  it('caps the whole dir across instances, evicting the least recently used file, whoever wrote it', async () => {
    const dir = await tempDir();
    const max = 24 * C; // each version below is 10 chunks
    const [x, y, z] = [fileId('x'), fileId('y'), fileId('z')];
    const a = await cacheIn(dir, max);
    for (const v of [x, y]) {
      await a.open(v, 10 * C);
      for (let i = 0; i < 10; i++) a.put(v, i, [chunk(i)], C);
      await idle(a);
    }
    await a.close();
    // x was used last an hour ago, y a minute ago
    await utimes(join(dir, fileName(x)), new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    await utimes(join(dir, fileName(y)), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const b = await cacheIn(dir, max);
    await b.open(z, 10 * C);
    for (let i = 0; i < 10; i++) b.put(z, i, [chunk(i)], C);
    await idle(b);
    await b.flush();
    for (let i = 0; i < 50 && (await readdir(dir)).includes(fileName(x)); i++)
      await new Promise((r) => setTimeout(r, 20));
    const left = await readdir(dir);
    expect(left).not.toContain(fileName(x));
    expect(left).toContain(fileName(y));
    expect(left).toContain(fileName(z));
    expect(b.stats.evictions).toBe(1);
    // an instance started over a dir above its cap trims it at once
    const small = await cacheIn(dir, 12 * C);
    expect(small.usage().used).toBeLessThanOrEqual(12 * C);
  });

  it('gives way to the files being written: their bytes count against the cap and makeRoom evicts for them', async () => {
    const dir = await tempDir();
    const [x, y] = [fileId('x'), fileId('y')];
    const c = await cacheIn(dir, 24 * C);
    let reserved = 0;
    c.setReserved(() => reserved);
    for (const v of [x, y]) {
      await c.open(v, 10 * C);
      for (let i = 0; i < 10; i++) c.put(v, i, [chunk(i)], C);
      await idle(c);
    }
    expect(c.stats.evictions).toBe(0); // 20 chunks under a cap of 24
    reserved = 8 * C; // files being written take 8 chunks' worth of the dir: one version goes
    c.makeRoom();
    for (let i = 0; i < 50 && c.usage().used + reserved > 24 * C; i++) await new Promise((r) => setTimeout(r, 20));
    expect(c.usage().used + reserved).toBeLessThanOrEqual(24 * C);
    expect(c.stats.evictions).toBe(1);
  });

  it('two instances share one dir: both write the same version, each serves it, and one evicting it does not break the other', async () => {
    const dir = await tempDir();
    const id = fileId('shared');
    const a = await cacheIn(dir);
    const b = await cacheIn(dir);
    await a.open(id, 8 * C);
    await b.open(id, 8 * C);
    // both create the file at once: one of them wins the name, the other uses it
    for (let i = 0; i < 6; i++) a.put(id, i, [chunk(i)], C);
    for (let i = 2; i < 8; i++) b.put(id, i, [chunk(i)], C);
    await Promise.all([a.flush(), b.flush()]);
    for (let i = 0; i < 6; i++) expect((await a.get(id, i, C))?.equals(chunk(i))).toBe(true);
    for (let i = 2; i < 8; i++) expect((await b.get(id, i, C))?.equals(chunk(i))).toBe(true);
    expect((await readdir(dir)).filter((n) => n.startsWith(fileName(id)))).toEqual([fileName(id)]);
    // a third instance sees what both wrote
    const c = await cacheIn(dir);
    await c.open(id, 8 * C);
    for (let i = 0; i < 8; i++) expect((await c.get(id, i, C))?.equals(chunk(i)), `chunk ${i}`).toBe(true);
    // a clears the dir (seafs cache clear): b keeps serving from the file it holds open
    expect(a.clear()).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(await readdir(dir)).not.toContain(fileName(id));
    expect((await b.get(id, 5, C))?.equals(chunk(5))).toBe(true);
  });

  it('keeps a bounded number of versions open: the least recently used is closed, and read again from its markers later', async () => {
    const dir = await tempDir();
    const cache = new ChunkCache(dir, C, 64 * MiB, undefined, undefined, 2);
    caches.push(cache);
    await cache.init();
    const ids = [fileId('a'), fileId('b'), fileId('c')];
    for (const [k, id] of ids.entries()) {
      await cache.open(id, 2 * C);
      cache.put(id, 0, [chunk(k)], C);
      await cache.flush();
      await new Promise((r) => setTimeout(r, 5)); // a later last use for each
    }
    expect(cache.ready(ids[0])).toBe(false); // closed: the third open went over the limit
    expect(cache.ready(ids[2])).toBe(true);
    expect(cache.usage().used).toBe(3 * C); // still counted as on disk
    await cache.open(ids[0], 2 * C);
    expect((await cache.get(ids[0], 0, C))?.equals(chunk(0))).toBe(true);
  });

  /** descriptors of this process open on the file named `name` in `dir` (also once it is unlinked) */
  async function fdsOn(dir: string, name: string): Promise<number> {
    let n = 0;
    for (const fd of await readdir('/proc/self/fd')) {
      const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
      if (target.startsWith(join(dir, name))) n++;
    }
    return n;
  }

  it('readAt reads a range across chunks at any offset from the cache file, and answers false when a chunk of it is missing', async () => {
    const dir = await tempDir();
    const id = fileId('ranges');
    const a = await cacheIn(dir);
    await a.open(id, 4 * C);
    for (const i of [0, 1, 3]) a.put(id, i, [chunk(i)], C);
    await a.close();
    const b = await cacheIn(dir);
    await b.open(id, 4 * C);
    const all = Buffer.concat([chunk(0), chunk(1), chunk(2), chunk(3)]);
    for (const [off, len] of [
      [0, C],
      [C - 100, 300],
      [10, 2 * C - 20],
      [3 * C + 5, C - 5],
    ]) {
      const got = Buffer.alloc(len);
      expect(await b.readAt(id, off, got, len), `${off}+${len}`).toBe(true);
      expect(got.equals(all.subarray(off, off + len)), `${off}+${len}`).toBe(true);
    }
    // chunk 2 was never written: a range touching it is a miss, not zeros
    expect(await b.readAt(id, 2 * C - 10, Buffer.alloc(20), 20)).toBe(false);
    expect(await b.readAt(id, 2 * C, Buffer.alloc(C), C)).toBe(false);
    expect(b.stats.hits).toBe(4);
  });

  it('readAtNow answers the same ranges synchronously once the file is open, null before, and false for a missing chunk', async () => {
    const dir = await tempDir();
    const id = fileId('ranges now');
    const a = await cacheIn(dir);
    await a.open(id, 3 * C);
    for (const i of [0, 2]) a.put(id, i, [chunk(i)], C);
    await a.close();
    const b = await cacheIn(dir);
    await b.open(id, 3 * C);
    const all = Buffer.concat([chunk(0), chunk(1), chunk(2)]);
    // the cache file's descriptor comes with the first read through the handle
    const first = b.readAtNow(id, 0, Buffer.alloc(C), C);
    if (first === null) expect(await b.readAt(id, 0, Buffer.alloc(C), C)).toBe(true);
    for (const [off, len] of [
      [0, C],
      [5, C - 10],
      [2 * C + 7, C - 7],
    ]) {
      const got = Buffer.alloc(len);
      expect(b.readAtNow(id, off, got, len), `${off}+${len}`).toBe(true);
      expect(got.equals(all.subarray(off, off + len)), `${off}+${len}`).toBe(true);
    }
    // chunk 1 was never written: a miss, not zeros
    expect(b.readAtNow(id, C - 10, Buffer.alloc(20), 20)).toBe(false);
    expect(b.readAtNow(id, C, Buffer.alloc(C), C)).toBe(false);
    expect(b.readAtNow(fileId('never cached'), 0, Buffer.alloc(C), C)).toBe(false);
  });

  it('readAt keeps reading the file it opened when another takes its name (evicted and created again by another mount)', async () => {
    const dir = await tempDir();
    const id = fileId('renamed under it');
    const a = await cacheIn(dir);
    await a.open(id, 2 * C);
    a.put(id, 0, [chunk(0)], C);
    a.put(id, 1, [chunk(1)], C);
    await a.close();
    const b = await cacheIn(dir);
    await b.open(id, 2 * C);
    // the name holds other bytes before b's first read and after it: b reads the file it opened
    const replace = async (fill: number) => {
      await rm(join(dir, fileName(id)));
      await writeFile(join(dir, fileName(id)), Buffer.alloc(4 * C, fill));
    };
    await replace(0xee);
    for (const i of [0, 1]) {
      const got = Buffer.alloc(C);
      expect(await b.readAt(id, i * C, got, C)).toBe(true);
      expect(got.equals(chunk(i)), `chunk ${i}`).toBe(true);
      await replace(0xdd);
    }
  });

  it('a version dropped while readAt reads it: the read ends with its bytes, and no descriptor of the file stays open', async () => {
    const dir = await tempDir();
    const id = fileId('dropped while read');
    const a = await cacheIn(dir);
    await a.open(id, 8 * C);
    for (let i = 0; i < 8; i++) a.put(id, i, [chunk(i)], C);
    await a.close();
    const b = await cacheIn(dir);
    await b.open(id, 8 * C);
    expect(await b.readAt(id, 0, Buffer.alloc(C), C)).toBe(true);
    expect(await fdsOn(dir, fileName(id))).toBeGreaterThan(0);
    const got = Buffer.alloc(8 * C);
    const reading = b.readAt(id, 0, got, 8 * C);
    expect(b.clear()).toBeGreaterThan(0); // seafs cache clear, in the same turn as the read
    expect(await reading).toBe(true);
    expect(got.equals(Buffer.concat(Array.from({ length: 8 }, (_, i) => chunk(i))))).toBe(true);
    expect(await b.readAt(id, 0, Buffer.alloc(C), C)).toBe(false); // gone from the cache
    // the handle closes asynchronously; the read descriptor once its read is done
    for (let t = 0; t < 200 && (await fdsOn(dir, fileName(id))) > 0; t++) await new Promise((r) => setTimeout(r, 10));
    expect(await fdsOn(dir, fileName(id))).toBe(0);
  });

  it('a version without a real file id is kept only for the process, never under a name', async () => {
    const dir = await tempDir();
    const a = await cacheIn(dir);
    await a.open('repo:/f@123:1000', 1000);
    a.put('repo:/f@123:1000', 0, [chunk(0, 1000)], 1000);
    await a.flush();
    expect((await a.get('repo:/f@123:1000', 0, 1000))?.equals(chunk(0, 1000))).toBe(true);
    expect(await readdir(dir)).toEqual([]);
  });

  it('removes what dead processes left: the old per-process folders and half-created files', async () => {
    const dir = await tempDir();
    // a pid that cannot be alive (above the kernel's pid_max)
    const dead = 4_194_999;
    await mkdir(join(dir, String(dead)));
    await writeFile(join(dir, String(dead), 'old'), 'data');
    await writeFile(join(dir, `${fileName('a')}.tmp-${dead}-0011aabb`), 'half');
    await writeFile(join(dir, `${fileName('b')}.tmp-${process.pid}-0011aabb`), 'mine');
    await cacheIn(dir);
    expect(await readdir(dir)).toEqual([`${fileName('b')}.tmp-${process.pid}-0011aabb`]);
  });
});
