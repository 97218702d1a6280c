// The client against `seafs serve`: folders, files, ranged downloads,
// uploads and updates, batch operations, share and upload links, stars,
// search, and 20 concurrent uploads into one folder.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import type { DirEntry, DirListing } from '../../src/client/types.js';
import type { TestServer } from '../helpers/server.js';
import { LocalFiles, expectApiError, fetchFile, readAll, startWithLibrary } from '../helpers/client-setup.js';

let server: TestServer;
let c: SeafileClient;
let repo: string;
const files = new LocalFiles();

beforeAll(async () => {
  ({ server, client: c, repo } = await startWithLibrary('Files'));
});

afterAll(async () => {
  await c?.close();
  await server?.stop();
  files.cleanup();
});

function entries(l: DirListing): DirEntry[] {
  if (l.uptodate) throw new Error('expected a full listing');
  return l.entries;
}

async function names(path: string, r = repo): Promise<string[]> {
  return entries(await c.listDir(r, path)).map((e) => e.name);
}

async function put(dir: string, name: string, content: string | Buffer, opts: { replace?: boolean } = {}) {
  const link = await c.uploadLink(repo, dir);
  const [f] = await c.upload(link, dir, files.write(content), name, opts);
  return f!;
}

describe('folders', () => {
  it('makes folders (auto-renamed on clash, create_parents quiet on existing) and lists them', async () => {
    await c.mkdir(repo, '/f1');
    await c.mkdir(repo, '/f1'); // clash: the server auto-renames
    expect(await names('/')).toEqual(expect.arrayContaining(['f1', 'f1 (1)']));
    await c.mkdir(repo, '/deep/er/est', { createParents: true });
    await c.mkdir(repo, '/deep/er/est', { createParents: true });
    expect(await names('/deep/er')).toEqual(['est']);
    await expectApiError(c.mkdir(repo, '/no/parent'), 'not_found');
    await expectApiError(c.mkdir(repo, `/f1/${'x'.repeat(300)}`), 'invalid_name', 400);
  });

  it('lists with oid (uptodate), t=f/d, recursive with normalised parent_dir', async () => {
    await c.mkdir(repo, '/tree/a/b', { createParents: true });
    await put('/tree', 'top.txt', 't');
    await put('/tree/a', 'mid.txt', 'mm');
    const l1 = await c.listDir(repo, '/tree');
    expect(l1.uptodate).toBe(false);
    const oid = !l1.uptodate ? l1.oid : null;
    expect(oid).toMatch(/^[0-9a-f]{40}$/);
    expect(entries(l1).map((e) => [e.type, e.name])).toEqual([
      ['dir', 'a'],
      ['file', 'top.txt'],
    ]);
    const top = entries(l1).find((e) => e.name === 'top.txt')!;
    expect(top.size).toBe(1);
    expect(top.id).toMatch(/^[0-9a-f]{40}$/);
    expect(top.mtime).toBeGreaterThan(1_600_000_000);

    expect(await c.listDir(repo, '/tree', { oid: oid! })).toEqual({ uptodate: true, oid });
    expect(await c.listDir(repo, '/tree/', { oid: oid! })).toEqual({ uptodate: true, oid });
    await put('/tree', 'new.txt', 'n');
    const l2 = await c.listDir(repo, '/tree', { oid: oid! });
    expect(l2.uptodate).toBe(false);
    expect(!l2.uptodate && l2.oid).not.toBe(oid);

    expect(entries(await c.listDir(repo, '/tree', { type: 'f' })).map((e) => e.name)).toEqual(['new.txt', 'top.txt']);
    expect(entries(await c.listDir(repo, '/tree', { type: 'd' })).map((e) => e.name)).toEqual(['a']);
    const rec = entries(await c.listDir(repo, '/tree', { type: 'd', recursive: true }));
    expect(rec.map((e) => `${e.parent_dir}|${e.name}`).sort()).toEqual(['/tree/a|b', '/tree|a']);
    await expectApiError(c.listDir(repo, '/tree/missing'), 'not_found', 404);
  });

  it('renames (auto-renamed on clash) and deletes folders', async () => {
    await c.mkdir(repo, '/ren/x', { createParents: true });
    await c.mkdir(repo, '/ren/y');
    await c.renameDir(repo, '/ren/x', 'z');
    expect(await names('/ren')).toEqual(['y', 'z']);
    await c.renameDir(repo, '/ren/z', 'y');
    expect(await names('/ren')).toEqual(['y', 'y (1)']);
    await expectApiError(c.renameDir(repo, '/ren/y', 'a/b'), 'invalid_name', 400);
    await c.deleteDir(repo, '/ren/y (1)');
    expect(await names('/ren')).toEqual(['y']);
    await expectApiError(c.deleteDir(repo, '/ren/gone'), 'not_found', 404);
  });
});

