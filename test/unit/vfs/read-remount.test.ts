// Reading a file again after a remount, from the disk cache: what the server
// sends for the stretches the disk lacks (counted at a real HTTP server, socket
// buffers included), and a slow disk that must still end up with every chunk
// of a file read once.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import type { SeafileApi } from '../../../src/client/types.js';
import { ChunkCache } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';
import { RemoteReader, type ReadPattern, type RemoteFile } from '../../../src/vfs/read/reader.js';
import { FakeApi, makeVfs, readWhole } from '../../helpers/fake-api.js';
import { faultsOf, mulberry32, seededBytes, StressServer } from './reader-stress-server.js';

const C = 128 * 1024;
const MiB = 1024 * 1024;
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, k) => a + k);

/** a cache dir whose blocks hold every chunk of `data` except `holes` (what an earlier mount left) */
async function partlyCached(data: Buffer, id: string, holes: Set<number>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'seafs-unit-'));
  const pre = new ChunkCache(join(dir, 'blocks'), C, 1024 ** 3);
  await pre.init();
  await pre.open(id, data.length);
  for (let i = 0; i * C < data.length; i++) {
    if (holes.has(i)) continue;
    pre.put(id, i, [data.subarray(i * C, (i + 1) * C)], Math.min(C, data.length - i * C));
    await pre.flush();
  }
  await pre.close();
  return dir;
}

describe('re-reading a file from the disk cache', () => {
  it('the server sends only the stretches the disk lacks: a stream for a hole asks for the hole, not the rest of the file', async () => {
    const data = seededBytes(15, 40 * MiB + 5); // 321 chunks
    const id = createHash('sha1').update(data).digest('hex');
    // long holes (streams) and short ones (ranged GETs) among chunks on disk
    const holes = new Set([...range(0, 59), 70, 71, ...range(100, 179), 200, ...range(250, 300)]);
    const dir = await partlyCached(data, id, holes);
    const server = new StressServer(new Map([['/f.bin', data]]), faultsOf({ maxPiece: 256 * 1024 }), mulberry32(1));
    await server.start();
    const client = new SeafileClient({ baseUrl: server.url, timeoutMs: 10_000 });
    const api = {
      downloadLink: async (_repo: string, p: string) => ({ url: server.link(p), oid: null }),
      download: (url: string, r?: { start: number; end?: number }) => client.download(url, r),
      streamGet: client.streamGet.bind(client),
    } as unknown as SeafileApi;
    const disk = new ChunkCache(join(dir, 'blocks'), C, 1024 ** 3);
    try {
      await disk.init();
      const reader = new RemoteReader(api, {}, disk);
      const f: RemoteFile = { repo: 'r', path: '/f.bin', size: data.length, version: id };
      const pat: ReadPattern = { next: 0, window: 0 };
      const out = Buffer.alloc(data.length);
      // as the kernel reads: 128 KiB at a time, front to back
      for (let off = 0; off < data.length;) {
        const len = Math.min(C, data.length - off);
        const r = reader.read(f, out.subarray(off), len, off, pat);
        off += typeof r === 'number' ? r : await r;
      }
      reader.closePattern(f, pat);
      expect(out.equals(data)).toBe(true);
      expect(reader.stats.diskChunks).toBe(321 - holes.size);
      expect(reader.stats.streams).toBeGreaterThanOrEqual(3);
      // what the server wrote, taken or not: the holes (a stream's socket would otherwise hold megabytes past them)
      expect(server.stats.bodyBytes).toBeGreaterThanOrEqual(holes.size * C);
      expect(server.stats.bodyBytes).toBeLessThanOrEqual(holes.size * C + 2 * C);
      await reader.closeDisk();
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a file read once through a stream is all on disk even when the disk falls behind and memory lets its chunks go: the next mount downloads nothing', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = seededBytes(16, 24 * MiB + 5); // 193 chunks, six times the memory below
    api.putFile(repo, '/f.bin', data);
    // a disk that takes one chunk at a time: the stream, at memory speed, is always ahead of it
    const opts = {
      library: 'lib',
      diskCacheBytes: 256 * MiB,
      diskQueueBytes: C,
      reader: { memoryBytes: 4 * MiB, maxWindow: 2 * MiB },
    };
    const first = await makeVfs(api, opts);
    try {
      expect((await readWhole(first.vfs, '/f.bin')).equals(data)).toBe(true);
      expect(api.calls.streamGet).toBe(1);
      expect(api.bytesServed).toBe(data.length);
      expect(first.vfs.chunkCache!.stats.skippedBytes).toBe(0);
      await first.vfs.reader.closeDisk();
      first.vfs.close();
      const second = await makeVfs(api, { ...opts, cacheDir: first.cacheDir });
      try {
        expect((await readWhole(second.vfs, '/f.bin')).equals(data)).toBe(true);
        expect(api.bytesServed).toBe(data.length);
        expect(second.vfs.reader.stats.diskChunks).toBe(193);
        // read from the cache file into the caller's buffers: no chunk passed through the reader's memory
        expect(second.vfs.reader.memory().used).toBe(0);
      } finally {
        second.vfs.close();
      }
    } finally {
      await first.cleanup();
    }
  });
});
