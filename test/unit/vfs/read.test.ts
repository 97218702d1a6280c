import { createHash } from 'node:crypto';
import { constants as FC } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { StreamUnsupported } from '../../../src/client/errors.js';
import { ChunkCache } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';
import { apiError, FakeApi, makeVfs, readWhole, sleep } from '../../helpers/fake-api.js';

/** GETs of file content: ranged ones and streams */
const gets = (api: FakeApi) => (api.calls.download ?? 0) + (api.calls.streamGet ?? 0);

function pattern(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i + 4 <= n; i += 4) b.writeUInt32LE(i, i);
  return b;
}

describe('vfs read path', () => {
  const cleanups = cleanupAfterEach();

  async function setup(size: number) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(size);
    api.putFile(repo, '/big.bin', data);
    const m = await makeVfs(api, { library: 'lib' });
    cleanups.push(m.cleanup);
    return { api, repo, data, ...m };
  }

  it('a small read of a big file fetches one chunk, not the file', async () => {
    const { api, data, vfs } = await setup(16 * 1024 * 1024);
    const fh = await vfs.open('/big.bin', FC.O_RDONLY);
    const buf = Buffer.alloc(4096);
    const n = await vfs.read('/big.bin', fh, buf, 4096, 10_000_000);
    expect(n).toBe(4096);
    expect(buf.equals(data.subarray(10_000_000, 10_004_096))).toBe(true);
    expect(api.bytesServed).toBeLessThanOrEqual(256 * 1024);
    await vfs.release('/big.bin', fh);
  });

  it('a sequential read returns the exact bytes, with readahead in large ranged requests', async () => {
    const { api, data, vfs } = await setup(20 * 1024 * 1024 + 123);
    const got = await readWhole(vfs, '/big.bin');
    expect(got.equals(data)).toBe(true);
    // one reusable link, a few large ranges rather than one request per read
    expect(api.calls.downloadLink).toBe(1);
    expect(gets(api)).toBeLessThan(20);
    expect(api.bytesServed).toBe(data.length);
  });

  it('handles a server that ignores Range and answers 200 with the whole file', async () => {
    const { api, data, vfs } = await setup(3 * 1024 * 1024 + 7);
    api.ignoreRange = true;
    const fh = await vfs.open('/big.bin', FC.O_RDONLY);
    const buf = Buffer.alloc(10_000);
    const n = await vfs.read('/big.bin', fh, buf, 10_000, 2_000_000);
    expect(n).toBe(10_000);
    expect(buf.equals(data.subarray(2_000_000, 2_010_000))).toBe(true);
    await vfs.release('/big.bin', fh);
    expect((await readWhole(vfs, '/big.bin')).equals(data)).toBe(true);
  });

  it('reads at and past the end of file', async () => {
    const { data, vfs } = await setup(1000);
    const fh = await vfs.open('/big.bin', FC.O_RDONLY);
    const buf = Buffer.alloc(4096);
    expect(await vfs.read('/big.bin', fh, buf, 4096, 900)).toBe(100);
    expect(buf.subarray(0, 100).equals(data.subarray(900))).toBe(true);
    expect(await vfs.read('/big.bin', fh, buf, 4096, 1000)).toBe(0);
    await vfs.release('/big.bin', fh);
  });
});

describe('vfs on-disk block cache', () => {
  it('serves a second read from disk once memory has let the chunks go', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(12 * 1024 * 1024 + 5);
    api.putFile(repo, '/f.bin', data);
    const m = await makeVfs(api, {
      library: 'lib',
      // ranged readahead (the streamed pass is the next test's)
      reader: {
        memoryBytes: 4 * 1024 * 1024,
        maxWindow: 2 * 1024 * 1024,
        segmentSize: 1024 * 1024,
        streamMinBytes: 64 * 1024 * 1024,
      },
      diskCacheBytes: 64 * 1024 * 1024,
    });
    try {
      expect((await readWhole(m.vfs, '/f.bin')).equals(data)).toBe(true);
      const served = api.bytesServed;
      expect(served).toBe(data.length);
      await m.vfs.reader.diskIdle(); // the disk writes are fire-and-forget
      expect((await readWhole(m.vfs, '/f.bin')).equals(data)).toBe(true);
      expect(api.bytesServed).toBe(served);
      expect(m.vfs.reader.stats.diskChunks).toBeGreaterThan(60);
    } finally {
      await m.cleanup();
    }
  });
});