describe('files', () => {
  it('creates, details, renames (301 unfollowed), moves, copies and deletes', async () => {
    await c.mkdir(repo, '/ops/sub', { createParents: true });
    await c.createFile(repo, '/ops/empty.txt');
    const d = await c.fileDetail(repo, '/ops/empty.txt');
    expect(d).toMatchObject({ type: 'file', name: 'empty.txt', size: 0, id: '0'.repeat(40) });
    await c.createFile(repo, '/ops/empty.txt'); // clash: auto-renamed
    expect(await names('/ops')).toEqual(['sub', 'empty (1).txt', 'empty.txt']);

    await put('/ops', 'a.txt', 'alpha');
    await c.renameFile(repo, '/ops/a.txt', 'b.txt');
    expect((await c.fileDetail(repo, '/ops/b.txt')).size).toBe(5);
    await expectApiError(c.fileDetail(repo, '/ops/a.txt'), 'not_found', 404);
    await expectApiError(c.renameFile(repo, '/ops/b.txt', 'b.txt'), 'conflict', 409);
    await expectApiError(c.renameFile(repo, '/ops/b.txt', '../x'), 'invalid_name', 400);
    await c.renameFile(repo, '/ops/b.txt', 'empty.txt'); // clash: auto-renamed, never overwrites
    expect((await names('/ops')).filter((n) => n.startsWith('empty'))).toEqual([
      'empty (1).txt',
      'empty (2).txt',
      'empty.txt',
    ]);

    await c.moveFile(repo, '/ops/empty (2).txt', repo, '/ops/sub');
    expect(await names('/ops/sub')).toEqual(['empty (2).txt']);
    expect((await fetchFile(c, repo, '/ops/sub/empty (2).txt')).toString()).toBe('alpha');

    const other = (await c.createLibrary('Other')).repo_id;
    await c.copyFile(repo, '/ops/sub/empty (2).txt', other, '/');
    await c.moveFile(repo, '/ops/empty (1).txt', other, '/');
    expect(await names('/', other)).toEqual(['empty (1).txt', 'empty (2).txt']);
    expect((await fetchFile(c, other, '/empty (2).txt')).toString()).toBe('alpha');

    await c.deleteFile(repo, '/ops/empty.txt');
    await c.deleteFile(repo, '/ops/empty.txt'); // real servers: success for a missing file
    expect(await names('/ops')).toEqual(['sub']);
    await expectApiError(c.moveFile(repo, '/ops/nothing', repo, '/'), 'not_found');
  });

  it('locks and unlocks a file', async () => {
    await put('/', 'lockme.txt', 'l');
    await c.lockFile(repo, '/lockme.txt');
    const e = entries(await c.listDir(repo, '/')).find((x) => x.name === 'lockme.txt')!;
    expect(e.is_locked).toBe(true);
    await expectApiError(c.lockFile(repo, '/lockme.txt'), 'forbidden', 403);
    await c.unlockFile(repo, '/lockme.txt');
    expect(entries(await c.listDir(repo, '/')).find((x) => x.name === 'lockme.txt')!.is_locked).toBe(false);
  });

  it('keeps history: revisions download and revert', async () => {
    await put('/', 'versions.txt', 'version one');
    const ul = await c.updateLink(repo, '/');
    await c.update(ul, '/versions.txt', files.write('version two!'));
    const hist = await c.fileHistory(repo, '/versions.txt');
    expect(hist.length).toBeGreaterThanOrEqual(2);
    const oldest = hist[hist.length - 1]!;
    expect(oldest.rev_file_size).toBe('version one'.length);
    const url = await c.fileRevisionLink(repo, '/versions.txt', oldest.id);
    expect((await readAll((await c.download(url)).body)).toString()).toBe('version one');
    await expectApiError(c.fileRevisionLink(repo, '/versions.txt', 'f'.repeat(40)), 'not_found', 404);

    await c.revertFile(repo, '/versions.txt', oldest.id);
    expect((await fetchFile(c, repo, '/versions.txt')).toString()).toBe('version one');
  });
});

