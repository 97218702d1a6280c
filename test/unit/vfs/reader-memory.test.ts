// The read engine's memory on a long sequential read: the chunks a streaming
// reader has gone past leave memory at once (it holds its window ahead, not
// the whole budget), and their buffers are reused rather than allocated again.
import { constants as FC } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ChunkStore } from '../../../src/vfs/read/chunk-store.js';
import type { RemoteFile } from '../../../src/vfs/read/types.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

const MiB = 1024 * 1024;
const CHUNK = 128 * 1024;

function pattern(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i + 4 <= n; i += 4) b.writeUInt32LE(i, i);
  return b;
}

describe('reader memory on a sequential read', () => {
  it('a streaming reader holds its window ahead and a few chunks behind, not the whole budget, and fetches nothing twice', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(48 * MiB + 3);
    api.putFile(repo, '/s.bin', data);
    const m = await makeVfs(api, {
      library: 'lib',
      diskCacheBytes: 0,
      reader: { memoryBytes: 32 * MiB, maxWindow: 4 * MiB },
    });
    try {
      const fh = await m.vfs.open('/s.bin', FC.O_RDONLY);
      const got = Buffer.alloc(data.length);
      let peak = 0;
      for (let off = 0; off < data.length;) {
        const n = await m.vfs.read('/s.bin', fh, got.subarray(off), Math.min(CHUNK, data.length - off), off);
        expect(n).toBeGreaterThan(0);
        off += n;
        const mem = m.vfs.reader.memory();
        peak = Math.max(peak, mem.used);
      }
      await m.vfs.release('/s.bin', fh);
      expect(got.equals(data)).toBe(true);
      expect(m.vfs.reader.stats.streams).toBe(1);
      expect(api.bytesServed).toBe(data.length);
      // the 4 MiB window ahead, 2 MiB behind and a chunk or two on their way: far below the 32 MiB budget
      expect(peak).toBeLessThanOrEqual(7 * MiB);
      // the buffers of chunks let go were filled again: about one window's worth was ever allocated
      expect(m.vfs.reader.memory().allocated).toBeLessThanOrEqual(8 * MiB);
    } finally {
      await m.cleanup();
    }
  });

  it('a reader skipping ahead of its stream (page-cache holes) lets go of the chunks the stream brings behind it too', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const data = pattern(96 * MiB);
    api.putFile(repo, '/j.bin', data);
    const m = await makeVfs(api, {
      library: 'lib',
      diskCacheBytes: 0,
      reader: { memoryBytes: 32 * MiB, maxWindow: 4 * MiB },
    });
    try {
      const fh = await m.vfs.open('/j.bin', FC.O_RDONLY);
      const buf = Buffer.alloc(CHUNK);
      let peak = 0;
      let reads = 0;
      // 1 MiB read in order, then a jump of 6 MiB: past the stream's window, within the distance it follows
      for (let off = 0; off + CHUNK <= data.length; reads++) {
        expect(await m.vfs.read('/j.bin', fh, buf, CHUNK, off)).toBe(CHUNK);
        expect(buf.equals(data.subarray(off, off + CHUNK))).toBe(true);
        peak = Math.max(peak, m.vfs.reader.memory().used);
        off += reads % 8 === 7 ? 6 * MiB : CHUNK;
      }
      await m.vfs.release('/j.bin', fh);
      expect(m.vfs.reader.stats.streams).toBeLessThanOrEqual(2);
      expect(peak).toBeLessThanOrEqual(12 * MiB);
    } finally {
      await m.cleanup();
    }
  });

  it('keeps every buffer let go for reuse while chunks held and pooled stay within the budget, and no more', async () => {
    const f: RemoteFile = { repo: 'r', path: '/f', size: 400 * CHUNK, version: 'v1' };
    const store = new ChunkStore(CHUNK, 32 * MiB);
    const fc = store.fileChunks(f);
    for (let i = 0; i < 200; i++) store.put(f, fc, i, [store.buffer(CHUNK)], CHUNK, true);
    expect(store.memory().allocated).toBe(200 * CHUNK);
    store.release(fc, 0, 199, () => false);
    await nextTurn(); // released buffers enter the pool on the next turn of the event loop
    expect(store.memory()).toMatchObject({ used: 0, pooled: 200 * CHUNK });
    // a stream refilling a 25 MiB window takes them all back: nothing allocated
    for (let i = 200; i < 400; i++) store.put(f, fc, i, [store.buffer(CHUNK)], CHUNK, true);
    expect(store.memory()).toMatchObject({ used: 200 * CHUNK, pooled: 0, allocated: 200 * CHUNK });
    // held and pooled together never pass the budget: with the budget full of chunks, the buffers
    // of those evicted are dropped, not pooled
    for (let i = 0; i < 200; i++) store.put(f, fc, 1000 + i, [store.buffer(CHUNK)], CHUNK, true);
    await nextTurn();
    expect(store.memory()).toMatchObject({ used: 32 * MiB, pooled: 0 });
  });

  it('a buffer lent to a disk write is not reused while lent, however soon memory lets its chunk go', async () => {
    const f: RemoteFile = { repo: 'r', path: '/f', size: 4 * CHUNK, version: 'v1' };
    const store = new ChunkStore(CHUNK, 32 * MiB);
    const fc = store.fileChunks(f);
    const bufs = [0, 1].map(() => store.buffer(CHUNK));
    bufs.forEach((b, i) => store.put(f, fc, i, [b], CHUNK, true));
    store.lend(bufs[0]);
    store.release(fc, 0, 1, () => false);
    await nextTurn();
    // only the buffer not lent is back in the pool
    expect(store.memory().pooled).toBe(CHUNK);
    expect(store.buffer(CHUNK)).toBe(bufs[1]);
    expect(store.buffer(CHUNK)).not.toBe(bufs[0]);
    store.giveBack(bufs[0]);
    await nextTurn();
    expect(store.buffer(CHUNK)).toBe(bufs[0]);
  });

  it('a chunk kept by the release filter (one the disk cache skipped) stays in memory', () => {
    const f: RemoteFile = { repo: 'r', path: '/f', size: 10 * CHUNK, version: 'v1' };
    const store = new ChunkStore(CHUNK, 32 * MiB);
    const fc = store.fileChunks(f);
    for (let i = 0; i < 10; i++) store.put(f, fc, i, [store.buffer(CHUNK)], CHUNK, true);
    store.release(fc, 0, 9, (i) => i === 4);
    expect([...fc.have.keys()]).toEqual([4]);
    expect(store.memory().used).toBe(CHUNK);
  });
});