describe('vfs disk cache across mounts', () => {
  async function twoMounts(cacheStreamsUpTo?: number, diskQueueBytes?: number) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(24 * 1024 * 1024 + 5); // above streamMinBytes: one streaming GET
    api.putFile(repo, '/f.bin', data);
    const opts = { library: 'lib', diskCacheBytes: 256 * 1024 * 1024, diskQueueBytes, reader: { cacheStreamsUpTo } };
    const first = await makeVfs(api, opts);
    try {
      expect((await readWhole(first.vfs, '/f.bin')).equals(data)).toBe(true);
      expect(api.calls.streamGet).toBeGreaterThan(0);
      expect(api.bytesServed).toBe(data.length);
      // a stream whose file is kept waits for the disk; what skips is written at unmount from memory
      const skipped = first.vfs.chunkCache!.stats.skippedBytes;
      await first.vfs.reader.closeDisk(); // what the unmount does before it says done
      first.vfs.close();
      const second = await makeVfs(api, { ...opts, cacheDir: first.cacheDir });
      try {
        const before = api.bytesServed;
        expect((await readWhole(second.vfs, '/f.bin')).equals(data)).toBe(true);
        return { fetched: api.bytesServed - before, size: data.length, skipped, second };
      } finally {
        second.vfs.close();
      }
    } finally {
      await first.cleanup();
    }
  }

  it('a file read front to back by a stream is read again by the next mount from disk, with no download', async () => {
    const { fetched, skipped, second } = await twoMounts();
    // the fake serves at memory speed, so the disk may fall behind: the stream then waits for it
    expect(skipped).toBe(0);
    expect(fetched).toBe(0);
    expect(second.vfs.reader.stats.diskChunks).toBe(193);
    // a disk that takes one chunk at a time holds the stream back all along: nothing skipped, nothing downloaded
    const slow = await twoMounts(undefined, 128 * 1024);
    expect(slow.skipped).toBe(0);
    expect(slow.fetched).toBe(0);
    expect(slow.second.vfs.reader.stats.diskChunks).toBe(193);
  });

  it('with stream caching off the streamed pass is not kept, and the next mount downloads the file again', async () => {
    const { fetched, size } = await twoMounts(0);
    expect(fetched).toBe(size);
  });

  it('a streamed file larger than the stream-caching limit is not kept (a large pass must not evict the working set)', async () => {
    const over = await twoMounts(24 * 1024 * 1024);
    expect(over.fetched).toBe(over.size);
    expect(over.skipped).toBe(0); // not even offered to the disk
    const under = await twoMounts(24 * 1024 * 1024 + 5);
    expect(under.fetched).toBe(0);
  });

  it('a file partly on disk downloads only what is missing: short holes by ranged GETs, a long stretch by a stream that stops where the disk takes over', async () => {
    const C = 128 * 1024;
    const data = pattern(24 * 1024 * 1024 + 5); // 193 chunks
    const id = createHash('sha1').update(data).digest('hex');
    const run = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, k) => a + k);
    // what an earlier mount left: chunks skipped when it wrote them, or a first part never read
    for (const holes of [
      [...run(0, 59), 70, 71, 100, 150, 151, 152],
      [130, 135, ...run(140, 142), ...run(150, 170)],
    ]) {
      const api = new FakeApi();
      const repo = api.addLibrary('lib');
      api.putFile(repo, '/f.bin', data);
      const missing = new Set(holes);
      const cacheDir = await mkdtemp(join(tmpdir(), 'seafs-unit-'));
      const pre = new ChunkCache(join(cacheDir, 'blocks'), C, 1024 ** 3);
      await pre.init();
      await pre.open(id, data.length);
      for (let i = 0; i < 193; i++) {
        if (missing.has(i)) continue;
        pre.put(id, i, [data.subarray(i * C, Math.min(data.length, (i + 1) * C))], Math.min(C, data.length - i * C));
        await pre.flush();
      }
      await pre.close();
      const m = await makeVfs(api, { library: 'lib', cacheDir });
      try {
        expect((await readWhole(m.vfs, '/f.bin')).equals(data)).toBe(true);
        // the stream's socket may have brought part of the chunk after its last before it paused
        expect(api.bytesServed).toBeGreaterThanOrEqual(missing.size * C);
        expect(api.bytesServed).toBeLessThanOrEqual((missing.size + 1) * C);
        expect(m.vfs.reader.stats.diskChunks).toBe(193 - missing.size);
      } finally {
        await m.cleanup();
      }
    }
  });

  it('a new version of the file is downloaded, never served from the blocks of the old one', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const old = pattern(12 * 1024 * 1024);
    api.putFile(repo, '/f.bin', old);
    const first = await makeVfs(api, { library: 'lib' });
    try {
      expect((await readWhole(first.vfs, '/f.bin')).equals(old)).toBe(true);
      await first.vfs.chunkCache!.close();
      first.vfs.close();
      const changed = Buffer.from(old);
      changed.fill(0x5a, 5_000_000, 5_000_100);
      api.putFile(repo, '/f.bin', changed);
      const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
      try {
        const before = api.bytesServed;
        expect((await readWhole(second.vfs, '/f.bin')).equals(changed)).toBe(true);
        expect(api.bytesServed - before).toBe(changed.length);
        expect(second.vfs.reader.stats.diskChunks).toBe(0);
      } finally {
        second.vfs.close();
      }
    } finally {
      await first.cleanup();
    }
  });
});

