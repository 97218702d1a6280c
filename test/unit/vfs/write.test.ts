import { constants as FC } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, gate, makeVfs, readWhole, sleep, vfsOnLibrary, writeWhole } from '../../helpers/fake-api.js';

describe('vfs write path', () => {
  const cleanups = cleanupAfterEach();

  const setup = (opts = {}) => vfsOnLibrary(cleanups, opts);

  it('reads back what was written before the upload, then uploads it', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.uploadGate = g.wait;
    const data = Buffer.alloc(300_000, 7);
    data.write('head', 0);
    await writeWhole(vfs, '/f.bin', data);
    expect(api.content(repo, '/f.bin')).toBeUndefined();
    expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
    expect(vfs.pendingUploads()).toEqual([{ path: '/f.bin', size: 300_000 }]);
    g.open();
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/f.bin')!.equals(data)).toBe(true);
    // the cache now describes the uploaded file; reads come from the server
    expect((await readWhole(vfs, '/f.bin')).equals(data)).toBe(true);
  });

  it('uploads an empty file', async () => {
    const { api, repo, vfs } = await setup();
    await writeWhole(vfs, '/empty', '');
    await vfs.drain();
    expect(api.content(repo, '/empty')!.length).toBe(0);
  });

  it('fetches the content before a write without O_TRUNC: random write, append, truncate', async () => {
    const { api, repo, vfs, cacheDir } = await setup();
    api.putFile(repo, '/doc.txt', 'hello world\n');
    let fh = await vfs.open('/doc.txt', FC.O_RDWR);
    await vfs.write('/doc.txt', fh, Buffer.from('HELLO'), 5, 0);
    await vfs.release('/doc.txt', fh);
    await vfs.drain();
    expect(api.content(repo, '/doc.txt')!.toString()).toBe('HELLO world\n');
    expect(api.calls.update).toBe(1); // an existing file goes through the update link

    fh = await vfs.open('/doc.txt', FC.O_WRONLY | FC.O_APPEND);
    await vfs.write('/doc.txt', fh, Buffer.from('more\n'), 5, 12);
    await vfs.release('/doc.txt', fh);
    await vfs.truncate('/doc.txt', 5);
    expect((await vfs.getattr('/doc.txt')).size).toBe(5);
    await sleep(1100); // truncate without an open handle uploads after a short pause
    await vfs.drain();
    expect(api.content(repo, '/doc.txt')!.toString()).toBe('HELLO');

    fh = await vfs.open('/doc.txt', FC.O_WRONLY | FC.O_TRUNC);
    await vfs.write('/doc.txt', fh, Buffer.from('x'), 1, 0);
    await vfs.release('/doc.txt', fh);
    await vfs.drain();
    expect(api.content(repo, '/doc.txt')!.toString()).toBe('x');
    // temp files are gone once everything is uploaded
    await sleep(20);
    expect(await readdir(join(cacheDir, 'dirty'))).toEqual([]);
    expect(await readdir(join(cacheDir, 'journal'))).toEqual([]);
  });

  it('fsync waits for the upload; close stays fast while uploads are held', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.uploadGate = g.wait;
    const fh = await vfs.create('/s.txt', 0o644);
    await vfs.write('/s.txt', fh, Buffer.from('synced'), 6, 0);
    let done = false;
    const f = vfs.fsync('/s.txt', fh).then(() => (done = true));
    await sleep(30);
    expect(done).toBe(false);
    g.open();
    await f;
    expect(api.content(repo, '/s.txt')!.toString()).toBe('synced');
    await vfs.release('/s.txt', fh);
  });

  it('keeps the data and reports ENOSPC when over quota, and uploads once space is back', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/big', Buffer.alloc(1000));
    api.quotaTotal = 1000;
    const fh = await vfs.create('/x.txt', 0o644);
    await vfs.write('/x.txt', fh, Buffer.from('data'), 4, 0);
    await expect(vfs.fsync('/x.txt', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(vfs.flush('/x.txt', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    await vfs.release('/x.txt', fh);
    expect(vfs.pendingUploads()).toEqual([{ path: '/x.txt', size: 4 }]);
    expect((await readWhole(vfs, '/x.txt')).toString()).toBe('data');
    api.quotaTotal = -2;
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/x.txt')!.toString()).toBe('data');
  });

  it('says ENOSPC at close, before any upload, when the quota cannot hold the file; deleting a file makes room', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/big', Buffer.alloc(900));
    api.quotaTotal = 1000;
    const fh = await vfs.create('/x.bin', 0o644);
    await vfs.write('/x.bin', fh, Buffer.alloc(200, 1), 200, 0);
    await expect(vfs.flush('/x.bin', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(api.calls.upload ?? 0).toBe(0);
    await vfs.release('/x.bin', fh);
    // the data is kept; once the big file is gone it fits, and goes
    await vfs.unlink('/big');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/x.bin')!.equals(Buffer.alloc(200, 1))).toBe(true);
    // a file that fits closes without a word
    await writeWhole(vfs, '/small.txt', 'fits');
    expect(await vfs.drain()).toEqual([]);
  });

  it('a library shared with the account is charged to its owner: the account being full does not refuse it', async () => {
    const api = new FakeApi();
    const mine = api.addLibrary('mine');
    const theirs = api.addLibrary('theirs', { owner: 'other@example.com', type: 'srepo' });
    const m = await makeVfs(api);
    cleanups.push(m.cleanup);
    const vfs = m.vfs;
    api.putFile(mine, '/big', Buffer.alloc(900));
    api.quotaTotal = 1000;
    await vfs.statfs('/'); // the quota is known
    // 200 bytes do not fit the account's own quota, but this library is its owner's
    await writeWhole(vfs, '/theirs/x.bin', Buffer.alloc(200, 2));
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(theirs, '/x.bin')!.equals(Buffer.alloc(200, 2))).toBe(true);
    // the account's own library is still checked at close
    const fh = await vfs.create('/mine/y.bin', 0o644);
    await vfs.write('/mine/y.bin', fh, Buffer.alloc(200, 3), 200, 0);
    await expect(vfs.flush('/mine/y.bin', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    await vfs.release('/mine/y.bin', fh);
    // statfs: the account's quota in its own library; no limit known in the owner's (only the server knows)
    expect((await vfs.statfs('/mine')).blocks).toBe(0); // 1000 bytes in 1 MiB blocks
    expect((await vfs.statfs('/theirs/x.bin')).blocks).toBe(2 ** 32 - 1);
  });

  it("over the owner's quota, the server's refusal is ENOSPC at fsync and close, and nothing is lost", async () => {
    const api = new FakeApi();
    const theirs = api.addLibrary('theirs', { owner: 'other@example.com', type: 'srepo' });
    const m = await makeVfs(api, { library: 'theirs' });
    cleanups.push(m.cleanup);
    const vfs = m.vfs;
    api.putFile(theirs, '/full', Buffer.alloc(100));
    api.ownerQuotas.set('other@example.com', 100);
    const fh = await vfs.create('/z.txt', 0o644);
    await vfs.write('/z.txt', fh, Buffer.from('data'), 4, 0);
    await expect(vfs.fsync('/z.txt', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    await expect(vfs.flush('/z.txt', fh)).rejects.toMatchObject({ code: 'ENOSPC' });
    await vfs.release('/z.txt', fh);
    expect(vfs.pendingUploads()).toEqual([{ path: '/z.txt', size: 4 }]);
    expect((await readWhole(vfs, '/z.txt')).toString()).toBe('data');
    api.ownerQuotas.set('other@example.com', -2); // the owner made room
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(theirs, '/z.txt')!.toString()).toBe('data');
  });

  it('retries transient upload failures', async () => {
    const { api, repo, vfs } = await setup();
    const { apiError } = await import('../../helpers/fake-api.js');
    api.failNext.set('upload', [apiError('server', 500, 'upload'), apiError('network', 0, 'upload')]);
    await writeWhole(vfs, '/r.txt', 'retry me');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/r.txt')!.toString()).toBe('retry me');
    expect(api.calls.upload).toBe(3);
  });
});

describe('vfs batch uploads', () => {
  it('sends many small new files of a folder in a few multi-file POSTs', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const g = gate();
    api.uploadGate = g.wait;
    api.offerUploadBatch();
    const m = await makeVfs(api, { library: 'lib', writeBack: { concurrency: 2, retryBaseMs: 10 } });
    try {
      await m.vfs.mkdir('/many', 0o755);
      const want = new Map<string, string>();
      for (let i = 0; i < 100; i++) {
        const body = `file number ${i}\n`.repeat(i + 1);
        want.set(`f${i}.txt`, body);
        await writeWhole(m.vfs, `/many/f${i}.txt`, body);
      }
      await writeWhole(m.vfs, '/many/big.bin', Buffer.alloc(2 * 1024 * 1024, 1)); // too big for a batch
      g.open();
      expect(await m.vfs.drain()).toEqual([]);
      for (const [name, body] of want) expect(api.content(repo, `/many/${name}`)!.toString()).toBe(body);
      expect(api.content(repo, '/many/big.bin')!.length).toBe(2 * 1024 * 1024);
      expect(api.names(repo, '/many')).toHaveLength(101);
      const posts = (api.calls.uploadMany ?? 0) + (api.calls.upload ?? 0);
      expect(posts).toBeLessThanOrEqual(8);
      expect(m.vfs.writeBack.stats.uploads).toBe(101);
    } finally {
      g.open();
      await m.cleanup();
    }
  });

  it('falls back to one upload per file when a batch fails', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const g = gate();
    api.uploadGate = g.wait;
    const { apiError } = await import('../../helpers/fake-api.js');
    api.offerUploadBatch();
    const m = await makeVfs(api, { library: 'lib', writeBack: { concurrency: 1, retryBaseMs: 10 } });
    try {
      await writeWhole(m.vfs, '/first', '1'); // holds the only slot at the gate
      for (let i = 0; i < 5; i++) await writeWhole(m.vfs, `/b${i}`, `b${i}`);
      api.failNext.set('uploadMany', [apiError('server', 500, 'upload')]);
      g.open();
      expect(await m.vfs.drain()).toEqual([]);
      for (let i = 0; i < 5; i++) expect(api.content(repo, `/b${i}`)!.toString()).toBe(`b${i}`);
    } finally {
      g.open();
      await m.cleanup();
    }
  });
});

describe('vfs awkward names', () => {
  it('a new file whose name holds a double quote lands under that name (uploaded under a plain name, then renamed)', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.mangleQuotes = true;
    api.offerUploadBatch();
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10 } });
    try {
      await writeWhole(m.vfs, '/say "hi".txt', 'quoted');
      await writeWhole(m.vfs, '/plain.txt', 'plain');
      expect(await m.vfs.drain()).toEqual([]);
      expect(api.names(repo, '/')).toEqual(['plain.txt', 'say "hi".txt']);
      expect(api.content(repo, '/say "hi".txt')!.toString()).toBe('quoted');
    } finally {
      await m.cleanup();
    }
  });
});
