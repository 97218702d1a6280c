// Reading by Seafile block (src/vfs/read/block-reuse.ts) through the fake
// API, bytes downloaded counted where the fake serves them: a file another
// client changed in one block downloads that block, blocks another file
// holds are copied locally, a server without block lists (or with lists of
// other boundaries) is read as before, and damaged or unmarked cached bytes
// are never served.
import { createHash } from 'node:crypto';
import { constants as FC } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheName } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';
import { apiError, FakeApi, makeVfs, readWhole } from '../../helpers/fake-api.js';
import { seededBytes } from './reader-stress-server.js';

const MiB = 1024 * 1024;
const C = 128 * 1024;
// blocks of 1 MiB (the fake server cuts files so too), by block above 2 MiB
const OPTS = { library: 'lib', dirCacheTimeMs: 0, reader: { blockBytes: MiB, blockReuseMinBytes: 2 * MiB } };

/** `data` with block `b` (1 MiB) replaced by other bytes */
function changed(data: Buffer, b: number, seed: number): Buffer {
  const out = Buffer.from(data);
  seededBytes(seed, MiB).copy(out, b * MiB, 0, Math.min(MiB, data.length - b * MiB));
  return out;
}

async function setup(size: number, seed = 1) {
  const api = new FakeApi().offerBlocks(MiB);
  const repo = api.addLibrary('lib');
  const data = seededBytes(seed, size);
  api.putFile(repo, '/f.bin', data);
  return { api, repo, data };
}

