import { createHash, randomBytes } from 'node:crypto';
import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { parseTime } from '../../../src/cli/control/file-restore.js';
import { stamp, timeNames } from '../../../src/vfs/hidden/names.js';
import { FakeApi, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';

const T0 = Date.UTC(2026, 10, 20, 9, 0, 0) / 1000;

describe('.seafile-history and .seafile-trash', () => {
  const cleanups = cleanupAfterEach();

  async function setup(opts: { allLibraries?: boolean } = {}) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/docs');
    api.clockSec = T0;
    api.putFile(repo, '/docs/report.txt', 'version one');
    api.clockSec = T0 + 3600;
    api.putFile(repo, '/docs/report.txt', 'version two, longer');
    api.clockSec = T0 + 7200;
    api.putFile(repo, '/docs/report.txt', 'v3');
    api.clockSec = null;
    const m = await makeVfs(api, opts.allLibraries ? {} : { library: 'lib' });
    cleanups.push(m.cleanup);
    const base = opts.allLibraries ? '/lib' : '';
    return { api, repo, base, ...m };
  }

  const name = (sec: number, label: string) => `${stamp(sec * 1000)} ${label}`;

  it('the hidden folders are never listed at the root but answer to their path', async () => {
    const { vfs } = await setup();
    expect((await vfs.readdir('/')).sort()).toEqual(['docs']);
    expect((await vfs.getattr('/.seafile-history')).mode & FC.S_IFDIR).toBeTruthy();
    expect((await vfs.getattr('/.seafile-trash')).mode & FC.S_IFDIR).toBeTruthy();
    expect(await vfs.readdir('/.seafile-history')).toEqual(['docs']);
    // a folder of the history lists the folder's children: each file is a folder of its versions
    expect(await vfs.readdir('/.seafile-history/docs')).toEqual(['report.txt']);
    expect((await vfs.getattr('/.seafile-history/docs/report.txt')).mode & FC.S_IFDIR).toBeTruthy();
  });

  it("a file's folder lists one entry per version, named by its time, with that version's size and time", async () => {
    const { vfs } = await setup();
    const names = await vfs.readdir('/.seafile-history/docs/report.txt');
    expect(names).toEqual([name(T0, 'report.txt'), name(T0 + 3600, 'report.txt'), name(T0 + 7200, 'report.txt')]);
    const a = await vfs.getattr(`/.seafile-history/docs/report.txt/${names[1]}`);
    expect(a.size).toBe('version two, longer'.length);
    expect(a.mtime.getTime()).toBe((T0 + 3600) * 1000);
    expect(a.mode & 0o222).toBe(0);
  });

  it('reading a version reads that revision, and the current file is unchanged', async () => {
    const { vfs, api } = await setup();
    const names = await vfs.readdir('/.seafile-history/docs/report.txt');
    const got = [];
    for (const n of names) got.push((await readWhole(vfs, `/.seafile-history/docs/report.txt/${n}`)).toString());
    expect(got).toEqual(['version one', 'version two, longer', 'v3']);
    expect(api.calls.fileRevisionLink).toBeGreaterThanOrEqual(3);
    expect((await readWhole(vfs, '/docs/report.txt')).toString()).toBe('v3');
  });

  it('a version read while the current file has unsent local changes still reads the revision', async () => {
    const { vfs, api } = await setup();
    api.uploadGate = () => new Promise(() => {}); // uploads hang: the local data stays dirty
    await writeWhole(vfs, '/docs/report.txt', 'local edit');
    const names = await vfs.readdir('/.seafile-history/docs/report.txt');
    expect((await readWhole(vfs, `/.seafile-history/docs/report.txt/${names[0]}`)).toString()).toBe('version one');
  });

  it('a large version is read in ranges and streams within the reader memory budget, never whole', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const big = randomBytes(20 * 1024 * 1024 + 77);
    api.clockSec = T0;
    api.putFile(repo, '/big.bin', big);
    api.clockSec = T0 + 60;
    api.putFile(repo, '/big.bin', 'small now');
    api.clockSec = null;
    const m = await makeVfs(api, { library: 'lib', reader: { memoryBytes: 4 * 1024 * 1024 } });
    cleanups.push(m.cleanup);
    const v = `/.seafile-history/big.bin/${name(T0, 'big.bin')}`;
    const fh = await m.vfs.open(v, FC.O_RDONLY);
    const hash = createHash('sha256');
    const buf = Buffer.alloc(128 * 1024);
    let peak = 0;
    for (let off = 0; off < big.length; off += buf.length) {
      const n = await m.vfs.read(v, fh, buf, buf.length, off);
      hash.update(buf.subarray(0, n));
      peak = Math.max(peak, m.vfs.reader.memory().used);
    }
    await m.vfs.release(v, fh);
    expect(hash.digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    expect(peak).toBeLessThanOrEqual(4 * 1024 * 1024);
    // through revision links, each byte fetched about once
    expect(api.calls.fileRevisionLink).toBeGreaterThanOrEqual(1);
    expect(api.bytesServed).toBeLessThan(big.length * 1.1);
  });

  it('a restore by copy (read a version, write it over the file) makes it current on the server', async () => {
    const { vfs, api, repo } = await setup();
    const names = await vfs.readdir('/.seafile-history/docs/report.txt');
    const old = await readWhole(vfs, `/.seafile-history/docs/report.txt/${names[0]}`);
    await writeWhole(vfs, '/docs/report.txt', old);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/docs/report.txt')!.toString()).toBe('version one');
    // the restore is a new version (the listing is asked afresh after the upload)
    expect(await vfs.readdir('/.seafile-history/docs/report.txt')).toHaveLength(4);
  });

  it('everything under the hidden folders is read-only: EROFS for each change', async () => {
    const { vfs, api, repo } = await setup();
    const v = `/.seafile-history/docs/report.txt/${(await vfs.readdir('/.seafile-history/docs/report.txt'))[0]}`;
    await expect(vfs.open(v, FC.O_WRONLY)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.open(v, FC.O_RDONLY | FC.O_TRUNC)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.create('/.seafile-history/docs/new.txt', 0o644)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.unlink(v)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.truncate(v, 0)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.utimens(v, Date.now())).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.chmod(v, 0o600)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.mkdir('/.seafile-history/x', 0o755)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.mkdir('/.seafile-trash', 0o755)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.rmdir('/.seafile-history/docs')).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.access(v, FC.W_OK)).rejects.toMatchObject({ code: 'EROFS' });
    await expect(vfs.rename('/docs/report.txt', '/.seafile-history/docs/r.txt')).rejects.toMatchObject({
      code: 'EROFS',
    });
    await expect(vfs.rename(v, '/docs/old.txt')).rejects.toMatchObject({ code: 'EROFS' });
    // nothing changed on the server
    expect(api.names(repo, '/docs')).toEqual(['report.txt']);
    expect(api.content(repo, '/docs/report.txt')!.toString()).toBe('v3');
  });

  it('a missing name in the history is ENOENT and a path below a version is ENOTDIR', async () => {
    const { vfs } = await setup();
    await expect(vfs.getattr('/.seafile-history/nope')).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(vfs.getattr('/.seafile-history/docs/report.txt/not a version')).rejects.toMatchObject({
      code: 'ENOENT',
    });
    const v = (await vfs.readdir('/.seafile-history/docs/report.txt'))[0];
    await expect(vfs.getattr(`/.seafile-history/docs/report.txt/${v}/x`)).rejects.toMatchObject({
      code: 'ENOTDIR',
    });
  });

  it('a real .seafile-history in the library wins over the virtual one', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/.seafile-history', 'a real file');
    const logs: string[] = [];
    const m = await makeVfs(api, { library: 'lib', log: (s) => logs.push(s) });
    cleanups.push(m.cleanup);
    expect((await m.vfs.readdir('/')).sort()).toEqual(['.seafile-history']);
    expect((await readWhole(m.vfs, '/.seafile-history')).toString()).toBe('a real file');
    await readWhole(m.vfs, '/.seafile-history');
    expect(logs.filter((l) => l.includes('real /.seafile-history'))).toHaveLength(1);
    // the trash is still virtual
    expect(await m.vfs.readdir('/.seafile-trash')).toEqual([]);
  });

  it('files and folders deleted through the mount show in the trash with their former path and deletion time', async () => {
    const { vfs, api, repo } = await setup();
    api.putDir(repo, '/docs/old');
    api.putFile(repo, '/docs/old/inner.txt', 'inner');
    await vfs.unlink('/docs/report.txt');
    await vfs.unlink('/docs/old/inner.txt');
    await vfs.rmdir('/docs/old');
    const names = await vfs.readdir('/.seafile-trash');
    expect(names).toHaveLength(3);
    expect(names.some((n) => n.endsWith(' docs%2Freport.txt'))).toBe(true);
    expect(names.some((n) => n.endsWith(' docs%2Fold%2Finner.txt'))).toBe(true);
    const dir = names.find((n) => n.endsWith(' docs%2Fold'))!;
    expect((await vfs.getattr(`/.seafile-trash/${dir}`)).mode & FC.S_IFDIR).toBeTruthy();
    // a trashed folder's content is not listed (the API gives none): refused, not shown empty
    await expect(vfs.readdir(`/.seafile-trash/${dir}`)).rejects.toMatchObject({ code: 'ENOTSUP' });
    const file = names.find((n) => n.endsWith(' docs%2Freport.txt'))!;
    expect((await readWhole(vfs, `/.seafile-trash/${file}`)).toString()).toBe('v3');
    expect((await vfs.getattr(`/.seafile-trash/${file}`)).size).toBe(2);
    await expect(vfs.unlink(`/.seafile-trash/${file}`)).rejects.toMatchObject({ code: 'EROFS' });
  });

  it('mv of a trashed file to its former path restores it on the server', async () => {
    const { vfs, api, repo } = await setup();
    await vfs.unlink('/docs/report.txt');
    const entry = (await vfs.readdir('/.seafile-trash'))[0];
    // the entry shows the modes it has once restored: mv keeps the inode, and the kernel its attributes
    const inTrash = (await vfs.getattr(`/.seafile-trash/${entry}`)).mode;
    await vfs.rename(`/.seafile-trash/${entry}`, '/docs/report.txt');
    expect(api.calls.revertFile).toBe(1);
    expect(api.content(repo, '/docs/report.txt')!.toString()).toBe('v3');
    expect(await vfs.readdir('/docs')).toEqual(['report.txt']);
    expect((await vfs.getattr('/docs/report.txt')).mode.toString(8)).toBe(inTrash.toString(8));
    // back at its path, it is no longer in the trash (as Seafile servers list it)
    expect(await vfs.readdir('/.seafile-trash')).toEqual([]);
  });

  it('mv of a trashed file elsewhere restores it, then moves it there', async () => {
    const { vfs, api, repo } = await setup();
    api.putDir(repo, '/elsewhere');
    await vfs.unlink('/docs/report.txt');
    const entry = (await vfs.readdir('/.seafile-trash'))[0];
    await vfs.rename(`/.seafile-trash/${entry}`, '/elsewhere/back.txt');
    expect(api.content(repo, '/elsewhere/back.txt')!.toString()).toBe('v3');
    expect(api.names(repo, '/docs')).toEqual([]);
    expect((await readWhole(vfs, '/elsewhere/back.txt')).toString()).toBe('v3');
  });

  it('a file whose folder was deleted after it comes back (the server recreates the folder) and moves elsewhere', async () => {
    const { vfs, api, repo } = await setup();
    await vfs.unlink('/docs/report.txt');
    await vfs.rmdir('/docs');
    expect(await vfs.readdir('/')).toEqual([]);
    const entry = (await vfs.readdir('/.seafile-trash')).find((n) => n.endsWith(' docs%2Freport.txt'))!;
    await vfs.rename(`/.seafile-trash/${entry}`, '/back.txt');
    expect(api.content(repo, '/back.txt')!.toString()).toBe('v3');
    expect(api.names(repo, '/docs')).toEqual([]);
    expect((await vfs.readdir('/')).sort()).toEqual(['back.txt', 'docs']);
  });

  it('mv of a trashed folder restores it with its content', async () => {
    const { vfs, api, repo } = await setup();
    api.putFile(repo, '/docs/inside.txt', 'inside');
    await vfs.unlink('/docs/report.txt');
    await api.deleteDir(repo, '/docs');
    const entry = (await vfs.readdir('/.seafile-trash')).find((n) => n.endsWith(' docs'))!;
    await vfs.rename(`/.seafile-trash/${entry}`, '/restored');
    expect(api.calls.revertDir).toBe(1);
    expect(api.names(repo, '/')).toEqual(['restored']);
    expect(api.content(repo, '/restored/inside.txt')!.toString()).toBe('inside');
    expect(await vfs.readdir('/restored')).toEqual(['inside.txt']);
  });

  it('when the former path is taken again, mv gets EXDEV (it copies instead) and nothing there is overwritten', async () => {
    const { vfs, api, repo } = await setup();
    await vfs.unlink('/docs/report.txt');
    // a folder of that name now (a file there would take the entry out of the trash)
    api.putDir(repo, '/docs/report.txt');
    api.putFile(repo, '/docs/report.txt/new.txt', 'a new file');
    const entry = (await vfs.readdir('/.seafile-trash'))[0];
    await expect(vfs.rename(`/.seafile-trash/${entry}`, '/docs/copy.txt')).rejects.toMatchObject({
      code: 'EXDEV',
    });
    expect(api.calls.revertFile ?? 0).toBe(0);
    expect(api.names(repo, '/docs')).toEqual(['report.txt']);
    expect(api.content(repo, '/docs/report.txt/new.txt')!.toString()).toBe('a new file');
  });

  it('a trashed folder whose name is now a file comes back beside it and moves to the destination', async () => {
    const { vfs, api, repo } = await setup();
    api.putFile(repo, '/docs/inside.txt', 'inside');
    await api.deleteDir(repo, '/docs');
    api.putFile(repo, '/docs', 'a file named docs');
    const entry = (await vfs.readdir('/.seafile-trash')).find((n) => n.endsWith(' docs'))!;
    await vfs.rename(`/.seafile-trash/${entry}`, '/old-docs');
    expect(api.calls.revertDir).toBe(1);
    expect(api.names(repo, '/')).toEqual(['docs', 'old-docs']);
    expect(api.content(repo, '/docs')!.toString()).toBe('a file named docs');
    expect(api.content(repo, '/old-docs/inside.txt')!.toString()).toBe('inside');
  });

  it('a trashed file restored into another library of the mount lands there and leaves its library', async () => {
    const { vfs, api, repo } = await setup({ allLibraries: true });
    const other = api.addLibrary('other');
    await vfs.unlink('/lib/docs/report.txt');
    const entry = (await vfs.readdir('/lib/.seafile-trash'))[0];
    await vfs.rename(`/lib/.seafile-trash/${entry}`, '/other/report.txt');
    expect(api.content(other, '/report.txt')!.toString()).toBe('v3');
    expect(api.names(repo, '/docs')).toEqual([]);
  });

  it('in a mount of every library, each library has its own hidden folders and a restore lands in it', async () => {
    const { vfs, api, repo } = await setup({ allLibraries: true });
    expect(await vfs.readdir('/lib')).toEqual(['docs']);
    expect(await vfs.readdir('/lib/.seafile-history/docs/report.txt')).toHaveLength(3);
    await vfs.unlink('/lib/docs/report.txt');
    const entry = (await vfs.readdir('/lib/.seafile-trash'))[0];
    await vfs.rename(`/lib/.seafile-trash/${entry}`, '/lib/back.txt');
    expect(api.content(repo, '/back.txt')!.toString()).toBe('v3');
    expect(api.names(repo, '/docs')).toEqual([]);
  });

  it('the trash is read page by page', async () => {
    const { vfs, api, repo } = await setup();
    for (let i = 0; i < 230; i++) api.putFile(repo, `/docs/f${i}.txt`, `file ${i}`);
    for (let i = 0; i < 230; i++) await api.deleteFile(repo, `/docs/f${i}.txt`);
    const names = await vfs.readdir('/.seafile-trash');
    expect(names).toHaveLength(230);
    expect(new Set(names).size).toBe(230);
    expect(api.calls.libraryTrash).toBe(3);
  });

  it('version listings are kept for the cache time, then asked again', async () => {
    const { vfs, api } = await setup();
    await vfs.readdir('/.seafile-history/docs/report.txt');
    await vfs.readdir('/.seafile-history/docs/report.txt');
    expect(api.calls.fileHistory).toBe(1);
    const m = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 0 });
    cleanups.push(m.cleanup);
    await m.vfs.readdir('/.seafile-history/docs/report.txt');
    await m.vfs.readdir('/.seafile-history/docs/report.txt');
    expect(api.calls.fileHistory).toBe(3);
  });
});