describe('vfs random reads', () => {
  it('many random reads of a file fetch all of it in the background; later reads are local', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(8 * 1024 * 1024);
    api.putFile(repo, '/r.bin', data);
    const m = await makeVfs(api, {
      library: 'lib',
      diskCacheBytes: 64 * 1024 * 1024,
      reader: { memoryBytes: 2 * 1024 * 1024, segmentSize: 1024 * 1024 },
    });
    try {
      const fh = await m.vfs.open('/r.bin', FC.O_RDONLY);
      const buf = Buffer.alloc(4096);
      let seed = 7;
      const rnd = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
      };
      const readAt = async (off: number) => {
        expect(await m.vfs.read('/r.bin', fh, buf, 4096, off)).toBe(4096);
        expect(buf.equals(data.subarray(off, off + 4096))).toBe(true);
      };
      for (let i = 0; i < 40; i++) await readAt(Math.floor(rnd() * (data.length - 4096)) & ~4095);
      expect(m.vfs.reader.stats.fills).toBe(1);
      for (let i = 0; i < 100 && m.vfs.chunkCache!.stats.writes < 64; i++) await sleep(20);
      await sleep(50);
      const downloads = gets(api);
      for (let i = 0; i < 200; i++) await readAt(Math.floor(rnd() * (data.length - 4096)) & ~4095);
      expect(gets(api)).toBe(downloads);
      // the whole file came once, plus the chunks of the first random reads
      expect(api.bytesServed).toBeLessThan(data.length + 40 * 128 * 1024 + 1);
      await m.vfs.release('/r.bin', fh);
    } finally {
      await m.cleanup();
    }
  });
});

describe('vfs reads that skip ahead', () => {
  it('a sequential reader jumping forward (the page cache holds the rest) and many handles each reading one part do not fetch the whole file', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(64 * 1024 * 1024);
    api.putFile(repo, '/s.bin', data);
    const m = await makeVfs(api, {
      library: 'lib',
      diskCacheBytes: 256 * 1024 * 1024,
      reader: { memoryBytes: 4 * 1024 * 1024 },
    });
    try {
      const buf = Buffer.alloc(128 * 1024);
      const readAt = async (fh: number, off: number) => {
        expect(await m.vfs.read('/s.bin', fh, buf, buf.length, off)).toBe(buf.length);
        expect(buf.equals(data.subarray(off, off + buf.length))).toBe(true);
      };
      // one handle: 1 MiB read, then a 2 MiB gap, 40 times over
      const fh = await m.vfs.open('/s.bin', FC.O_RDONLY);
      for (let part = 0; part < 40; part++) {
        const base = part * 3 * 512 * 1024;
        for (let k = 0; k < 4; k++) await readAt(fh, base + k * buf.length);
      }
      await m.vfs.release('/s.bin', fh);
      // 40 handles, each reading 256 KiB at its own offset
      for (let part = 0; part < 40; part++) {
        const h = await m.vfs.open('/s.bin', FC.O_RDONLY);
        await readAt(h, part * 1536 * 1024 + 128 * 1024);
        await readAt(h, part * 1536 * 1024 + 256 * 1024);
        await m.vfs.release('/s.bin', h);
      }
      expect(m.vfs.reader.stats.fills).toBe(0);
      // a reader jumping back and forth still gets the whole file fetched once
      const r = await m.vfs.open('/s.bin', FC.O_RDONLY);
      for (let i = 0; i < 40; i++) await readAt(r, ((i * 7919) % 400) * 128 * 1024);
      expect(m.vfs.reader.stats.fills).toBe(1);
      await m.vfs.release('/s.bin', r);
    } finally {
      await m.cleanup();
    }
  });
});

