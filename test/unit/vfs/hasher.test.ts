// The hash workers' buffer pool (src/vfs/common/block-hasher.ts): kept bytes
// are read into shared block-sized buffers given back once sent, so a long
// upload reuses a few buffers instead of making one per block, and bytes
// not given back are never written over.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Hasher } from '../../../src/vfs/common/block-hasher.js';

const B = 64 * 1024;
const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');

describe('hasher', () => {
  let dir = '';
  let hasher: Hasher | null = null;
  afterEach(async () => {
    hasher?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function file(bytes: number): Promise<{ path: string; data: Buffer }> {
    dir = await mkdtemp(join(tmpdir(), 'seafs-hasher-'));
    const data = randomBytes(bytes);
    const path = join(dir, 'f.bin');
    await writeFile(path, data);
    return { path, data };
  }

  it('bytes given back are read into again: 40 blocks hashed and sent two at a time use 2 buffers', async () => {
    const { path, data } = await file(40 * B + 123);
    hasher = new Hasher(2, B);
    for (let i = 0; i < 41; i += 2) {
      const got = await Promise.all(
        [i, i + 1].filter((k) => k <= 40).map((k) => hasher!.hash(path, k * B, Math.min(B, data.length - k * B), true)),
      );
      got.forEach((h, j) => {
        const k = i + j;
        const want = data.subarray(k * B, Math.min((k + 1) * B, data.length));
        expect(h.id).toBe(sha1(want));
        expect(h.data!.equals(want)).toBe(true);
      });
      for (const h of got) hasher.release(h.data);
    }
    expect(hasher.made).toBe(2);
  });

  it('bytes kept (not given back) stay as read while later blocks are hashed', async () => {
    const { path, data } = await file(8 * B);
    hasher = new Hasher(2, B);
    const first = await hasher.hash(path, 0, B, true);
    const copy = Buffer.from(first.data!);
    for (let k = 1; k < 8; k++) hasher.release((await hasher.hash(path, k * B, B, true)).data);
    expect(first.data!.equals(copy)).toBe(true);
    expect(first.data!.equals(data.subarray(0, B))).toBe(true);
    // a second give-back of the same bytes is ignored: the buffer is handed out once
    hasher.release(first.data);
    hasher.release(first.data);
    const a = await hasher.hash(path, 2 * B, B, true);
    const b = await hasher.hash(path, 3 * B, B, true);
    expect(a.data!.buffer).not.toBe(b.data!.buffer);
    expect(a.data!.equals(data.subarray(2 * B, 3 * B))).toBe(true);
  });

  it('a read past the end of the file fails, and the hasher goes on', async () => {
    const { path, data } = await file(2 * B);
    hasher = new Hasher(2, B);
    await expect(hasher.hash(path, B, B + 10, true)).rejects.toThrow(/short read/);
    await expect(hasher.hash(path, B, B, true)).resolves.toMatchObject({ id: sha1(data.subarray(B)) });
    // longer than a pooled buffer: read into one of its own
    const big = await hasher.hash(path, 0, 2 * B, true);
    expect(big.data!.equals(data)).toBe(true);
  });
});