describe('reading by block', () => {
  it('a 5-block file changed in one block by another client: the next read downloads that block only', async () => {
    const { api, repo, data } = await setup(5 * MiB - 1000);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      expect(api.bytesServed).toBe(data.length);
      await vfs.reader.diskIdle();
      // the read noted its 5 blocks for what the list says they are, and hashed none of them
      expect(vfs.reader.reuse!.stats.candidates).toBe(5);
      expect(vfs.reader.reuse!.stats.indexed).toBe(0);
      const next = changed(data, 2, 2);
      api.putFile(repo, '/f.bin', next);
      const before = api.bytesServed;
      expect((await readWhole(vfs, '/f.bin')).equals(next)).toBe(true);
      expect(api.bytesServed - before).toBe(MiB);
      expect(vfs.reader.reuse!.stats.reusedBytes).toBe(4 * MiB - 1000);
      // the four the new version wants were hashed then (found to be their ids)
      expect(vfs.reader.reuse!.stats.indexed).toBe(4);
      expect(api.calls.fileBlocks).toBe(2);
    } finally {
      await cleanup();
    }
  });

  it('a pinned file another client changed in one block: the pin brings that block only', async () => {
    const { api, repo, data } = await setup(6 * MiB + 4321, 7);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      await vfs.xattrs.set('/f.bin', 'user.seafile.pinned', Buffer.from('1'));
      await vfs.pins.idle();
      expect(api.bytesServed).toBe(data.length);
      await vfs.reader.diskIdle();
      const next = changed(data, 3, 8);
      api.putFile(repo, '/f.bin', next);
      const before = api.bytesServed;
      await vfs.pins.refresh();
      await vfs.pins.idle();
      expect(vfs.pins.status()).toMatchObject({ files: 1, doneFiles: 1 });
      expect(api.bytesServed - before).toBe(MiB);
      // read from the disk cache: nothing more comes from the server
      const served = api.bytesServed;
      expect((await readWhole(vfs, '/f.bin')).equals(next)).toBe(true);
      expect(api.bytesServed).toBe(served);
    } finally {
      await cleanup();
    }
  });

  it('a large file (read by a stream) changed in one block: only that block comes from the server', async () => {
    const { api, repo, data } = await setup(12 * MiB + 777, 3);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      await vfs.reader.diskIdle();
      const next = changed(data, 6, 4);
      api.putFile(repo, '/f.bin', next);
      const before = api.bytesServed;
      expect((await readWhole(vfs, '/f.bin')).equals(next)).toBe(true);
      // the blocks after it are placed by the lengths after them (that of block 6 is not known)
      expect(api.bytesServed - before).toBe(MiB);
    } finally {
      await cleanup();
    }
  });

  it('a read beside a block being copied in waits for the copy: nothing of that block is downloaded', async () => {
    // the kernel reads ahead: while one read has a reserved block copied in, others ask for the same block
    const { api, repo, data } = await setup(5 * MiB - 1000, 11);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      await vfs.reader.diskIdle();
      const next = changed(data, 2, 12);
      api.putFile(repo, '/f.bin', next);
      const disk = vfs.chunkCache!;
      const fill = disk.fillReserved.bind(disk);
      const fh = await vfs.open('/f.bin', FC.O_RDONLY);
      const beside: Promise<Buffer>[] = [];
      // once a copy has taken its chunks (synchronously, before it writes), another chunk of that block is read
      disk.fillReserved = (version, first, bytes) => {
        const p = fill(version, first, bytes);
        const at = first * C + 3 * C;
        const buf = Buffer.alloc(C);
        beside.push(Promise.resolve(vfs.read('/f.bin', fh, buf, C, at)).then(() => buf));
        return p;
      };
      const before = api.bytesServed;
      const out = Buffer.alloc(C);
      await vfs.read('/f.bin', fh, out, C, 0);
      expect(out.equals(next.subarray(0, C))).toBe(true);
      expect(beside.length).toBeGreaterThan(0);
      const got = await Promise.all(beside);
      expect(got[0].equals(next.subarray(3 * C, 4 * C))).toBe(true);
      // nothing of block 0 came from the server
      expect(api.bytesServed - before).toBe(0);
      await vfs.release('/f.bin', fh);
    } finally {
      await cleanup();
    }
  });

  it('another file made of the same blocks in another order is read with nothing downloaded', async () => {
    const { api, repo, data } = await setup(12 * MiB, 6);
    const order = [3, 0, 11, 1, 2, 4, 10, 5, 6, 9, 7, 8];
    const other = Buffer.concat(order.map((b) => data.subarray(b * MiB, (b + 1) * MiB)));
    api.putFile(repo, '/g.bin', other);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      await vfs.reader.diskIdle();
      const before = api.bytesServed;
      expect((await readWhole(vfs, '/g.bin')).equals(other)).toBe(true);
      expect(api.bytesServed - before).toBe(0);
      expect(vfs.reader.reuse!.stats.reusedBlocks).toBe(12);
    } finally {
      await cleanup();
    }
  });

  it('a server without downloadblks, one that refuses it (405, remembered), or one naming another file id: read as before', async () => {
    for (const kind of ['absent', '405', 'other id'] as const) {
      const { api, repo, data } = await setup(5 * MiB - 1000, 7);
      if (kind === 'absent') api.fileBlocks = undefined;
      if (kind === '405')
        api.fileBlocks = async () => {
          api.calls.fileBlocks = (api.calls.fileBlocks ?? 0) + 1;
          throw apiError('bad_request', 405, 'file blocks');
        };
      if (kind === 'other id') {
        const real = api.fileBlocks!.bind(api);
        api.fileBlocks = async (r, p) => ({ ...(await real(r, p)), fileId: 'f'.repeat(40) });
      }
      const { vfs, cleanup } = await makeVfs(api, OPTS);
      try {
        expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
        await vfs.reader.diskIdle();
        const next = changed(data, 2, 8);
        api.putFile(repo, '/f.bin', next);
        const before = api.bytesServed;
        expect((await readWhole(vfs, '/f.bin')).equals(next), kind).toBe(true);
        expect(api.bytesServed - before, kind).toBe(next.length);
        if (kind === '405') expect(api.calls.fileBlocks).toBe(1);
      } finally {
        await cleanup();
      }
    }
  });

  it('a 404 (the file gone since it was listed) is that file only: block lists are asked for again', async () => {
    const { api, repo, data } = await setup(5 * MiB - 1000, 13);
    api.failNext.set('fileBlocks', [apiError('not_found', 404, 'file blocks', 'File not found')]);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      const v2 = changed(data, 1, 14);
      api.putFile(repo, '/f.bin', v2);
      expect((await readWhole(vfs, '/f.bin')).equals(v2)).toBe(true);
      await vfs.reader.diskIdle();
      const v3 = changed(v2, 3, 15);
      api.putFile(repo, '/f.bin', v3);
      const before = api.bytesServed;
      expect((await readWhole(vfs, '/f.bin')).equals(v3)).toBe(true);
      expect(api.bytesServed - before).toBe(MiB);
      expect(api.calls.fileBlocks).toBe(3);
    } finally {
      await cleanup();
    }
  });

  it('a list of other boundaries (a desktop client cut) is never used: read as before, bytes right', async () => {
    const api = new FakeApi().offerBlocks(768 * 1024);
    const repo = api.addLibrary('lib');
    const data = seededBytes(9, 6 * MiB);
    api.putFile(repo, '/f.bin', data);
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
      await vfs.reader.diskIdle();
      const next = changed(data, 4, 10);
      api.putFile(repo, '/f.bin', next);
      const before = api.bytesServed;
      expect((await readWhole(vfs, '/f.bin')).equals(next)).toBe(true);
      expect(api.bytesServed - before).toBe(next.length);
      expect(vfs.reader.reuse!.stats.reusedBlocks).toBe(0);
    } finally {
      await cleanup();
    }
  });

  it('after a remount: a cached block with damaged bytes, or a chunk without its marker, is downloaded, never served', async () => {
    const { api, repo, data } = await setup(5 * MiB - 1000, 11);
    const first = await makeVfs(api, OPTS);
    try {
      expect((await readWhole(first.vfs, '/f.bin')).equals(data)).toBe(true);
      await first.vfs.reader.diskIdle();
      const version = api.fileIdAt(repo, '/f.bin');
      await first.vfs.reader.closeDisk();
      first.vfs.close();
      // block 0: one chunk's marker gone; block 1: a byte changed under its marker
      const nChunks = Math.ceil(data.length / C);
      const dataOff = Math.ceil((128 + nChunks) / 4096) * 4096;
      const fh = await open(join(first.cacheDir, 'blocks', cacheName(version)), 'r+');
      await fh.write(Buffer.from([0]), 0, 1, 128 + 3);
      const b = Buffer.alloc(1);
      await fh.read(b, 0, 1, dataOff + MiB + 5000);
      b[0] ^= 0xff;
      await fh.write(b, 0, 1, dataOff + MiB + 5000);
      await fh.close();

      const second = await makeVfs(api, { ...OPTS, cacheDir: first.cacheDir });
      try {
        const next = changed(data, 3, 12);
        api.putFile(repo, '/f.bin', next);
        const before = api.bytesServed;
        expect((await readWhole(second.vfs, '/f.bin')).equals(next)).toBe(true);
        // block 3 (changed), block 1 (damaged: its hash is not its id) and block 0 (not all of it
        // marked): downloaded; block 4 copied from the earlier version (its place follows from the
        // file's end); block 2 is the earlier version's too, but where it lies is not known for sure
        // (the lengths of blocks 0 and 1 are known only from their bytes, and those are gone):
        // downloaded rather than guessed
        expect(api.bytesServed - before).toBe(4 * MiB);
        expect(second.vfs.reader.reuse!.stats.reusedBlocks).toBe(1);
        expect(second.vfs.reader.reuse!.stats.rejected).toBe(2);
      } finally {
        await second.vfs.reader.closeDisk();
        second.vfs.close();
      }
    } finally {
      await first.cleanup();
    }
  });
  it('a file changed on the server after it was opened: its list is never placed by the size the listing had', async () => {
    const api = new FakeApi().offerBlocks(MiB);
    const repo = api.addLibrary('lib');
    const [A, Y, Z] = [31, 32, 33].map((seed) => seededBytes(seed, MiB));
    const X = seededBytes(34, MiB / 2);
    api.putFile(repo, '/a.bin', Buffer.concat([A, Y, Z]));
    api.putFile(repo, '/g.bin', seededBytes(35, 3 * MiB));
    const { vfs, cleanup } = await makeVfs(api, OPTS);
    try {
      // Y and Z are indexed (1 MiB each) under a.bin
      await readWhole(vfs, '/a.bin');
      await vfs.reader.diskIdle();
      // g.bin is opened at 3 MiB; then another client makes it X (512 KiB), Y, Z, cut so (a desktop client)
      const fh = await vfs.open('/g.bin', FC.O_RDONLY);
      const next = Buffer.concat([X, Y, Z]);
      api.putFile(repo, '/g.bin', next);
      const real = api.fileBlocks!.bind(api);
      const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
      api.fileBlocks = async (r, p) => {
        const fb = await real(r, p);
        return p === '/g.bin' ? { ...fb, ids: [X, Y, Z].map(sha1) } : fb;
      };
      const got: Buffer[] = [];
      for (let off = 0; off < 3 * MiB; off += C) {
        const buf = Buffer.alloc(C);
        const n = await Promise.resolve()
          .then(() => vfs.read('/g.bin', fh, buf, C, off))
          .catch(() => 0);
        if (n === 0) break;
        got.push(buf.subarray(0, n));
      }
      await vfs.release('/g.bin', fh);
      // what the read gave is the server's bytes where it has them (Y is at 512 KiB, not at 1 MiB)
      const all = Buffer.concat(got);
      expect(all.length).toBeGreaterThan(MiB);
      const upTo = Math.min(all.length, next.length);
      expect(all.subarray(0, upTo).equals(next.subarray(0, upTo))).toBe(true);
    } finally {
      await cleanup();
    }
  });
});
