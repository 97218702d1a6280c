// Names through the FUSE operations, against a fake server that stores them as
// real ones do: NFC-normalised, upload names cut at the last backslash, and
// upload names over 249 bytes refused with 500 (the C fileserver).
import { afterEach, describe, expect, it } from 'vitest';
import { constants as OS } from 'node:os';
import { makeOps, type Cb } from '../../../src/fuse/ops.js';
import type { Vfs } from '../../../src/vfs/vfs.js';
import { FakeApi, makeVfs } from '../../helpers/fake-api.js';

const call = (op: Cb, ...args: unknown[]) => new Promise<unknown[]>((r) => op(...args, (...res: unknown[]) => r(res)));
const O_WRONLY = 1;

const NFD = 'e\u0301'; // "e" + combining acute: how macOS tools spell "é"
const NFC = '\u00e9';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function setup(batch = true) {
  const api = new FakeApi();
  if (batch) api.offerUploadBatch();
  const repo = api.addLibrary('lib');
  const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
  cleanups.push(cleanup);
  const logged: string[] = [];
  const ops = makeOps(vfs as Vfs, { log: (m) => logged.push(m) });
  /** create, write, flush and release through the operations, as cp does */
  const write = async (p: string, data: string) => {
    const [code, fd] = await call(ops.create, p, 0o644);
    if (code !== 0) return code as number;
    const b = Buffer.from(data);
    expect(await call(ops.write, p, fd, b, b.length, 0)).toEqual([b.length]);
    expect(await call(ops.flush, p, fd)).toEqual([0]);
    expect(await call(ops.release, p, fd)).toEqual([0]);
    return 0;
  };
  return { api, repo, vfs, ops, logged, write };
}

describe('names in NFD (as macOS tools write them)', () => {
  for (const batch of [true, false]) {
    it(`land once, under the NFC name the server lists, and both spellings reach them (${batch ? 'batch' : 'single'} uploads)`, async () => {
      const { api, repo, vfs, ops, logged, write } = await setup(batch);
      expect(await call(ops.mkdir, `/d${NFD}`, 0o755)).toEqual([0]);
      expect(await write(`/${NFD}.txt`, 'one')).toBe(0);
      expect(await write(`/d${NFD}/f${NFD}`, 'two')).toBe(0);
      expect(await vfs.drain(undefined, 10_000)).toEqual([]);
      expect(api.names(repo, '/')).toEqual([`d${NFC}`, `${NFC}.txt`]);
      expect(api.names(repo, `/d${NFC}`)).toEqual([`f${NFC}`]);
      expect(api.content(repo, `/${NFC}.txt`)?.toString()).toBe('one');
      expect(api.content(repo, `/d${NFC}/f${NFC}`)?.toString()).toBe('two');
      // the listing shows each once, in NFC; stat finds them by either spelling
      expect((await call(ops.readdir, '/'))[1]).toEqual(expect.arrayContaining([`d${NFC}`, `${NFC}.txt`]));
      expect(
        ((await call(ops.readdir, '/'))[1] as string[]).filter((n) => n.normalize('NFC') === `${NFC}.txt`),
      ).toHaveLength(1);
      for (const p of [`/${NFD}.txt`, `/${NFC}.txt`, `/d${NFD}/f${NFD}`, `/d${NFC}/f${NFC}`]) {
        const [code, st] = await call(ops.getattr, p);
        expect(code, p).toBe(0);
        expect((st as { size: number }).size, p).toBe(3);
      }
      // nothing was "landed as" another name or sent twice
      expect(logged.filter((l) => /landed as|conflict/.test(l))).toEqual([]);
      const sent = (api.calls.upload ?? 0) + (api.calls.uploadMany ?? 0);
      expect(sent).toBe(batch ? 2 : 2);
      // the second spelling is the same file: writing it replaces, it does not add one
      expect(await call(ops.mkdir, `/d${NFC}`, 0o755)).toEqual([-OS.errno.EEXIST]);
      const [code, fd] = await call(ops.open, `/${NFC}.txt`, O_WRONLY);
      expect(code).toBe(0);
      expect(await call(ops.release, `/${NFC}.txt`, fd)).toEqual([0]);
      expect(await vfs.drain(undefined, 10_000)).toEqual([]);
      expect(api.names(repo, '/')).toEqual([`d${NFC}`, `${NFC}.txt`]);
      // rename and unlink by the NFD spelling act on the NFC entry
      expect(await call(ops.rename, `/${NFD}.txt`, `/r${NFD}.txt`)).toEqual([0]);
      expect(api.names(repo, '/')).toEqual([`d${NFC}`, `r${NFC}.txt`]);
      expect(await call(ops.unlink, `/r${NFD}.txt`)).toEqual([0]);
      expect(api.names(repo, '/')).toEqual([`d${NFC}`]);
    });
  }

  it('a library named in NFD is reached by either spelling when every library is mounted', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary(`lib${NFD}`);
    api.putFile(repo, '/f.txt', 'x');
    const { vfs, cleanup } = await makeVfs(api, {});
    cleanups.push(cleanup);
    const ops = makeOps(vfs as Vfs);
    expect((await call(ops.readdir, '/'))[1]).toContain(`lib${NFC}`);
    expect((await call(ops.getattr, `/lib${NFD}/f.txt`))[0]).toBe(0);
    expect((await call(ops.getattr, `/lib${NFC}/f.txt`))[0]).toBe(0);
  });
});

