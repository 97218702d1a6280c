// Small new files held in memory (write/local-data.ts): no temp file while
// they are small, a move to the temp file when they outgrow the per-file
// limit or the shared budget, holes and truncates as on disk, and a journal
// entry that carries their bytes so that a crash after close loses nothing.
import { randomBytes } from 'node:crypto';
import { constants as FC } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { Journal } from '../../../src/vfs/write/journal.js';
import { LocalData } from '../../../src/vfs/write/local-data.js';
import { FakeApi, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';

const KiB = 1024;
const MiB = 1024 * KiB;

describe('small new files in memory', () => {
  const cleanups = cleanupAfterEach();

  async function setup(writeBack: Record<string, number> = {}, api = new FakeApi().offerUploadBatch()) {
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, ...writeBack } });
    cleanups.push(m.cleanup);
    const tempFiles = async () => await readdir(join(m.cacheDir, 'dirty'));
    return { api, repo, ...m, tempFiles };
  }

  it('tar x at once: create, write, close and the time set answer without waiting, and the file lands with its bytes and time', async () => {
    const { api, repo, vfs, tempFiles } = await setup();
    api.putDir(repo, '/x');
    await vfs.readdir('/x'); // a fresh listing: the new names are known to be free
    await vfs.statfs('/');
    const data = randomBytes(30 * KiB);
    const fh = vfs.createNow('/x/a.dat');
    expect(fh).not.toBeNull();
    expect(vfs.writeNow('/x/a.dat', fh!, data, data.length, 0)).toBe(data.length);
    expect(vfs.flushNow('/x/a.dat', fh!)).toBe(true);
    vfs.release('/x/a.dat', fh!);
    expect(vfs.utimensNow('/x/a.dat', Date.UTC(2001, 0, 2))).toBe(true);
    expect((await vfs.getattr('/x/a.dat')).mtime).toEqual(new Date(Date.UTC(2001, 0, 2)));
    expect(await tempFiles()).toEqual([]);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/x/a.dat')!.equals(data)).toBe(true);
    expect((await readWhole(vfs, '/x/a.dat')).equals(data)).toBe(true);
    const listing = await api.listDir(repo, '/x');
    const listed = listing.uptodate ? null : listing.entries.find((e) => e.name === 'a.dat');
    expect(listed?.mtime).toBe(Date.UTC(2001, 0, 2) / 1000);
  });

  it('create steps aside (null) when it cannot decide at once: a name the listing has, a folder not listed, a hidden folder, no room in memory', async () => {
    const { api, repo, vfs } = await setup({ memoryFileMax: 0 });
    api.putDir(repo, '/x');
    api.putFile(repo, '/x/there.txt', 'old');
    expect(vfs.createNow('/x/new.txt')).toBeNull(); // not listed yet
    await vfs.readdir('/x');
    expect(vfs.createNow('/x/there.txt')).toBeNull(); // exists: create opens it
    expect(vfs.createNow('/.seafile-trash/f')).toBeNull();
    expect(vfs.createNow('/x/new.txt')).toBeNull(); // memoryFileMax 0: it needs a temp file
    expect(vfs.utimensNow('/x/there.txt', Date.UTC(2001, 0, 2))).toBe(false); // no local data: utimens uploads it
    const fh = await vfs.create('/x/new.txt', 0o644);
    await vfs.release('/x/new.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/x/new.txt')!.length).toBe(0);
  });

  it('a small new file gets no temp file: it is read back from memory and uploaded from it', async () => {
    const { api, repo, vfs, tempFiles } = await setup();
    const data = randomBytes(40 * KiB);
    const fh = await vfs.create('/small.bin', 0o644);
    for (let off = 0; off < data.length; off += 10 * KiB)
      await vfs.write('/small.bin', fh, data.subarray(off, off + 10 * KiB), 10 * KiB, off);
    expect(await tempFiles()).toEqual([]);
    const back = Buffer.alloc(data.length);
    expect(vfs.read('/small.bin', fh, back, back.length, 0)).toBe(data.length); // answered at once
    expect(back.equals(data)).toBe(true);
    await vfs.flush('/small.bin', fh);
    await vfs.release('/small.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/small.bin')!.equals(data)).toBe(true);
    expect(await tempFiles()).toEqual([]);
    expect(vfs.writeBack.data.held).toBe(0);
  });

  it('a file that outgrows the per-file limit moves to its temp file intact and goes on there', async () => {
    const { api, repo, vfs, tempFiles } = await setup({ memoryFileMax: 64 * KiB });
    const data = randomBytes(200 * KiB + 123);
    const fh = await vfs.create('/grows.bin', 0o644);
    let off = 0;
    for (; off < 60 * KiB; off += 10 * KiB) await vfs.write('/grows.bin', fh, data.subarray(off), 10 * KiB, off);
    expect(await tempFiles()).toEqual([]);
    for (; off < data.length; off += 10 * KiB) {
      const n = Math.min(10 * KiB, data.length - off);
      await vfs.write('/grows.bin', fh, data.subarray(off, off + n), n, off);
    }
    expect(await tempFiles()).toHaveLength(1);
    expect(vfs.writeBack.data.held).toBe(0);
    await vfs.flush('/grows.bin', fh);
    await vfs.release('/grows.bin', fh);
    expect((await readWhole(vfs, '/grows.bin')).equals(data)).toBe(true);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/grows.bin')!.equals(data)).toBe(true);
  });

  it('new files beyond the shared budget go to temp files; the budget is never passed and every file arrives', async () => {
    const { api, repo, vfs, tempFiles } = await setup({ memoryBudget: 100 * KiB });
    const files = Array.from({ length: 8 }, (_, i) => ({ path: `/f${i}.bin`, data: randomBytes(30 * KiB + i) }));
    // all open at once (as parallel writers would have them)
    const handles = await Promise.all(files.map((f) => vfs.create(f.path, 0o644)));
    for (let off = 0; off < 32 * KiB; off += 8 * KiB) {
      for (const [i, f] of files.entries()) {
        const n = Math.max(0, Math.min(8 * KiB, f.data.length - off));
        if (n > 0) await vfs.write(f.path, handles[i], f.data.subarray(off, off + n), n, off);
        expect(vfs.writeBack.data.held).toBeLessThanOrEqual(100 * KiB);
      }
    }
    expect((await tempFiles()).length).toBeGreaterThan(0);
    for (const [i, f] of files.entries()) {
      await vfs.flush(f.path, handles[i]);
      await vfs.release(f.path, handles[i]);
    }
    expect(await vfs.drain()).toEqual([]);
    for (const f of files) expect(api.content(repo, f.path)!.equals(f.data), f.path).toBe(true);
  });

  it('the budget grows with the round trip to the server (the least of the recent ones, from 3 on) and shrinks back', () => {
    const data = new LocalData({ fileMax: MiB, budget: 8 * MiB }, async () => {});
    data.noteRoundTrip(100);
    data.noteRoundTrip(100);
    expect(data.budget).toBe(8 * MiB); // two are not enough to judge
    data.noteRoundTrip(40);
    expect(data.budget).toBe(16 * MiB); // 40 ms: 2x
    for (let i = 0; i < 3; i++) data.noteRoundTrip(300);
    expect(data.budget).toBe(16 * MiB); // the least of the recent ones: a slow answer is load, not distance
    for (let i = 0; i < 8; i++) data.noteRoundTrip(85);
    expect(data.budget).toBe(32 * MiB); // at most 4x
    for (let i = 0; i < 8; i++) data.noteRoundTrip(2);
    expect(data.budget).toBe(8 * MiB); // a near server again
  });

  it('a far server: a burst of new files stays in memory within the grown budget (a mount that knows no round trip spills it, as the shared budget test shows)', async () => {
    const { api, repo, vfs, tempFiles } = await setup({ memoryBudget: 100 * KiB });
    api.listDelayMs = 100; // 80 ms or more: 4x, the most (a loaded machine only adds to the delay)
    // three uploads, each checked with a listing, tell the mount how far the server is
    for (let i = 0; i < 3; i++) {
      await writeWhole(vfs, `/first${i}.txt`, `first ${i}`);
      expect(await vfs.drain()).toEqual([]);
    }
    expect(vfs.writeBack.data.budget).toBe(400 * KiB);
    // the burst of the test above (eight files of 30 KiB, 32 KiB buffers, open at once) fits now
    const files = Array.from({ length: 8 }, (_, i) => ({ path: `/f${i}.bin`, data: randomBytes(30 * KiB + i) }));
    const handles = await Promise.all(files.map((f) => vfs.create(f.path, 0o644)));
    for (const [i, f] of files.entries()) {
      await vfs.write(f.path, handles[i], f.data, f.data.length, 0);
      expect(vfs.writeBack.data.held).toBeLessThanOrEqual(400 * KiB);
    }
    expect(vfs.writeBack.data.held).toBeGreaterThan(100 * KiB);
    expect(await tempFiles()).toEqual([]);
    for (const [i, f] of files.entries()) {
      await vfs.flush(f.path, handles[i]);
      await vfs.release(f.path, handles[i]);
    }
    expect(await vfs.drain()).toEqual([]);
    for (const f of files) expect(api.content(repo, f.path)!.equals(f.data), f.path).toBe(true);
  });

  it('holes read as zeros and truncates shrink and grow a file in memory as on disk', async () => {
    const { api, repo, vfs, tempFiles } = await setup();
    const fh = await vfs.create('/holes.bin', 0o644);
    await vfs.write('/holes.bin', fh, Buffer.from('abcdef'), 6, 0);
    await vfs.ftruncate('/holes.bin', fh, 3); // "abc"
    await vfs.write('/holes.bin', fh, Buffer.from('XY'), 2, 10); // "abc" + 7 zeros + "XY"
    await vfs.ftruncate('/holes.bin', fh, 14); // + 2 zeros
    const want = Buffer.concat([Buffer.from('abc'), Buffer.alloc(7), Buffer.from('XY'), Buffer.alloc(2)]);
    expect(await tempFiles()).toEqual([]);
    await vfs.flush('/holes.bin', fh);
    await vfs.release('/holes.bin', fh);
    expect((await readWhole(vfs, '/holes.bin')).equals(want)).toBe(true);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/holes.bin')!.equals(want)).toBe(true);
  });

  it('without the multi-file capability a file in memory moves to its temp file for its upload', async () => {
    const { api, repo, vfs } = await setup({}, new FakeApi());
    await writeWhole(vfs, '/plain.txt', 'sent by the single-file call');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/plain.txt')!.toString()).toBe('sent by the single-file call');
    expect(api.calls.upload).toBe(1);
  });
});

