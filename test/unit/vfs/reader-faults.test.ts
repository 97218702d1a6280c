// Regression tests for the read path's recovery paths, each of which once
// returned wrong bytes, failed, or stalled (the stress run in
// vfs-reader-stress.test.ts found them; these pin each one down).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import type { SeafileApi } from '../../../src/client/types.js';
import { ChunkCache } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';
import { RemoteReader, type ReaderOptions, type ReadPattern } from '../../../src/vfs/read/reader.js';
import { faultsOf, mulberry32, seededBytes, StressServer, type Faults } from './reader-stress-server.js';

const KiB = 1024;
const MiB = 1024 * KiB;

describe('read path recovery', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => {});
  });

  async function setup(data: Buffer, faults: Partial<Faults>, opts: ReaderOptions, diskBytes = 0) {
    const files = new Map([['/f.bin', data]]);
    const server = new StressServer(files, faultsOf(faults), mulberry32(7));
    await server.start();
    const client = new SeafileClient({ baseUrl: server.url, maxRetries: 0, transferTimeoutMs: 2_000 });
    const api = {
      downloadLink: async (_r: string, p: string) => ({ url: server.link(p), oid: null }),
      download: (url: string, range?: { start: number; end?: number }) => client.download(url, range),
      streamGet: client.streamGet.bind(client),
    } as unknown as SeafileApi;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'seafs-rf-'));
    let disk: ChunkCache | null = null;
    if (diskBytes) {
      disk = new ChunkCache(path.join(dir, String(process.pid)), opts.chunkSize ?? 128 * KiB, diskBytes);
      await disk.init();
    }
    cleanups.push(async () => {
      await server.close();
      await client.close();
      await disk?.close();
      await rm(dir, { recursive: true, force: true });
    });
    const reader = new RemoteReader(api, opts, disk);
    const f = { repo: 'r', path: '/f.bin', size: data.length, version: 'v1' };
    return { server, reader, f };
  }

  /** the kernel's sequential pattern: `depth` reads of `req` bytes in flight */
  async function readAll(
    reader: RemoteReader,
    f: { size: number } & Parameters<RemoteReader['read']>[0],
    data: Buffer,
    req: number,
    depth: number,
  ) {
    const pat: ReadPattern = { next: 0, window: 0 };
    const bad: number[] = [];
    const pending = new Set<Promise<void>>();
    for (let off = 0; off < f.size; off += req) {
      const at = off;
      const p = (async () => {
        const t = Buffer.alloc(req);
        const n = await reader.read(f, t, req, at, pat);
        if (n !== Math.min(req, f.size - at) || !t.subarray(0, n).equals(data.subarray(at, at + n))) bad.push(at);
      })().finally(() => pending.delete(p));
      pending.add(p);
      if (pending.size >= depth) await Promise.race(pending);
    }
    await Promise.all(pending);
    reader.closePattern(f, pat);
    return bad;
  }

  it('a memory budget of one chunk never hands a reader a chunk buffer that is being refilled', async () => {
    // the stream evicted the chunk it had just delivered and reused its buffer for the next one
    // before the waiting reader copied it out
    const data = seededBytes(1, 3 * MiB + 333);
    const { reader, f } = await setup(
      data,
      {},
      { chunkSize: 64 * KiB, memoryBytes: 64 * KiB, streamMinBytes: 0, maxWindow: 1 * MiB },
    );
    expect(await readAll(reader, f, data, 64 * KiB, 3)).toEqual([]);
    expect(reader.stats.streams).toBeGreaterThan(0);
    expect(reader.memory().used).toBeLessThanOrEqual(64 * KiB);
  });

  it('a ranged GET whose connection drops midway is resumed where it stopped, not failed', async () => {
    const data = seededBytes(2, 2 * MiB + 5);
    const { server, reader, f } = await setup(
      data,
      { dropProb: 1 },
      { chunkSize: 64 * KiB, streamMinBytes: 64 * MiB, segmentSize: 512 * KiB },
    );
    expect(await readAll(reader, f, data, 128 * KiB, 2)).toEqual([]);
    expect(server.stats.drops).toBeGreaterThan(2);
  });

  it('a stream that drops or stalls midway hands what readers wait for to ranged GETs', async () => {
    const data = seededBytes(3, 4 * MiB + 17);
    for (const faults of [{ dropProb: 1 }, { stallProb: 1, stallMs: 600 }]) {
      const { server, reader, f } = await setup(data, faults, {
        chunkSize: 32 * KiB,
        streamMinBytes: 0,
        stallMs: 150,
        memoryBytes: 256 * KiB,
      });
      expect(await readAll(reader, f, data, 128 * KiB, 4)).toEqual([]);
      expect(server.stats.drops + server.stats.stalls).toBeGreaterThan(1);
    }
  });

  it('an expired link is renewed for the stream and for ranged GETs', async () => {
    const data = seededBytes(4, 3 * MiB + 1);
    const { server, reader, f } = await setup(
      data,
      { linkLifeMs: [30, 60], latencyMs: 15 },
      { chunkSize: 64 * KiB, streamMinBytes: 1 * MiB },
    );
    const pat: ReadPattern = { next: 0, window: 0 };
    // random reads (ranged GETs), a pause that outlives the link, then a sequential pass (a stream)
    const r = mulberry32(9);
    for (let i = 0; i < 6; i++) {
      const at = Math.floor(r() * (data.length - 4096));
      const t = Buffer.alloc(4096);
      expect(await reader.read(f, t, 4096, at, pat)).toBe(4096);
      expect(t.equals(data.subarray(at, at + 4096))).toBe(true);
      await new Promise((res) => setTimeout(res, 70));
    }
    expect(await readAll(reader, f, data, 128 * KiB, 2)).toEqual([]);
    expect(server.stats.refused).toBeGreaterThan(0);
  });

  it('a chunk the stream already went past (delivered, then evicted) is fetched, not waited for until the stream idles out', async () => {
    // readahead used to register such a chunk with the stream, which never sends it again:
    // the read hung until the stream's idle timer ended it
    const data = seededBytes(5, 4 * MiB);
    const { reader, f } = await setup(
      data,
      {},
      {
        chunkSize: 32 * KiB,
        memoryBytes: 2 * 32 * KiB,
        streamMinBytes: 0,
        maxWindow: 512 * KiB,
        streamIdleMs: 600_000,
      },
    );
    const pat: ReadPattern = { next: 0, window: 0 };
    const t = Buffer.alloc(128 * KiB);
    for (let off = 0; off < 1 * MiB; off += 128 * KiB) await reader.read(f, t, 128 * KiB, off, pat);
    // back within the window, over chunks the stream delivered and memory let go
    // (a hang shows as this test's timeout: the idle timer is 10 minutes)
    for (let off = 640 * KiB; off < 2 * MiB; off += 128 * KiB) {
      expect(await reader.read(f, t, 128 * KiB, off, pat)).toBe(128 * KiB);
      expect(t.equals(data.subarray(off, off + 128 * KiB))).toBe(true);
    }
    reader.closePattern(f, pat);
  });
});

describe('disk block cache names', () => {
  it('keeps versions apart whose keys differ only in characters a file name cannot hold, or after 200 of them', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'seafs-bc-'));
    const disk = new ChunkCache(path.join(dir, String(process.pid)), 4096, 1 * MiB);
    try {
      await disk.init();
      const long = 'r:' + '/x'.repeat(150);
      const pairs = [
        ['r:/a b@1:4096', 'r:/a_b@1:4096'],
        [`${long}/one@1:4096`, `${long}/two@1:4096`],
      ];
      for (const [a, b] of pairs) {
        await disk.open(a, 4096);
        await disk.open(b, 4096);
        disk.put(a, 0, [Buffer.alloc(4096, 1)], 4096);
        disk.put(b, 0, [Buffer.alloc(4096, 2)], 4096);
        while (disk.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
        expect((await disk.get(a, 0, 4096))?.[0]).toBe(1);
        expect((await disk.get(b, 0, 4096))?.[0]).toBe(2);
      }
    } finally {
      await disk.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
