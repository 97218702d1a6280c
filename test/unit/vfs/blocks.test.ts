// Uploads by blocks (src/vfs/write/blocks/): through the fake API's block
// path, cut at 64 KiB so the files stay small. Each test reads the result
// back from the fake server and counts the block bytes it received.
import { constants as C } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/client/errors.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, gate, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';
import type { Hasher } from '../../../src/vfs/common/block-hasher.js';
import type { Vfs } from '../../../src/vfs/vfs.js';

const B = 64 * 1024;
const blocks = { blockSize: B, threshold: B, maxRequestBytes: 4 * B };

async function setup(cleanups: (() => Promise<void>)[], opts: { cacheDir?: string } = {}) {
  const api = new FakeApi().offerBlocks(B);
  const repo = api.addLibrary('lib');
  const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, blocks }, ...opts });
  cleanups.push(m.cleanup);
  return { api, repo, vfs: m.vfs, cacheDir: m.cacheDir };
}

/** open, write `data` at `pos`, close, and wait for the upload */
async function writeAt(vfs: Vfs, path: string, pos: number, data: Buffer): Promise<void> {
  const fh = await vfs.open(path, C.O_RDWR);
  await vfs.write(path, fh, data, data.length, pos);
  await vfs.flush(path, fh);
  await vfs.fsync(path, fh);
  vfs.release(path, fh);
}