describe('seafs restore FILE --at TIME', () => {
  const cleanups = cleanupAfterEach();

  async function setup() {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    for (const [i, text] of ['one', 'two!', 'three'].entries()) {
      api.clockSec = T0 + i * 3600;
      api.putFile(repo, '/f.txt', text);
    }
    api.clockSec = null;
    const m = await makeVfs(api, { library: 'lib' });
    cleanups.push(m.cleanup);
    return { api, repo, ...m };
  }

  it('the version current at the time becomes current on the server by a revert', async () => {
    const { vfs, api, repo } = await setup();
    // half an hour after the second version: the second one
    const r = await vfs.restoreVersion('/f.txt', (T0 + 3600 + 1800) * 1000);
    expect(r).toEqual({ name: `${stamp((T0 + 3600) * 1000)} f.txt`, size: 4, current: false });
    expect(api.calls.revertFile).toBe(1);
    expect(api.calls.upload ?? 0).toBe(0);
    expect(api.content(repo, '/f.txt')!.toString()).toBe('two!');
    expect((await readWhole(vfs, '/f.txt')).toString()).toBe('two!');
  });

  it('a time at a version exactly picks it; the current version changes nothing', async () => {
    const { vfs, api } = await setup();
    expect((await vfs.restoreVersion('/f.txt', T0 * 1000)).size).toBe(3);
    const again = await vfs.restoreVersion('/f.txt', Date.now());
    expect(again.current).toBe(true);
    expect(api.calls.revertFile).toBe(1);
  });

  it('a time before the first version is ENOENT naming the oldest, and a file with local changes is EAGAIN', async () => {
    const { vfs, api, repo } = await setup();
    await expect(vfs.restoreVersion('/f.txt', (T0 - 60) * 1000)).rejects.toThrow(
      `the oldest version is "${stamp(T0 * 1000)} f.txt"`,
    );
    api.uploadGate = () => new Promise(() => {});
    await writeWhole(vfs, '/f.txt', 'local');
    await expect(vfs.restoreVersion('/f.txt', T0 * 1000)).rejects.toMatchObject({ code: 'EAGAIN' });
    expect(api.calls.revertFile ?? 0).toBe(0);
    expect(api.content(repo, '/f.txt')!.toString()).toBe('three');
  });

  it('reads the time as GNU date does, and a version name of .seafile-history', () => {
    expect(parseTime('@1700000000')).toBe(1700000000 * 1000);
    expect(parseTime('2026-11-20 10.15.00')).toBe(new Date(2026, 10, 20, 10, 15, 0).getTime());
    expect(parseTime('2026-11-20 10.15.00-2')).toBe(new Date(2026, 10, 20, 10, 15, 0).getTime());
    expect(parseTime('2026-11-20 10:15')).toBe(new Date(2026, 10, 20, 10, 15, 0).getTime());
    expect(parseTime('not a time at all')).toBeNull();
  });
});

describe('names of versions and trash entries', () => {
  it('two entries of the same second get distinct names that sort after each other', () => {
    const ms = Date.UTC(2026, 10, 23, 10, 15, 0);
    const names = timeNames([
      { ms, label: 'a.txt' },
      { ms: ms + 400, label: 'a.txt' },
      { ms: ms + 1000, label: 'a.txt' },
    ]);
    expect(new Set(names).size).toBe(3);
    expect([...names].sort()).toEqual(names);
    expect(names[1]).toBe(`${stamp(ms)}-2 a.txt`);
  });

  it('a name longer than 255 bytes keeps its time and the end of the path', () => {
    const label = 'd%2F'.repeat(100) + 'end.txt';
    const [n] = timeNames([{ ms: 0, label }]);
    expect(Buffer.byteLength(n)).toBeLessThanOrEqual(255);
    expect(n.startsWith(stamp(0))).toBe(true);
    expect(n.endsWith('end.txt')).toBe(true);
  });
});
