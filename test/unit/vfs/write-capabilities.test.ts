// The write path reaches the API's optional capabilities (multi-file and
// streaming uploads) through the SeafileApi interface only: the fake offers
// them, and each file is read back from the fake's store afterwards.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, apiError, gate, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

const MiB = 1024 * 1024;

describe('write path capabilities through the API interface', () => {
  const cleanups = cleanupAfterEach();

  async function setup(api: FakeApi, writeBack = {}) {
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, ...writeBack } });
    cleanups.push(m.cleanup);
    return { repo, ...m };
  }

  it('a large file is uploaded while it is written when the API offers streaming: one stream, no upload after close', async () => {
    const api = new FakeApi().offerUploadStreams();
    const { repo, vfs } = await setup(api, { streamThresholdBytes: MiB });
    const data = randomBytes(3 * MiB + 4321);
    const fh = await vfs.create('/big.bin', 0o644);
    for (let off = 0; off < data.length; off += 128 * 1024) {
      const piece = data.subarray(off, off + 128 * 1024);
      await vfs.write('/big.bin', fh, piece, piece.length, off);
    }
    expect(api.calls.startUploadStream).toBe(1); // started before the close
    await vfs.flush('/big.bin', fh);
    await vfs.release('/big.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/big.bin')!.equals(data)).toBe(true);
    expect(api.calls.streamFinish).toBe(1);
    expect(api.calls.upload ?? 0).toBe(0);
    expect(vfs.writeBack.stats).toMatchObject({ streams: 1, streamed: 1, uploads: 1 });
  });

  it('new small files of a folder go in one multi-file call when the API offers it', async () => {
    const api = new FakeApi().offerUploadBatch();
    const { repo, vfs } = await setup(api, { concurrency: 1 });
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/first.txt', 'first'); // holds the only upload slot at the gate
    await sleep(20);
    for (let i = 0; i < 6; i++) await writeWhole(vfs, `/n${i}.txt`, `note ${i}\n`.repeat(i + 1));
    g.open();
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/first.txt')!.toString()).toBe('first');
    for (let i = 0; i < 6; i++) expect(api.content(repo, `/n${i}.txt`)!.toString()).toBe(`note ${i}\n`.repeat(i + 1));
    // the first file alone, then the six waiting ones together
    expect(api.calls.uploadMany).toBe(2);
    expect(api.calls.upload ?? 0).toBe(0);
    expect(vfs.writeBack.stats.batches).toBe(1);
    expect(api.names(repo, '/')).toHaveLength(7);
  });

  it('while a batch of a folder is sent, files closed meanwhile wait and go together in the next, upload slots free or not', async () => {
    const api = new FakeApi().offerUploadBatch();
    const { repo, vfs } = await setup(api); // 8 upload slots
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/d0.txt', 'zero'); // its batch waits at the gate
    await sleep(20);
    for (let i = 1; i <= 5; i++) await writeWhole(vfs, `/d${i}.txt`, `file ${i}`);
    await sleep(20);
    expect(api.calls.uploadMany).toBe(1); // the five wait for the folder's batch under way
    g.open();
    expect(await vfs.drain()).toEqual([]);
    for (let i = 1; i <= 5; i++) expect(api.content(repo, `/d${i}.txt`)!.toString()).toBe(`file ${i}`);
    expect(api.calls.uploadMany).toBe(2);
    expect(vfs.writeBack.stats.uploads).toBe(6);
  });

  it('a far server: the upload link is asked for while the conflict check lists the folder, not after it', async () => {
    const api = new FakeApi().offerUploadBatch();
    const { repo, vfs } = await setup(api);
    api.putDir(repo, '/far');
    api.listDelayMs = 100;
    const events: string[] = [];
    const list = api.listDir.bind(api);
    api.listDir = async (r, p, o) => {
      events.push(`list ${p}`);
      const l = await list(r, p, o);
      events.push(`listed ${p}`);
      return l;
    };
    const link = api.uploadLink.bind(api);
    api.uploadLink = async (r, d) => {
      events.push(`link ${d}`);
      return link(r, d);
    };
    const update = api.updateLink.bind(api);
    api.updateLink = async (r, d) => {
      events.push(`link ${d}`);
      return update(r, d);
    };
    api.putFile(repo, '/old.txt', 'v1');
    await vfs.readdir('/far');
    await vfs.readdir('/');
    events.length = 0;
    await writeWhole(vfs, '/far/a.txt', 'new'); // a new file: a batch of one
    await writeWhole(vfs, '/old.txt', 'v2'); // an edit: an upload of its own, through the update link
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/far/a.txt')!.toString()).toBe('new');
    expect(api.content(repo, '/old.txt')!.toString()).toBe('v2');
    for (const dir of ['/far', '/']) {
      expect(events.indexOf(`link ${dir}`), `${dir}: ${events.join(', ')}`).toBeGreaterThan(-1);
      expect(events.indexOf(`link ${dir}`), events.join(', ')).toBeLessThan(events.indexOf(`listed ${dir}`));
    }
  });

  it('in a burst the next batch of a folder waits for the gap after the last one started, unless it is full', async () => {
    const api = new FakeApi().offerUploadBatch();
    const { repo, vfs } = await setup(api, { batchGapMs: 10_000, batchMaxFiles: 4 });
    const until = async (ok: () => boolean) => {
      for (let t = 0; t < 200 && !ok(); t++) await sleep(10);
      return ok();
    };
    await writeWhole(vfs, '/g0.txt', 'g0');
    expect(await until(() => api.calls.uploadMany === 1)).toBe(true); // a lone file goes at once
    await writeWhole(vfs, '/g1.txt', 'g1');
    await writeWhole(vfs, '/g2.txt', 'g2');
    await sleep(200);
    expect(api.calls.uploadMany).toBe(1); // two files wait for the gap
    await writeWhole(vfs, '/g3.txt', 'g3');
    await writeWhole(vfs, '/g4.txt', 'g4'); // four: a full batch goes without waiting
    expect(await until(() => api.calls.uploadMany === 2)).toBe(true);
    expect(await vfs.drain()).toEqual([]);
    for (let i = 0; i <= 4; i++) expect(api.content(repo, `/g${i}.txt`)!.toString()).toBe(`g${i}`);
    expect(api.calls.uploadMany).toBe(2);
  });

  it('the files a failed batch could not take are handed back and uploaded one by one', async () => {
    const api = new FakeApi().offerUploadBatch();
    const { repo, vfs } = await setup(api, { concurrency: 1 });
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/first.txt', 'first');
    await sleep(20);
    for (let i = 0; i < 4; i++) await writeWhole(vfs, `/b${i}`, `b${i}`);
    api.failNext.set('uploadMany', [apiError('server', 500, 'upload')]);
    g.open();
    expect(await vfs.drain()).toEqual([]);
    for (let i = 0; i < 4; i++) expect(api.content(repo, `/b${i}`)!.toString()).toBe(`b${i}`);
    expect(vfs.writeBack.stats.batches).toBe(0);
    expect(vfs.writeBack.stats.uploads).toBe(5);
    expect(api.names(repo, '/')).toHaveLength(5); // no duplicates from the failed batch
  });

  it('without the capabilities every file is sent by its own upload call after close', async () => {
    const api = new FakeApi();
    const { repo, vfs } = await setup(api, { streamThresholdBytes: MiB });
    const data = randomBytes(2 * MiB);
    await writeWhole(vfs, '/a.bin', data);
    await writeWhole(vfs, '/b.txt', 'b');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/a.bin')!.equals(data)).toBe(true);
    expect(api.content(repo, '/b.txt')!.toString()).toBe('b');
    expect(api.calls.upload).toBe(2);
    expect(api.calls.uploadMany ?? 0).toBe(0);
    expect(vfs.writeBack.stats.streams).toBe(0);
  });
});