describe('downloads', () => {
  const content = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 31) & 0xff));

  it('returns a link with the file id (oid); one-time without reuse, many times with it', async () => {
    const f = await put('/', 'range.bin', content);
    const once = await c.downloadLink(repo, '/range.bin');
    expect(once.oid).toBe(f.id);
    expect((await readAll((await c.download(once.url)).body)).equals(content)).toBe(true);
    await expectApiError(c.download(once.url), 'forbidden', 403);

    const many = await c.downloadLink(repo, '/range.bin', { reuse: true });
    for (let i = 0; i < 3; i++) expect((await readAll((await c.download(many.url)).body)).length).toBe(content.length);
    await expectApiError(c.downloadLink(repo, '/nothing.bin'), 'not_found', 404);
  });

  it('serves single ranges (206), open ranges, and 416 past the end', async () => {
    const { url } = await c.downloadLink(repo, '/range.bin', { reuse: true });
    const r1 = await c.download(url, { start: 1000, end: 1999 });
    expect([r1.status, r1.start, r1.totalSize]).toEqual([206, 1000, content.length]);
    expect((await readAll(r1.body)).equals(content.subarray(1000, 2000))).toBe(true);
    expect(r1.etag).toBe((await c.fileDetail(repo, '/range.bin')).id);

    const r2 = await c.download(url, { start: 99_990 });
    expect([r2.status, r2.start]).toEqual([206, 99_990]);
    expect((await readAll(r2.body)).equals(content.subarray(99_990))).toBe(true);

    const r3 = await c.download(url, { start: 99_999, end: 200_000 });
    expect((await readAll(r3.body)).equals(content.subarray(99_999))).toBe(true);

    const r4 = await c.download(url, { start: 100_000 });
    expect([r4.status, r4.totalSize]).toEqual([416, content.length]);
    expect((await readAll(r4.body)).length).toBe(0);

    const r5 = await c.download(url);
    expect([r5.status, r5.start, r5.totalSize]).toEqual([200, 0, content.length]);
    expect((await readAll(r5.body)).equals(content)).toBe(true);
  });

  it('serves an empty file with 200 whatever the range', async () => {
    await c.createFile(repo, '/zero.bin');
    const { url } = await c.downloadLink(repo, '/zero.bin', { reuse: true });
    for (const range of [undefined, { start: 0 }, { start: 0, end: 10 }]) {
      const r = await c.download(url, range);
      expect([200, 416]).toContain(r.status);
      expect((await readAll(r.body)).length).toBe(0);
    }
  });

  it('stops a download midway without leaking the connection', async () => {
    const big = Buffer.alloc(8 << 20, 7);
    await put('/', 'big.bin', big);
    const { url } = await c.downloadLink(repo, '/big.bin', { reuse: true });
    for (let i = 0; i < 20; i++) {
      const r = await c.download(url, { start: 0 });
      await new Promise((res) => r.body.once('data', res));
      r.body.destroy();
    }
    const r = await c.download(url, { start: (8 << 20) - 4 });
    expect((await readAll(r.body)).equals(Buffer.alloc(4, 7))).toBe(true);
  });
});