describe('uploads by blocks', () => {
  const cleanups = cleanupAfterEach();

  it('a new large file goes by blocks: every block once, committed whole', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const data = randomBytes(16 * B + 1000);
    await writeWhole(vfs, '/big.bin', data);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/big.bin')!.equals(data)).toBe(true);
    expect(api.calls.commitBlocks).toBe(1);
    expect(api.calls.upload ?? 0).toBe(0);
    expect(api.calls.update ?? 0).toBe(0);
    expect(api.blockBytesIn).toBe(data.length);
    // several blocks per request, none over the request size
    expect(api.calls.uploadBlocks).toBeLessThan(17);
  });

  it('a file written in order sends its blocks while it is written, before its close', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const data = randomBytes(24 * B + 5);
    const fh = await vfs.create('/w.bin', 0o644);
    for (let o = 0; o < data.length; o += B) {
      const piece = data.subarray(o, o + B);
      await vfs.write('/w.bin', fh, piece, piece.length, o);
    }
    for (let i = 0; i < 200 && api.blockBytesIn < 16 * B; i++) await new Promise((r) => setTimeout(r, 10));
    // the blocks the writes passed are on the server, the file is not committed yet
    expect(api.blockBytesIn).toBeGreaterThanOrEqual(16 * B);
    expect(api.calls.commitBlocks ?? 0).toBe(0);
    await vfs.flush('/w.bin', fh);
    vfs.release('/w.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/w.bin')!.equals(data)).toBe(true);
    expect(api.blockBytesIn).toBe(data.length);
  });

  it('while a file is written, two requests of blocks are on their way at once, no more', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    let open = 0;
    let most = 0;
    const held: (() => void)[] = [];
    // every request of blocks waits until the test lets it go
    api.uploadGate = () =>
      new Promise<void>((go) => {
        open++;
        most = Math.max(most, open);
        held.push(() => {
          open--;
          go();
        });
      });
    const data = randomBytes(24 * B + 5);
    const fh = await vfs.create('/p.bin', 0o644);
    for (let o = 0; o < data.length; o += B) {
      const piece = data.subarray(o, o + B);
      await vfs.write('/p.bin', fh, piece, piece.length, o);
    }
    for (let i = 0; i < 200 && open < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    expect(open).toBe(2);
    api.uploadGate = null;
    for (const go of held.splice(0)) go();
    await vfs.flush('/p.bin', fh);
    vfs.release('/p.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(most).toBe(2);
    expect(api.content(repo, '/p.bin')!.equals(data)).toBe(true);
    expect(api.blockBytesIn).toBe(data.length);
  });

  it('a file emptied and written again while the pump hashes its blocks: the old ids are never committed', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    // the pump's first hash (bytes read, id known) waits until the test lets it go; the bytes of
    // the hashes started before the file is emptied are followed until they are given back
    const hasher = (vfs.writeBack.blocks as unknown as { hasher: Hasher }).hasher;
    const realHash = hasher.hash.bind(hasher);
    const realRelease = hasher.release.bind(hasher);
    const hold = gate();
    let hashed!: () => void;
    const first = new Promise<void>((r) => (hashed = r));
    let emptied = false;
    const before = new Set<Buffer>();
    /** the reads of the hashes started before the file is emptied */
    const reads: Promise<unknown>[] = [];
    let n = 0;
    hasher.hash = (path, offset, length, keep) => {
      const read = realHash(path, offset, length, keep);
      if (keep && !emptied) reads.push(read.then((h) => h.data && before.add(h.data)));
      return read.then(async (h) => {
        if (keep && n++ === 0) {
          hashed();
          await hold.wait();
        }
        return h;
      });
    };
    hasher.release = (data) => {
      if (data) before.delete(data);
      realRelease(data);
    };
    const old = randomBytes(24 * B + 5);
    const now = randomBytes(24 * B + 5);
    const fh = await vfs.create('/t.bin', 0o644);
    const writeAll = async (data: Buffer) => {
      for (let o = 0; o < data.length; o += B) {
        const piece = data.subarray(o, o + B);
        await vfs.write('/t.bin', fh, piece, piece.length, o);
      }
    };
    await writeAll(old);
    await first;
    // every block of the group the pump hashes was read before the file is emptied
    await Promise.all(reads);
    // emptied and written anew in the same way (the same writes touch each block as often)
    emptied = true;
    await vfs.ftruncate('/t.bin', fh, 0);
    await writeAll(now);
    hold.open();
    // the old pump is done with the blocks it hashed before: what it knew of them is applied or dropped
    for (let i = 0; i < 300 && before.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(before.size).toBe(0);
    await vfs.flush('/t.bin', fh);
    vfs.release('/t.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/t.bin')!.equals(now)).toBe(true);
  });

  it('a 1-block write in the middle of a file sends that block only, hashing little', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const before = randomBytes(32 * B);
    api.putFile(repo, '/vm.img', before);
    const patch = randomBytes(1000);
    await writeAt(vfs, '/vm.img', 10 * B + 5000, patch);
    const want = Buffer.from(before);
    patch.copy(want, 10 * B + 5000);
    expect(api.content(repo, '/vm.img')!.equals(want)).toBe(true);
    expect(api.calls.fileBlocks).toBe(1);
    expect(api.blockBytesIn).toBe(B);
    // the changed block, and two of the server's ids checked against the local copy
    expect(vfs.writeBack.blocks.stats.hashedBytes).toBeLessThanOrEqual(3 * B);
  });

  it('an append sends the new blocks only; the next edit uses the ids this mount computed', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const before = randomBytes(8 * B);
    api.putFile(repo, '/log.bin', before);
    const tail = randomBytes(B);
    await writeAt(vfs, '/log.bin', 8 * B, tail);
    expect(api.content(repo, '/log.bin')!.equals(Buffer.concat([before, tail]))).toBe(true);
    expect(api.blockBytesIn).toBe(B);
    // the file was closed and its state dropped: the next open knows its blocks without asking
    await new Promise((r) => setTimeout(r, 20));
    const asked = api.calls.fileBlocks;
    const patch = randomBytes(10);
    await writeAt(vfs, '/log.bin', 3, patch);
    const want = Buffer.concat([before, tail]);
    patch.copy(want, 3);
    expect(api.content(repo, '/log.bin')!.equals(want)).toBe(true);
    expect(api.calls.fileBlocks).toBe(asked);
    expect(api.blockBytesIn).toBe(2 * B);
  });

  it('a copy of a file the library holds commits from its blocks: nothing sent', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const data = randomBytes(20 * B + 77);
    api.putFile(repo, '/a.iso', data);
    const got = await readWhole(vfs, '/a.iso');
    await writeWhole(vfs, '/copy.iso', got);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/copy.iso')!.equals(data)).toBe(true);
    expect(api.blockBytesIn).toBe(0);
    expect(api.calls.commitBlocks).toBe(1);
  });

  it('a server list of another cut (a desktop client chunked it) is not trusted: the file is hashed whole', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const before = randomBytes(12 * B);
    api.putFile(repo, '/cdc.bin', before);
    // the same count of blocks, other boundaries: ids of nothing here
    const real = api.fileBlocks!.bind(api);
    api.fileBlocks = async (r, p) => {
      const fb = await real(r, p);
      return { ...fb, ids: fb.ids.map(() => randomBytes(20).toString('hex')) };
    };
    const patch = randomBytes(100);
    await writeAt(vfs, '/cdc.bin', 5 * B, patch);
    const want = Buffer.from(before);
    patch.copy(want, 5 * B);
    expect(api.content(repo, '/cdc.bin')!.equals(want)).toBe(true);
    expect(api.blockBytesIn).toBe(B);
  });

  it('a server without the path (405) gets whole uploads, and is not asked again (noted in the cache dir)', async () => {
    const { api, repo, vfs, cacheDir } = await setup(cleanups);
    api.blocksAnswer = 405;
    const a = randomBytes(4 * B);
    const b = randomBytes(5 * B);
    await writeWhole(vfs, '/a.bin', a);
    expect(await vfs.drain()).toEqual([]);
    await writeWhole(vfs, '/b.bin', b);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/a.bin')!.equals(a)).toBe(true);
    expect(api.content(repo, '/b.bin')!.equals(b)).toBe(true);
    expect(api.calls.blocksLink).toBe(1);
    expect(vfs.writeBack.blocks.stats.fallbacks).toBe(1);
    expect(JSON.parse(await readFile(join(cacheDir, 'blocks-off.json'), 'utf8')).reason).toMatch(/405/);
  });

  it('a folder whose permission gives no block links (403) gets a whole upload; blocks stay on', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    api.blocksAnswer = 403;
    const a = randomBytes(4 * B);
    await writeWhole(vfs, '/a.bin', a);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/a.bin')!.equals(a)).toBe(true);
    api.blocksAnswer = 'ok';
    const b = randomBytes(4 * B);
    await writeWhole(vfs, '/b.bin', b);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/b.bin')!.equals(b)).toBe(true);
    expect(api.calls.commitBlocks).toBe(1);
  });

  it('an encrypted library never goes by blocks', async () => {
    const api = new FakeApi().offerBlocks(B);
    const repo = api.addLibrary('lib');
    api.repos.get(repo)!.lib.encrypted = true;
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, blocks } });
    cleanups.push(m.cleanup);
    const data = randomBytes(6 * B);
    await writeWhole(m.vfs, '/e.bin', data);
    expect(await m.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/e.bin')!.equals(data)).toBe(true);
    expect(api.calls.blocksLink ?? 0).toBe(0);
  });

  it('an upload cut off half-way resumes with the blocks the server lacks', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const data = randomBytes(24 * B);
    api.putFile(repo, '/r.bin', Buffer.alloc(24 * B)); // a server copy: the final pass, not the pump, sends
    const real = api.uploadBlocks!.bind(api);
    let n = 0;
    api.uploadBlocks = async (url, pieces, o) => {
      // the third request's connection breaks after the server stored its blocks
      if (++n === 3) {
        await real(url, pieces, o);
        throw new ApiError({ kind: 'network', status: 0, operation: 'upload blocks', serverMessage: 'ECONNRESET' });
      }
      return real(url, pieces, o);
    };
    const fh = await vfs.open('/r.bin', C.O_RDWR);
    // written backwards: no pump, everything at the upload after close
    for (let i = 23; i >= 0; i--) await vfs.write('/r.bin', fh, data.subarray(i * B, (i + 1) * B), B, i * B);
    await vfs.flush('/r.bin', fh);
    vfs.release('/r.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/r.bin')!.equals(data)).toBe(true);
    // every block reached the server once: none was sent again
    expect(api.blockBytesIn).toBe(data.length);
    expect(n).toBeGreaterThan(3);
  });

  it('a commit that finds a block gone (443 from the C fileserver) asks again and sends it', async () => {
    const { api, repo, vfs } = await setup(cleanups);
    const data = randomBytes(6 * B);
    const real = api.commitBlocks!.bind(api);
    let first = true;
    api.commitBlocks = async (url, c) => {
      if (first) {
        first = false;
        api.blockStore.delete(c.ids[2]); // collected by the server's GC before the commit
      }
      return real(url, c);
    };
    await writeWhole(vfs, '/gc.bin', data);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/gc.bin')!.equals(data)).toBe(true);
    expect(api.blockBytesIn).toBe(7 * B);
  });

  it('a mount killed during an upload: the next one sends only the blocks the server lacks', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'seafs-blocks-'));
    cleanups.push(() => rm(cacheDir, { recursive: true, force: true }));
    const api = new FakeApi().offerBlocks(B);
    const repo = api.addLibrary('lib');
    const first = await makeVfs(api, { library: 'lib', cacheDir, writeBack: { retryBaseMs: 10, blocks } });
    // the commit never happens (as if killed before it)
    api.commitBlocks = () => new Promise<string>(() => {});
    const data = randomBytes(16 * B);
    await writeWhole(first.vfs, '/k.bin', data);
    for (let i = 0; i < 100 && api.blockBytesIn < data.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(api.blockBytesIn).toBe(data.length);
    first.vfs.close();

    api.offerBlocks(B);
    const second = await makeVfs(api, { library: 'lib', cacheDir, writeBack: { retryBaseMs: 10, blocks } });
    cleanups.push(second.cleanup);
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/k.bin')!.equals(data)).toBe(true);
    expect(api.blockBytesIn).toBe(data.length);
  });
});