describe('vfs re-reads of page-cache holes', () => {
  it('a fresh handle asking for scattered pages from the middle on, a little out of order, is read by a stream, not a GET per page', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const MiB = 1024 * 1024;
    const data = pattern(64 * MiB);
    api.putFile(repo, '/h.bin', data);
    const m = await makeVfs(api, { library: 'lib', diskCacheBytes: 0, reader: { memoryBytes: 4 * MiB } });
    try {
      expect((await readWhole(m.vfs, '/h.bin')).equals(data)).toBe(true);
      const downloads = gets(api);
      // what a re-read asks once the host paged out single pages: 4-16 KiB reads, steps of
      // 100 KiB-2 MiB, every third one a little behind the one before (kernel readahead in flight)
      const fh = await m.vfs.open('/h.bin', FC.O_RDONLY);
      let off = Math.round(1.8 * MiB);
      let reads = 0;
      for (let k = 0; off < data.length - MiB; k++, reads++) {
        const len = 4096 * (1 + (k % 4));
        const at = k % 3 === 2 ? off - 200 * 1024 : off;
        const buf = Buffer.alloc(len);
        expect(await m.vfs.read('/h.bin', fh, buf, len, at)).toBe(len);
        expect(buf.equals(data.subarray(at, at + len))).toBe(true);
        off += 100 * 1024 + ((k * 7919) % 19) * 100 * 1024;
      }
      await m.vfs.release('/h.bin', fh);
      expect(reads).toBeGreaterThan(50);
      expect(m.vfs.reader.stats.fills).toBe(0);
      // one stream (or a few), where the old classification sent one ranged GET per read
      expect(gets(api) - downloads).toBeLessThanOrEqual(5);
    } finally {
      await m.cleanup();
    }
  });
});

describe('vfs streaming readahead', () => {
  it('feeds a sequential reader of a big file from one GET, and ends it when the handle closes', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(3 * 1024 * 1024 + 11);
    for (let i = 0; i < 20; i++) api.putFile(repo, `/f${i}`, Buffer.concat([data, Buffer.from([i])]));
    const m = await makeVfs(api, { library: 'lib', diskCacheBytes: 0, reader: { streamMinBytes: 1024 * 1024 } });
    try {
      const whole = await readWhole(m.vfs, '/f0');
      expect(whole.equals(Buffer.concat([data, Buffer.from([0])]))).toBe(true);
      expect(m.vfs.reader.stats.streams).toBe(1);
      // `head` of many files: each starts a stream that must not outlive its handle
      const buf = Buffer.alloc(128 * 1024);
      for (let i = 1; i < 20; i++) {
        const fh = await m.vfs.open(`/f${i}`, FC.O_RDONLY);
        expect(await m.vfs.read(`/f${i}`, fh, buf, buf.length, 0)).toBe(buf.length);
        expect(await m.vfs.read(`/f${i}`, fh, buf, buf.length, buf.length)).toBe(buf.length);
        expect(buf.equals(data.subarray(buf.length, 2 * buf.length))).toBe(true);
        await m.vfs.release(`/f${i}`, fh);
      }
      for (let i = 0; i < 50 && m.vfs.reader.stats.activeStreams > 0; i++) await sleep(10);
      expect(m.vfs.reader.stats.activeStreams).toBe(0);
    } finally {
      await m.cleanup();
    }
  });
});

describe('vfs streaming GET capability', () => {
  const MiB = 1024 * 1024;
  async function streamSetup() {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(12 * MiB + 321);
    api.putFile(repo, '/s.bin', data);
    const m = await makeVfs(api, { library: 'lib', diskCacheBytes: 0, reader: { streamMinBytes: MiB } });
    return { api, data, m };
  }

  it('a sequential reader of a big file is fed by the API streaming GET when it has one: one stream, no ranged GET', async () => {
    const { api, data, m } = await streamSetup();
    try {
      expect((await readWhole(m.vfs, '/s.bin')).equals(data)).toBe(true);
      expect(api.calls.streamGet).toBe(1);
      expect(api.calls.download ?? 0).toBe(0);
      expect(api.bytesServed).toBe(data.length);
    } finally {
      await m.cleanup();
    }
  });

  it('an API without the capability, or whose streaming GET cannot read the link, streams through download() with the same bytes', async () => {
    for (const variant of ['absent', 'unsupported'] as const) {
      const { api, data, m } = await streamSetup();
      try {
        if (variant === 'absent') (api as { streamGet?: unknown }).streamGet = undefined;
        else
          api.streamGet = () => {
            api.calls.streamGet = (api.calls.streamGet ?? 0) + 1;
            throw new StreamUnsupported('https');
          };
        expect((await readWhole(m.vfs, '/s.bin')).equals(data)).toBe(true);
        expect(api.calls.streamGet ?? 0).toBe(variant === 'absent' ? 0 : 1);
        expect(api.calls.download).toBe(1);
        expect(m.vfs.reader.stats.streams).toBe(1);
      } finally {
        await m.cleanup();
      }
    }
  });

  it('a streaming GET refused for a spent link is retried once on a renewed link', async () => {
    const { api, data, m } = await streamSetup();
    try {
      api.failNext.set('streamGet', [apiError('forbidden', 403, 'download', 'HTTP 403')]);
      expect((await readWhole(m.vfs, '/s.bin')).equals(data)).toBe(true);
      expect(api.calls.streamGet).toBe(2);
      expect(api.calls.downloadLink).toBe(2);
      expect(api.calls.download ?? 0).toBe(0);
    } finally {
      await m.cleanup();
    }
  });
});