describe('names an upload would change', () => {
  it('a file named with a backslash is stored as it is (an upload would keep only what follows the backslash)', async () => {
    const { api, repo, vfs, ops, write } = await setup();
    expect(await write('/a\\b.txt', 'back')).toBe(0);
    expect(await vfs.drain(undefined, 10_000)).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['a\\b.txt']);
    expect(api.content(repo, '/a\\b.txt')?.toString()).toBe('back');
    expect(await call(ops.rename, '/a\\b.txt', '/e\\f.txt')).toEqual([0]);
    expect(api.names(repo, '/')).toEqual(['e\\f.txt']);
  });

  it('no folder gets a backslash name, and nothing changes inside one the server holds (the C server would change a/b)', async () => {
    const { api, repo, vfs, ops, logged, write } = await setup();
    api.putDir(repo, '/s\\f');
    api.putFile(repo, '/s\\f/in.txt', 'inside');
    api.putDir(repo, '/plain');
    const EINVAL = -OS.errno.EINVAL;
    expect(await call(ops.mkdir, '/x\\y', 0o755)).toEqual([EINVAL]);
    expect(await call(ops.rename, '/plain', '/pl\\ain')).toEqual([EINVAL]);
    expect(await write('/s\\f/new.txt', 'x')).toBe(EINVAL);
    expect(await call(ops.mkdir, '/s\\f/sub', 0o755)).toEqual([EINVAL]);
    expect(await call(ops.unlink, '/s\\f/in.txt')).toEqual([EINVAL]);
    expect(await call(ops.rename, '/s\\f/in.txt', '/out.txt')).toEqual([EINVAL]);
    expect((await call(ops.open, '/s\\f/in.txt', O_WRONLY))[0]).toBe(EINVAL);
    expect(await call(ops.truncate, '/s\\f/in.txt', 0)).toEqual([EINVAL]);
    // reading is fine
    const [code, fd] = await call(ops.open, '/s\\f/in.txt', 0);
    expect(code).toBe(0);
    const buf = Buffer.alloc(16);
    expect(await call(ops.read, '/s\\f/in.txt', fd, buf, 16, 0)).toEqual([6]);
    expect(await call(ops.release, '/s\\f/in.txt', fd)).toEqual([0]);
    expect(await vfs.drain(undefined, 10_000)).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['plain', 's\\f']);
    expect(api.names(repo, '/s\\f')).toEqual(['in.txt']);
    expect(api.content(repo, '/s\\f/in.txt')?.toString()).toBe('inside');
    expect(logged).toHaveLength(8);
    expect(logged.every((l) => /EINVAL .*backslash|EINVAL .*would make it in \/s\/f/.test(l))).toBe(true);
  });

  it('a name of 250 to 255 bytes is stored under its name (the C fileserver answers 500 to its upload)', async () => {
    const { api, repo, vfs, write } = await setup();
    const long = 'L'.repeat(251) + '.txt';
    expect(await write(`/${long}`, 'long')).toBe(0);
    expect(await vfs.drain(undefined, 10_000)).toEqual([]);
    expect(api.names(repo, '/')).toEqual([long]);
    expect(api.content(repo, `/${long}`)?.toString()).toBe('long');
  });
});

describe('names the mount refuses', () => {
  it('answers EINVAL or ENAMETOOLONG with one log line each, and sends nothing', async () => {
    const { api, repo, vfs, ops, logged, write } = await setup();
    // bytes that are not UTF-8 reach the mount as U+FFFD: the real name is lost
    expect(await write('/bad\ufffd.txt', 'x')).toBe(-OS.errno.EINVAL);
    expect(await call(ops.mkdir, '/bad\ufffd', 0o755)).toEqual([-OS.errno.EINVAL]);
    expect(await write('/' + 'n'.repeat(256), 'x')).toBe(-OS.errno.ENAMETOOLONG);
    expect(await write('/ok.txt', 'ok')).toBe(0);
    expect(await call(ops.rename, '/ok.txt', '/..')).toEqual([-OS.errno.EINVAL]);
    expect(await vfs.drain(undefined, 10_000)).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['ok.txt']);
    expect(logged).toHaveLength(4);
    expect(logged[0]).toMatch(/^create \/bad\ufffd\.txt: EINVAL .*not valid UTF-8/);
    expect(logged[1]).toMatch(/^mkdir .*EINVAL/);
    expect(logged[2]).toMatch(/^create .*ENAMETOOLONG/);
    expect(logged[3]).toMatch(/^rename \/ok\.txt: EINVAL/);
  });
});
