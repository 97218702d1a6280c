// The journal's segment files on disk: what a mount that died leaves is read
// back whole, up to the first record it did not finish (a kill -9 mid-append
// leaves any prefix of the record it was writing), later records of a file
// win, del records cancel, and segments are removed once nothing in them is
// live. The write path's recovery through them is in vfs-journal.test.ts and
// vfs-memory-files.test.ts; the kill -9 of a real mount in test/e2e/lifecycle.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Journal, parseSegment, type JournalEntry } from '../../../src/vfs/write/journal.js';
import { prng } from '../../helpers/tree.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'seafs-segments-'));
  dirs.push(d);
  return d;
}

/** a library and a mount of it that has closed: its cache folder and journal folder, for the next mount */
async function closedMount() {
  const api = new FakeApi().offerUploadBatch();
  const repo = api.addLibrary('lib');
  const first = await makeVfs(api, { library: 'lib' });
  dirs.push(first.cacheDir);
  first.vfs.close();
  return { api, repo, cacheDir: first.cacheDir, dir: join(first.cacheDir, 'journal') };
}

function entry(id: string, path = `/${id}.bin`): JournalEntry {
  return { id, repo: 'r', path, tmp: `/nonexistent/${id}`, pid: process.pid, at: Date.now() };
}

/** content of `n` bytes that differs per seed */
function bytes(seed: number, n: number): Buffer {
  const rnd = prng(seed);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rnd() * 256);
  return b;
}

async function segmentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.log'));
}

