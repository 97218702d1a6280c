// Modification times set through the mount (utimens): a written file keeps the
// time set after its writes and is uploaded with it; a file already on the
// server is sent again with its new time; an equal time and folders change
// nothing; a write after the time was set makes the time the write's again;
// new files uploaded together keep each the second it was written in.
import { constants as FC } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, gate, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

const T1 = Date.UTC(2001, 1, 3, 4, 5, 6);
const T2 = Date.UTC(2010, 6, 7, 8, 9, 10);

describe('modification times', () => {
  const cleanups = cleanupAfterEach();

  async function setup() {
    // the multi-file body, as the real client offers it: it carries last_modify for new files
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 0 } });
    cleanups.push(m.cleanup);
    const remoteMtime = (p: string) => (api.nodeAt(repo, p) as { mtime: number } | undefined)?.mtime;
    return { api, repo, vfs: m.vfs, remoteMtime };
  }

  it('a new file written then given a time (cp -p) shows it and is uploaded with it', async () => {
    const { vfs, remoteMtime } = await setup();
    const fh = await vfs.create('/kept.txt', 0o644);
    await vfs.write('/kept.txt', fh, Buffer.from('data'), 4, 0);
    await vfs.utimens('/kept.txt', T1 + 999);
    await vfs.release('/kept.txt', fh);
    expect((await vfs.getattr('/kept.txt')).mtime.getTime()).toBe(T1);
    expect(await vfs.drain()).toEqual([]);
    expect(remoteMtime('/kept.txt')).toBe(T1 / 1000);
    expect((await vfs.getattr('/kept.txt')).mtime.getTime()).toBe(T1);
  });

  it('a file on the server whose time alone changes is sent again, unchanged, with the new time', async () => {
    const { api, repo, vfs, remoteMtime } = await setup();
    api.putFile(repo, '/old.txt', 'same bytes');
    await vfs.utimens('/old.txt', T2);
    expect(await vfs.drain()).toEqual([]);
    expect(api.updateTimes).toEqual([T2]);
    expect(remoteMtime('/old.txt')).toBe(T2 / 1000);
    expect(api.content(repo, '/old.txt')!.toString()).toBe('same bytes');
    // the same time again and a folder: nothing is sent
    await vfs.utimens('/old.txt', T2);
    await vfs.mkdir('/d', 0o755);
    await vfs.utimens('/d', T1);
    expect(await vfs.drain()).toEqual([]);
    expect(api.updateTimes).toEqual([T2]);
  });

  it("a write after the time was set makes the time the write's again", async () => {
    const { vfs, remoteMtime } = await setup();
    await writeWhole(vfs, '/w.txt', 'one');
    await vfs.utimens('/w.txt', T1);
    const fh = await vfs.open('/w.txt', FC.O_WRONLY | FC.O_APPEND);
    await vfs.write('/w.txt', fh, Buffer.from('two'), 3, 3);
    await vfs.release('/w.txt', fh);
    const shown = (await vfs.getattr('/w.txt')).mtime.getTime();
    expect(shown).toBeGreaterThan(Date.now() - 60_000);
    expect(await vfs.drain()).toEqual([]);
    expect(remoteMtime('/w.txt')).toBeGreaterThan(T1 / 1000);
  });

  it('new files given their times while open (tar x) go in multi-file uploads, one per second of time, each keeping its own', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, concurrency: 1 } });
    cleanups.push(m.cleanup);
    const { vfs } = m;
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/first.txt', 'first'); // holds the only upload slot while the others are written
    await sleep(20);
    // as tar does: create, write, futimens, close
    const times: Record<string, number | null> = { a: T1, b: T1 + 400, c: T2, d: null, e: T2 + 900, f: T1 };
    for (const [name, t] of Object.entries(times)) {
      const fh = await vfs.create(`/${name}.txt`, 0o644);
      await vfs.write(`/${name}.txt`, fh, Buffer.from(`${name}!`), 2, 0);
      if (t !== null) await vfs.utimens(`/${name}.txt`, t);
      await vfs.flush(`/${name}.txt`, fh);
      await vfs.release(`/${name}.txt`, fh);
    }
    g.open();
    expect(await vfs.drain()).toEqual([]);
    for (const [name, t] of Object.entries(times)) {
      expect(api.content(repo, `/${name}.txt`)!.toString()).toBe(`${name}!`);
      const mtime = (api.nodeAt(repo, `/${name}.txt`) as { mtime: number }).mtime;
      if (t === null) expect(mtime).toBeGreaterThan(Date.now() / 1000 - 60);
      else expect(mtime, name).toBe(Math.floor(t / 1000));
    }
    // the first file alone, then the six in three POSTs (T1: a, b, f; T2: c, e; no time of its own: d)
    expect(api.calls.uploadMany).toBe(4);
    expect(api.calls.upload ?? 0).toBe(0);
    expect(vfs.writeBack.stats.uploads).toBe(7);
  });

  it('a time set after close (tar x) is journaled without the bytes again, and a mount that died uploads the file with it', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const g = gate();
    api.uploadGate = g.wait;
    const first = await makeVfs(api, { library: 'lib' });
    cleanups.push(first.cleanup);
    const data = Buffer.alloc(40_000, 5);
    await writeWhole(first.vfs, '/t.dat', data);
    const journal = join(first.cacheDir, 'journal');
    const size = async () => {
      let n = 0;
      for (const f of await readdir(journal)) n += (await stat(join(journal, f))).size;
      return n;
    };
    const closed = await size();
    await first.vfs.utimens('/t.dat', T1);
    // one copy of the bytes in the journal, not two
    expect((await size()) - closed).toBeLessThan(1000);
    first.vfs.close(); // dies with the upload held
    api.uploadGate = null;
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    cleanups.push(second.cleanup);
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/t.dat')!.equals(data)).toBe(true);
    expect((api.nodeAt(repo, '/t.dat') as { mtime: number }).mtime).toBe(T1 / 1000);
    g.open();
  });

  it('utimens of a missing file is ENOENT', async () => {
    const { vfs } = await setup();
    await expect(vfs.utimens('/nope', T1)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("new files of a folder uploaded together keep each the second it was written, not the upload's", async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    // the files wait, so that both seconds go in one pass of the folder
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 10_000 } });
    cleanups.push(m.cleanup);
    const shown = async (p: string) => Math.floor((await m.vfs.getattr(p)).mtime.getTime() / 1000);
    await writeWhole(m.vfs, '/a.c', 'int a;');
    const ta = await shown('/a.c');
    await sleep(1100);
    await writeWhole(m.vfs, '/a.o', 'object a');
    await writeWhole(m.vfs, '/b.o', 'object b');
    const to = await shown('/a.o');
    expect(to).toBeGreaterThan(ta);
    await sleep(1100);
    expect(await m.vfs.drain()).toEqual([]);
    const remote = (p: string) => (api.nodeAt(repo, p) as { mtime: number } | undefined)?.mtime;
    expect([remote('/a.c'), remote('/a.o'), remote('/b.o')]).toEqual([ta, to, to]);
    expect([await shown('/a.c'), await shown('/a.o')]).toEqual([ta, to]);
    // one request per second written, not one per file
    expect(api.calls.uploadMany).toBe(2);
  });
});
