import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockCache } from '../../src/vfs/read/block-cache.js';

describe('disk block cache', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
  });

  it('skips writes beyond its queue limit instead of holding their buffers, and serves what it wrote', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seafs-bc-'));
    dirs.push(dir);
    const C = 64 * 1024;
    const cache = new BlockCache(join(dir, String(process.pid)), C, 64 * 1024 * 1024, 4 * C);
    await cache.init();
    const chunk = (i: number) => Buffer.alloc(C, i);
    // ten puts in one turn: only four fit the queue
    for (let i = 0; i < 10; i++) cache.put('v1', i, [chunk(i)], C);
    expect(cache.stats.skipped).toBe(6);
    while (cache.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < 4; i++) expect((await cache.get('v1', i, C))?.equals(chunk(i))).toBe(true);
    expect(cache.has('v1', 4)).toBe(false);
    expect(await cache.get('v1', 4, C)).toBeNull();
    // once the queue drained, writes are taken again
    cache.put('v1', 7, [chunk(7)], C);
    while (cache.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
    expect((await cache.get('v1', 7, C))?.equals(chunk(7))).toBe(true);
    await cache.close();
  });

  it('clear drops every chunk, says how many bytes it freed, and keeps working', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'seafs-bc-'));
    dirs.push(dir);
    const C = 64 * 1024;
    const cache = new BlockCache(join(dir, String(process.pid)), C, 64 * 1024 * 1024);
    await cache.init();
    for (let i = 0; i < 3; i++) cache.put('v1', i, [Buffer.alloc(C, i)], C);
    cache.put('v2', 0, [Buffer.alloc(C, 9)], C);
    while (cache.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
    expect(cache.clear()).toBe(4 * C);
    expect(cache.has('v1', 0)).toBe(false);
    expect(await cache.get('v2', 0, C)).toBeNull();
    expect(cache.clear()).toBe(0);
    cache.put('v1', 1, [Buffer.alloc(C, 1)], C);
    while (cache.pendingWrites > 0) await new Promise((r) => setTimeout(r, 5));
    expect((await cache.get('v1', 1, C))?.equals(Buffer.alloc(C, 1))).toBe(true);
    await cache.close();
  });
});