describe('uploads and updates', () => {
  it('uploads (auto-rename, replace, relative_path, empty file, non-ASCII names) and reports the stored names', async () => {
    await c.mkdir(repo, '/up');
    const link = await c.uploadLink(repo, '/up');
    const a = await c.upload(link, '/up', files.write('first'), 'naïve file.txt');
    expect(a).toEqual([{ name: 'naïve file.txt', id: expect.stringMatching(/^[0-9a-f]{40}$/), size: 5 }]);
    const b = await c.upload(link, '/up', files.write('second'), 'naïve file.txt');
    expect(b[0]!.name).toBe('naïve file (1).txt');
    const r = await c.upload(link, '/up', files.write('third!'), 'naïve file.txt', { replace: true });
    expect(r[0]!.name).toBe('naïve file.txt');
    expect((await fetchFile(c, repo, '/up/naïve file.txt')).toString()).toBe('third!');
    const e = await c.upload(link, '/up', files.write(''), 'empty');
    expect(e[0]).toMatchObject({ name: 'empty', size: 0, id: '0'.repeat(40) });
    await c.upload(link, '/up', files.write('nested'), 'n.txt', { relativePath: 'x/y' });
    expect((await fetchFile(c, repo, '/up/x/y/n.txt')).toString()).toBe('nested');
    // the link is reusable and bound to its folder
    await expectApiError(c.upload(link, '/', files.write('z'), 'z.txt'), 'forbidden', 403);
    await expectApiError(c.upload(link, '/up', files.write('z'), '..'), 'invalid_name');
    await expectApiError(c.upload(link, '/up', files.write('z'), 'x'.repeat(256)), 'invalid_name');
  });

  it('updates in place, refuses a missing target (441), and keeps the id for identical content', async () => {
    const f = await put('/up', 'upd.txt', 'one');
    const link = await c.updateLink(repo, '/up');
    const id2 = await c.update(link, '/up/upd.txt', files.write('two two'));
    expect(id2).not.toBe(f.id);
    expect(await c.fileDetail(repo, '/up/upd.txt')).toMatchObject({ id: id2, size: 7 });
    expect(await c.update(link, '/up/upd.txt', files.write('two two'))).toBe(id2);
    await expectApiError(c.update(link, '/up/missing.txt', files.write('x')), 'target_missing', 441);
  });

  it('refuses an upload link for a missing folder', async () => {
    const err = await c.uploadLink(repo, '/no/such/dir').catch((e: unknown) => e);
    // real servers: 404 at link time, or a link whose upload then fails
    if (typeof err === 'string') {
      await expectApiError(c.upload(err, '/no/such/dir', files.write('x'), 'x'), 'bad_request');
    } else expect((err as { kind?: string }).kind).toBe('not_found');
  });

  it('lands 20 concurrent uploads into one folder, and 5 with one name all distinct', async () => {
    await c.mkdir(repo, '/many');
    const link = await c.uploadLink(repo, '/many');
    const sizes = Array.from({ length: 20 }, (_, i) => 1000 + i * 5000);
    const results = await Promise.all(
      sizes.map((n, i) =>
        c.upload(link, '/many', files.write(Buffer.alloc(n, i)), `file-${String(i).padStart(2, '0')}.bin`),
      ),
    );
    expect(results.map((r) => r[0]!.size)).toEqual(sizes);
    const listed = entries(await c.listDir(repo, '/many'));
    expect(listed.map((e) => [e.name, e.size])).toEqual(
      sizes.map((n, i) => [`file-${String(i).padStart(2, '0')}.bin`, n]),
    );

    const same = await Promise.all(
      Array.from({ length: 5 }, (_, i) => c.upload(link, '/many', files.write(`same ${i}`), 'same.txt')),
    );
    const got = same.map((r) => r[0]!.name).sort();
    expect(new Set(got).size).toBe(5);
    expect(got).toEqual(['same (1).txt', 'same (2).txt', 'same (3).txt', 'same (4).txt', 'same.txt']);
    const contents = await Promise.all(got.map((n) => fetchFile(c, repo, `/many/${n}`).then((b) => b.toString())));
    expect(contents.sort()).toEqual(['same 0', 'same 1', 'same 2', 'same 3', 'same 4']);
  });
});