describe('small new files in memory: crashes', () => {
  const cleanups = cleanupAfterEach();

  it('a closed file in memory comes back from its journal entry after a crash, with what the last close saw', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    api.uploadGate = () => new Promise<void>(() => {}); // the first mount never gets an upload through
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    await writeWhole(first.vfs, '/note.txt', 'first close;');
    // opened again and appended to: the entry is rewritten at the next close
    const fh = await first.vfs.open('/note.txt', FC.O_WRONLY | FC.O_APPEND);
    await first.vfs.write('/note.txt', fh, Buffer.from(' second close'), 13, 12);
    await first.vfs.flush('/note.txt', fh);
    await first.vfs.release('/note.txt', fh);
    expect(await readdir(join(first.cacheDir, 'dirty'))).toEqual([]); // nothing but the journal holds it
    first.vfs.close(); // the "crash": nothing more of the first mount runs

    api.uploadGate = null;
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/note.txt')!.toString()).toBe('first close; second close');
    expect(await readdir(join(first.cacheDir, 'journal'))).toEqual([]);
    second.vfs.close();
  });

  it('a close answered without waiting (flushNow) has journaled the file: a crash right after it loses nothing', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    api.uploadGate = () => new Promise<void>(() => {});
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    await first.vfs.statfs('/'); // the quota as last heard: what the close checks at once
    const data = randomBytes(40_000);
    const fh = await first.vfs.create('/quick.bin', 0o644);
    await first.vfs.write('/quick.bin', fh, data, data.length, 0);
    expect(first.vfs.flushNow('/quick.bin', fh)).toBe(true);
    const journaled = await new Journal(join(first.cacheDir, 'journal')).entries();
    expect(journaled.map((e) => [e.path, e.data?.equals(data)])).toEqual([['/quick.bin', true]]);
    first.vfs.release('/quick.bin', fh);
    first.vfs.close(); // the crash

    api.uploadGate = null;
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/quick.bin')!.equals(data)).toBe(true);
    second.vfs.close();
  });

  it('a close that must report something (over quota, quota not known yet) is left to flush', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    api.putFile(repo, '/big', Buffer.alloc(900));
    api.quotaTotal = 1000;
    const fh = await vfs.create('/x.bin', 0o644);
    await vfs.write('/x.bin', fh, Buffer.alloc(20, 1), 20, 0);
    expect(vfs.flushNow('/x.bin', fh)).toBe(false); // the quota was never asked
    await vfs.flush('/x.bin', fh); // asks it: 900 of 1000 bytes used
    await vfs.write('/x.bin', fh, Buffer.alloc(20, 2), 20, 20);
    expect(vfs.flushNow('/x.bin', fh)).toBe(true); // fits, as last heard
    const fh2 = await vfs.create('/y.bin', 0o644);
    await vfs.write('/y.bin', fh2, Buffer.alloc(200, 1), 200, 0);
    expect(vfs.flushNow('/y.bin', fh2)).toBe(false); // does not fit: flush says so
    await expect(vfs.flush('/y.bin', fh2)).rejects.toMatchObject({ code: 'ENOSPC' });
    vfs.release('/y.bin', fh2);
    vfs.release('/x.bin', fh);
  });

  it('an entry that carries bytes gives way to a temp file that exists (the file moved there after the entry)', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    first.vfs.close();
    // as a mount that died between a file's move to its temp file and the rewrite of its entry leaves them
    const journal = new Journal(join(first.cacheDir, 'journal'), false);
    const tmp = join(first.cacheDir, 'dirty', 'moved');
    const entry = { id: 'moved', repo, path: '/moved.bin', tmp, pid: 2 ** 22 + 1, at: Date.now() };
    await journal.write(entry, Buffer.from('older bytes'));
    await writeFile(tmp, 'older bytes and newer ones');
    // and one whose temp file never existed: its bytes are in the entry only
    await journal.write(
      { ...entry, id: 'inline', path: '/inline.bin', tmp: join(first.cacheDir, 'dirty', 'x') },
      Buffer.from('only here'),
    );
    journal.close(); // as the mount that died: its segment is left for the next one
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/moved.bin')!.toString()).toBe('older bytes and newer ones');
    expect(api.content(repo, '/inline.bin')!.toString()).toBe('only here');
    second.vfs.close();
  });

  it('a torn entry (fewer bytes than it names) is ignored, never uploaded short', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    first.vfs.close();
    const line = JSON.stringify({
      id: 'torn',
      repo,
      path: '/torn.bin',
      tmp: '/nonexistent',
      pid: 2 ** 22 + 1,
      at: 1,
      inline: 100,
    });
    await writeFile(join(first.cacheDir, 'journal', 'torn.json'), `${line}\nonly forty bytes of the hundred it named`);
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/torn.bin')).toBeUndefined();
    second.vfs.close();
  });
});