describe('journal segments', () => {
  it('entries appended and left by a journal that is gone come back with their bytes, the last record of a file winning', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write(entry('a'), bytes(1, 5000));
    await j.write(entry('b'), bytes(2, 70_000));
    await j.write(entry('a'), bytes(3, 12)); // closed again with other content
    await j.write({ ...entry('c'), mtime: 1234 }); // a file in its temp file: no bytes
    j.close();
    const got = await new Journal(dir, false).orphans();
    expect(got.map((e) => e.id).sort()).toEqual(['a', 'b', 'c']);
    const by = new Map(got.map((e) => [e.id, e]));
    expect(by.get('a')!.data!.equals(bytes(3, 12))).toBe(true);
    expect(by.get('b')!.data!.equals(bytes(2, 70_000))).toBe(true);
    expect(by.get('c')!.data).toBeUndefined();
    expect(by.get('c')!.mtime).toBe(1234);
  });

  it('a journal cut anywhere in its last record (a kill -9 mid-append) gives back every earlier entry whole and ignores the torn one', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write(entry('kept1'), bytes(10, 3000));
    await j.write(entry('kept2'), bytes(11, 1));
    const [seg] = await segmentFiles(dir);
    const whole = (await readFile(join(dir, seg))).length;
    await j.write(entry('torn'), bytes(12, 2000));
    j.close();
    const full = await readFile(join(dir, seg));
    // every length from "nothing of the last record" to "one byte short of it"
    const cuts = [whole, whole + 1, whole + 40];
    for (let cut = whole + 100; cut < full.length; cut += 97) cuts.push(cut);
    cuts.push(full.length - 1);
    for (const cut of cuts) {
      await writeFile(join(dir, seg), full.subarray(0, cut));
      const got = await new Journal(dir, false).orphans();
      expect(got.map((e) => e.id).sort(), `cut at ${cut} of ${full.length}`).toEqual(['kept1', 'kept2']);
      expect(got.find((e) => e.id === 'kept1')!.data!.equals(bytes(10, 3000))).toBe(true);
    }
    // and whole again: all three
    await writeFile(join(dir, seg), full);
    expect((await new Journal(dir, false).orphans()).map((e) => e.id).sort()).toEqual(['kept1', 'kept2', 'torn']);
  });

  it('a record whose bytes were changed (a bad sector, a torn page) ends the segment there: nothing wrong is uploaded', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write(entry('good'), bytes(20, 100));
    await j.write(entry('bad'), bytes(21, 100));
    await j.write(entry('after'), bytes(22, 100));
    j.close();
    const [seg] = await segmentFiles(dir);
    const raw = await readFile(join(dir, seg));
    const at = raw.indexOf(bytes(21, 100));
    raw[at + 50] ^= 0xff;
    await writeFile(join(dir, seg), raw);
    const got = await new Journal(dir, false).orphans();
    expect(got.map((e) => e.id)).toEqual(['good']);
    // garbage instead of a record: the same
    expect(parseSegment(Buffer.concat([raw.subarray(0, at - 1), Buffer.from('\n{"not":"json"')]))).toHaveLength(1);
  });

  it('a file on the server is cancelled by a del record, and a segment with nothing live is removed', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write(entry('x'), bytes(30, 10));
    await j.write(entry('y'), bytes(31, 10));
    await j.remove('x');
    expect((await j.entries()).map((e) => e.id)).toEqual(['y']);
    await j.remove('y');
    await expect.poll(() => segmentFiles(dir)).toEqual([]);
    // a file removed and written again is live again
    await j.write(entry('x'), bytes(32, 10));
    j.close();
    const got = await new Journal(dir, false).orphans();
    expect(got.map((e) => e.id)).toEqual(['x']);
    expect(got[0].data!.equals(bytes(32, 10))).toBe(true);
  });

  it('with segments that fill up, what was live at a crash is exactly what comes back, and emptied segments are gone', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false, 4096); // segments of a few records
    await j.init();
    const rnd = prng(7);
    const live = new Map<string, Buffer>();
    for (let i = 0; i < 400; i++) {
      const id = `f${Math.floor(rnd() * 40)}`;
      if (live.has(id) && rnd() < 0.5) {
        await j.remove(id);
        live.delete(id);
      } else {
        const data = bytes(1000 + i, Math.floor(rnd() * 900));
        await j.write(entry(id), data);
        live.set(id, data);
      }
    }
    // one entry that waits for good (offline) does not keep every segment it lived beside
    expect((await segmentFiles(dir)).length).toBeLessThanOrEqual(live.size + 2);
    j.close();
    const got = await new Journal(dir, false).orphans();
    expect(got.map((e) => e.id).sort()).toEqual([...live.keys()].sort());
    for (const e of got) expect(e.data!.equals(live.get(e.id)!), e.id).toBe(true);
  });

  it('a new time of an entry is a small record after it: the bytes are written once and come back with the time', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write({ ...entry('t'), mtime: 1000 }, bytes(60, 50_000));
    const before = (await readFile(join(dir, (await segmentFiles(dir))[0]))).length;
    expect(j.touch('t', 7_000_000)).toBe(true);
    const after = (await readFile(join(dir, (await segmentFiles(dir))[0]))).length;
    expect(after - before).toBeLessThan(200);
    // no live entry: nothing to amend (the caller writes the whole entry)
    expect(j.touch('absent', 1)).toBe(false);
    j.close();
    const got = await new Journal(dir, false).orphans();
    expect(got).toHaveLength(1);
    expect(got[0].mtime).toBe(7_000_000);
    expect(got[0].data!.equals(bytes(60, 50_000))).toBe(true);
  });

  it('a time record is copied forward with its entry when segments fill up, and dies with it', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false, 4096);
    await j.init();
    await j.write({ ...entry('keep'), mtime: 1000 }, bytes(61, 300));
    expect(j.touch('keep', 5_000_000)).toBe(true);
    await j.write({ ...entry('gone'), mtime: 1000 }, bytes(62, 300));
    expect(j.touch('gone', 6_000_000)).toBe(true);
    await j.remove('gone');
    const first = (await segmentFiles(dir))[0];
    // the first segment fills up and then holds little that is live ('keep')
    for (let i = 0; i < 8; i++) await j.write(entry(`a${i}`), bytes(100 + i, 500));
    for (let i = 0; i < 8; i++) await j.remove(`a${i}`);
    // the next one fills up: the first one's live records are copied forward and it goes
    for (let i = 0; i < 8; i++) await j.write(entry(`b${i}`), bytes(200 + i, 500));
    await expect.poll(async () => (await segmentFiles(dir)).includes(first)).toBe(false);
    j.close();
    const got = await new Journal(dir, false).orphans();
    expect(got.map((e) => e.id).sort()).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7', 'keep']);
    const keep = got.find((e) => e.id === 'keep')!;
    expect(keep.mtime).toBe(5_000_000);
    expect(keep.data!.equals(bytes(61, 300))).toBe(true);
  });

  it('segments of a journal still in use in this process are not taken as leftovers', async () => {
    const dir = await freshDir();
    const j = new Journal(dir, false);
    await j.init();
    await j.write(entry('mine'), bytes(40, 10));
    expect(await new Journal(dir, false).orphans()).toEqual([]);
    j.close();
    expect((await new Journal(dir, false).orphans()).map((e) => e.id)).toEqual(['mine']);
  });

  it('a mount taking over a dead journal uploads its files byte for byte and removes the segments it emptied', async () => {
    const { api, repo, cacheDir, dir } = await closedMount();
    const j = new Journal(dir, false, 20_000);
    const files = Array.from({ length: 30 }, (_, i) => ({ name: `/n${i}.dat`, data: bytes(50 + i, 1000 + i * 997) }));
    for (const [i, f] of files.entries()) await j.write({ ...entry(`id${i}`, f.name), repo }, f.data);
    j.close();
    const segs = await segmentFiles(dir);
    expect(segs.length).toBeGreaterThan(1);
    const last = join(dir, segs.sort().at(-1)!);
    // and a torn tail: half of one more record
    await writeFile(last, Buffer.concat([await readFile(last), Buffer.from('{"id":"half","repo":"r","inline":9')]));
    const second = await makeVfs(api, { library: 'lib', cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    for (const f of files) expect(api.content(repo, f.name)!.equals(f.data), f.name).toBe(true);
    expect(api.names(repo, '/')).toHaveLength(files.length);
    await expect.poll(() => segmentFiles(dir)).toEqual([]);
    second.vfs.close();
  });

  it('entries of the older one-file-per-entry journal are still recovered, and removed once taken over', async () => {
    const { api, repo, cacheDir, dir } = await closedMount();
    const e = { ...entry('old'), repo, path: '/old.txt', pid: 2 ** 22 + 1, inline: 11 };
    await writeFile(join(dir, 'old.json'), `${JSON.stringify(e)}\nhello older`);
    const second = await makeVfs(api, { library: 'lib', cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/old.txt')!.toString()).toBe('hello older');
    await expect.poll(() => readdir(dir)).toEqual([]);
    second.vfs.close();
  });
});