describe('batch operations', () => {
  it('copies, moves and deletes several names at once', async () => {
    await c.mkdir(repo, '/batch/src', { createParents: true });
    await c.mkdir(repo, '/batch/dst');
    for (const n of ['a', 'b', 'c']) await put('/batch/src', `${n}.txt`, n);
    await c.mkdir(repo, '/batch/src/folder');
    await c.batchCopy(repo, '/batch/src', ['a.txt', 'folder'], repo, '/batch/dst');
    expect(await names('/batch/dst')).toEqual(['folder', 'a.txt']);
    await c.batchMove(repo, '/batch/src', ['b.txt', 'c.txt'], repo, '/batch/dst');
    expect(await names('/batch/src')).toEqual(['folder', 'a.txt']);
    expect(await names('/batch/dst')).toEqual(['folder', 'a.txt', 'b.txt', 'c.txt']);
    await c.batchDelete(repo, '/batch/dst', ['a.txt', 'folder']);
    expect(await names('/batch/dst')).toEqual(['b.txt', 'c.txt']);
    await expectApiError(c.batchCopy('00000000-0000-4000-8000-000000000000', '/', ['x'], repo, '/'), 'not_found', 404);
  });
});

describe('share links, upload links, stars, search', () => {
  it('creates, lists and deletes share links', async () => {
    await put('/', 'shared.txt', 's');
    const link = await c.createShareLink(repo, '/shared.txt', { expireDays: 3 });
    expect(link).toMatchObject({ repo_id: repo, path: '/shared.txt', is_expired: false });
    expect(link.link).toContain(`/f/${link.token}/`);
    const dirLink = await c.createShareLink(repo, '/up', { password: 'long enough pw' });
    expect(dirLink.link).toContain(`/d/${dirLink.token}/`);
    const all = await c.listShareLinks();
    expect(all.map((l) => l.token)).toEqual(expect.arrayContaining([link.token, dirLink.token]));
    const one = await c.listShareLinks({ repoId: repo, path: '/shared.txt' });
    expect(one.map((l) => l.token)).toEqual([link.token]);
    expect(one[0]).toMatchObject({ obj_name: 'shared.txt', is_dir: false });
    await c.deleteShareLink(link.token);
    expect((await c.listShareLinks()).map((l) => l.token)).not.toContain(link.token);
    await expectApiError(c.createShareLink(repo, '/nothing.txt'), 'not_found');
  });

  it('creates, lists and deletes public upload links', async () => {
    const u = await c.createPublicUploadLink(repo, '/up');
    expect(u.repo_id).toBe(repo);
    expect(u.link).toContain(`/u/d/${u.token}/`);
    expect((await c.listPublicUploadLinks()).map((x) => x.token)).toContain(u.token);
    await c.deletePublicUploadLink(u.token);
    expect((await c.listPublicUploadLinks()).map((x) => x.token)).not.toContain(u.token);
  });

  it('stars and unstars files', async () => {
    await put('/', 'star.txt', 'star');
    await c.starFile(repo, '/star.txt');
    const s = await c.listStarred();
    expect(s.find((x) => x.path === '/star.txt')).toMatchObject({ repo, dir: false, size: 4 });
    await c.unstarFile(repo, '/star.txt');
    expect((await c.listStarred()).find((x) => x.path === '/star.txt')).toBeUndefined();
    await expectApiError(c.starFile(repo, '/dir/'), 'bad_request', 400);
  });

  it('searches by name', async () => {
    await put('/', 'needle-haystack.txt', 'n');
    const r = await c.search('needle');
    expect(r.total).toBeGreaterThanOrEqual(1);
    expect(r.results.find((x) => x.name === 'needle-haystack.txt')).toMatchObject({
      repo_id: repo,
      fullpath: '/needle-haystack.txt',
    });
    expect(typeof r.has_more).toBe('boolean');
  });
});
