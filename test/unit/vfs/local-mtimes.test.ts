// The times this machine keeps for a server that ignores last_modify
// (seafile-server < 12.0.4), src/vfs/mtimes/kept-mtimes.ts: shown while the server
// lists the same file id and time, dropped when the file changed elsewhere,
// carried by renames and moves, dropped by deletes, kept across instances (a
// remount) in a file of mode 0600 written in batches; the mode learnt from the
// first upload of a time far from its moment. Then the same through a Vfs over
// a FakeApi that ignores last_modify, remount included.
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DirEntry } from '../../../src/client/types.js';
import { ignoresLastModify, LocalMtimes } from '../../../src/vfs/mtimes/kept-mtimes.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

const A = '0000000a-0000-4000-8000-000000000000';
const B = '0000000b-0000-4000-8000-000000000000';
const ID1 = '1'.repeat(40);
const ID2 = '2'.repeat(40);
const T1 = Date.UTC(2020, 0, 1); // ms, a time set here
const T2 = Date.UTC(2021, 5, 6, 7, 8, 9);

/** a listing's entries, as the server gives them */
function listing(files: [name: string, id: string, mtime: number][]): Map<string, DirEntry> {
  return new Map(files.map(([name, id, mtime]) => [name, { type: 'file', name, id, mtime, size: 1 }]));
}

/** mtime shown for `name` after `times` adjusted a listing of `dir` fetched now */
function shown(times: LocalMtimes, repo: string, dir: string, files: [string, string, number][], name: string) {
  const l = listing(files);
  times.adjust(repo, dir, l, Date.now() + 1);
  return l.get(name)?.mtime;
}

describe('LocalMtimes (the store)', () => {
  const cleanups = cleanupAfterEach();
  const logs: string[] = [];

  async function store(dir?: string) {
    const d = dir ?? (await mkdtemp(join(tmpdir(), 'seafs-mtimes-')));
    if (!dir) cleanups.push(() => rm(d, { recursive: true, force: true }));
    const t = new LocalMtimes(join(d, 'mtimes'), { log: (m) => logs.push(m), durable: false, delayMs: 5 });
    await t.init();
    cleanups.push(async () => t.close());
    return { t, dir: d, files: join(d, 'mtimes') };
  }

  const upload = Math.floor(Date.now() / 1000); // the server's time for our uploads (it ignores ours)

  it('shows the time set here while the server lists the same file id and time; a change elsewhere wins', async () => {
    const { t } = await store();
    t.uploaded(A, '/d/f.txt', ID1, { mtimeMs: T1, sent: true });
    expect(shown(t, A, '/d', [['f.txt', ID1, upload]], 'f.txt')).toBe(T1 / 1000);
    expect(shown(t, A, '/d', [['f.txt', ID1, upload]], 'f.txt')).toBe(T1 / 1000);
    // someone uploaded a new version: its id and time are the server's, and the entry goes
    expect(shown(t, A, '/d', [['f.txt', ID2, upload + 50]], 'f.txt')).toBe(upload + 50);
    expect(shown(t, A, '/d', [['f.txt', ID1, upload]], 'f.txt')).toBe(upload);
    expect(t.status().files).toBe(0);
  });

  it('the same content uploaded again elsewhere (same id, another server time) wins too; a file gone elsewhere drops', async () => {
    const { t } = await store();
    t.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    t.uploaded(A, '/g', ID2, { mtimeMs: T2, sent: true });
    expect(
      shown(
        t,
        A,
        '/',
        [
          ['f', ID1, upload],
          ['g', ID2, upload],
        ],
        'f',
      ),
    ).toBe(T1 / 1000);
    expect(
      shown(
        t,
        A,
        '/',
        [
          ['f', ID1, upload + 7],
          ['g', ID2, upload],
        ],
        'f',
      ),
    ).toBe(upload + 7);
    expect(t.status().files).toBe(1);
    // g deleted (or moved away) by someone else
    expect(shown(t, A, '/', [], 'g')).toBeUndefined();
    expect(t.status().files).toBe(0);
  });

  it('a listing begun before the upload was recorded shows the time but judges nothing', async () => {
    const { t } = await store();
    const before = Date.now() - 1000;
    t.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    const old = listing([]);
    t.adjust(A, '/', old, before); // taken before the file landed: not a delete
    const racing = listing([['f', ID1, upload]]);
    t.adjust(A, '/', racing, before);
    expect(racing.get('f')!.mtime).toBe(T1 / 1000);
    expect(t.status().files).toBe(1);
    expect(shown(t, A, '/', [['f', ID1, upload]], 'f')).toBe(T1 / 1000);
  });

  it('a file uploaded again without a time of its own, or with the very time the server shows, keeps no entry', async () => {
    const { t } = await store();
    t.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    t.uploaded(A, '/f', ID2, null);
    expect(t.status().files).toBe(0);
    t.uploaded(A, '/g', ID1, { mtimeMs: upload * 1000, sent: true });
    expect(shown(t, A, '/', [['g', ID1, upload]], 'g')).toBe(upload);
    expect(t.status().files).toBe(0);
  });

  it('renames and moves carry entries (files, folders, into another library); deletes drop them', async () => {
    const { t } = await store();
    t.uploaded(A, '/a.txt', ID1, { mtimeMs: T1, sent: true });
    t.uploaded(A, '/dir/sub/b.txt', ID2, { mtimeMs: T2, sent: true });
    t.uploaded(A, '/dir/c.txt', ID1, { mtimeMs: T2, sent: true });
    t.moved(A, '/a.txt', A, '/renamed.txt');
    expect(shown(t, A, '/', [['renamed.txt', ID1, upload]], 'renamed.txt')).toBe(T1 / 1000);
    t.moved(A, '/dir', B, '/moved');
    expect(shown(t, B, '/moved/sub', [['b.txt', ID2, upload]], 'b.txt')).toBe(T2 / 1000);
    expect(shown(t, B, '/moved', [['c.txt', ID1, upload]], 'c.txt')).toBe(T2 / 1000);
    // nothing stays at the old places
    expect(shown(t, A, '/dir/sub', [['b.txt', ID2, upload]], 'b.txt')).toBe(upload);
    expect(t.status().files).toBe(3);
    t.removed(A, '/renamed.txt');
    expect(shown(t, A, '/', [['renamed.txt', ID1, upload]], 'renamed.txt')).toBe(upload);
    t.removed(B, '/moved');
    expect(shown(t, B, '/moved/sub', [['b.txt', ID2, upload]], 'b.txt')).toBe(upload);
    expect(t.status().files).toBe(0);
  });

  it('persists across instances in one 0600 file per library, written in batches, crash-safe', async () => {
    const first = await store();
    for (let i = 0; i < 2000; i++) first.t.uploaded(A, `/untar/f${i}`, ID1, { mtimeMs: T1 + i * 1000, sent: true });
    first.t.uploaded(B, '/x', ID2, { mtimeMs: T2, sent: true });
    // nothing written per file: one write per library once the batch is due
    expect(existsSync(first.files) ? readdirSync(first.files).filter((n) => n.endsWith('.json')) : []).toEqual([]);
    await first.t.flush();
    const names = readdirSync(first.files).sort();
    expect(names).toEqual([`${A}.json`, `${B}.json`]);
    for (const n of names) expect(statSync(join(first.files, n)).mode & 0o777).toBe(0o600);
    first.t.moved(A, '/untar/f0', A, '/first');
    first.t.removed(A, '/untar/f1');
    first.t.close(); // the last changes, written at once

    const second = await store(first.dir);
    expect(second.t.status().files).toBe(2000);
    expect(shown(second.t, A, '/', [['first', ID1, upload]], 'first')).toBe(T1 / 1000);
    const untar = listing(Array.from({ length: 2000 }, (_, i) => [`f${i}`, ID1, upload] as [string, string, number]));
    untar.delete('f0');
    second.t.adjust(A, '/untar', untar, Date.now() + 1);
    expect(untar.get('f1')!.mtime).toBe(upload);
    expect(untar.get('f2')!.mtime).toBe(T1 / 1000 + 2);
    expect(untar.get('f1999')!.mtime).toBe(T1 / 1000 + 1999);
    expect(shown(second.t, B, '/', [['x', ID2, upload]], 'x')).toBe(T2 / 1000);
    // a change elsewhere seen by the second instance is saved too
    expect(shown(second.t, B, '/', [['x', ID1, upload]], 'x')).toBe(upload);
    second.t.close();
    const third = await store(first.dir);
    expect(third.t.status().files).toBe(1999);
    expect(readdirSync(first.files).sort()).toEqual([`${A}.json`, 'server.json']);
  });

  it('two instances sharing the cache dir keep both their entries', async () => {
    const one = await store();
    const two = await store(one.dir);
    one.t.uploaded(A, '/one', ID1, { mtimeMs: T1, sent: true });
    await one.t.flush();
    two.t.uploaded(A, '/two', ID2, { mtimeMs: T2, sent: true });
    await two.t.flush();
    one.t.uploaded(A, '/three', ID2, { mtimeMs: T2, sent: true });
    one.t.close();
    const three = await store(one.dir);
    expect(three.t.status().files).toBe(3);
  });

  it('a file it cannot read is left aside (logged), and the temp file of a dead process goes', async () => {
    const { t, dir, files } = await store();
    t.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    t.close();
    writeFileSync(join(files, `${B}.json`), '{"repo": "torn');
    writeFileSync(join(files, `${A}.json.999999999.1.tmp`), 'half');
    chmodSync(files, 0o700);
    logs.length = 0;
    const again = await store(dir);
    expect(again.t.status().files).toBe(1);
    expect(logs.join('\n')).toMatch(/cannot be read/);
    expect(existsSync(join(files, `${A}.json.999999999.1.tmp`))).toBe(false);
  });

  it("learns the server's behaviour from the first upload of a time far from its moment, once", async () => {
    const ig = await store();
    const ignoring = ig.t;
    expect(ignoring.status().mode).toBe('unknown');
    ignoring.seedVersion('10.0.1');
    expect(ignoring.status()).toMatchObject({ mode: 'local', basis: 'version', serverVersion: '10.0.1' });
    // a time close to the upload's moment tells nothing
    ignoring.uploaded(A, '/near', ID2, { mtimeMs: Date.now() - 2000, sent: true });
    shown(ignoring, A, '/', [['near', ID2, upload]], 'near');
    expect(ignoring.status().basis).toBe('version');
    ignoring.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    shown(ignoring, A, '/', [['f', ID1, upload]], 'f');
    expect(ignoring.status()).toMatchObject({ mode: 'local', basis: 'checked' });
    // a later mount over the same cache dir starts from that finding while the server's version is the same
    const later = (await store(ig.dir)).t;
    expect(later.status()).toMatchObject({ mode: 'local', basis: 'earlier', serverVersion: '10.0.1' });
    later.seedVersion('10.0.1');
    expect(later.status().basis).toBe('earlier');
    later.seedVersion('12.0.4'); // upgraded: the guess goes by the new version until an upload checks it
    expect(later.status()).toMatchObject({ mode: 'server', basis: 'version', serverVersion: '12.0.4' });

    const keeping = (await store()).t;
    keeping.seedVersion('10.0.1'); // the version alone is not trusted
    // a time that did not go as last_modify tells nothing either
    keeping.uploaded(A, '/quoted"name', ID2, { mtimeMs: T2, sent: false });
    shown(keeping, A, '/', [['quoted"name', ID2, upload]], 'quoted"name');
    expect(keeping.status().basis).toBe('version');
    keeping.uploaded(A, '/f', ID1, { mtimeMs: T1, sent: true });
    const both: [string, string, number][] = [
      ['quoted"name', ID2, upload],
      ['f', ID1, T1 / 1000],
    ];
    expect(shown(keeping, A, '/', both, 'f')).toBe(T1 / 1000);
    expect(keeping.status()).toMatchObject({ mode: 'server', basis: 'checked' });
    // from then on nothing new is kept here (the entry of the name whose time did not go stays)
    keeping.uploaded(A, '/g', ID1, { mtimeMs: T2, sent: true });
    expect(keeping.status().files).toBe(1);
  });

  it('reads versions: below 12.0.4 last_modify is ignored', () => {
    expect(ignoresLastModify('10.0.1')).toBe(true);
    expect(ignoresLastModify('11.0.12')).toBe(true);
    expect(ignoresLastModify('12.0.3')).toBe(true);
    expect(ignoresLastModify('12.0.4')).toBe(false);
    expect(ignoresLastModify('12.1.0')).toBe(false);
    expect(ignoresLastModify('13.0.0-pro')).toBe(false);
    expect(ignoresLastModify('unknown')).toBeUndefined();
  });
});

describe('times set through the mount on a server that ignores last_modify', () => {
  const cleanups = cleanupAfterEach();

  async function setup() {
    const api = new FakeApi().offerUploadBatch();
    api.ignoreLastModify = true;
    api.serverVersion = '10.0.1';
    const repo = api.addLibrary('lib');
    const cacheDir = await mkdtemp(join(tmpdir(), 'seafs-unit-'));
    cleanups.push(() => rm(cacheDir, { recursive: true, force: true }));
    const mount = async () => {
      const m = await makeVfs(api, {
        library: 'lib',
        cacheDir,
        dirCacheTimeMs: 0,
        writeBack: { retryBaseMs: 10, newFileDelayMs: 0 },
      });
      let closed = false;
      const close = () => {
        if (!closed) m.vfs.close();
        closed = true;
      };
      cleanups.push(async () => close());
      return { vfs: m.vfs, close };
    };
    const remote = (p: string) => api.nodeAt(repo, p) as { mtime: number; id: string } | undefined;
    return { api, repo, mount, remote };
  }

  const mtimeOf = async (vfs: { getattr(p: string): Promise<{ mtime: Date }> }, p: string) =>
    (await vfs.getattr(p)).mtime.getTime();

  it('shows the times set after upload and after a remount; a second utimens sends nothing; a change elsewhere wins', async () => {
    const { api, repo, mount, remote } = await setup();
    const first = await mount();
    await first.vfs.mkdir('/tree', 0o755);
    await writeWhole(first.vfs, '/tree/a.txt', 'alpha');
    await first.vfs.utimens('/tree/a.txt', T1);
    await writeWhole(first.vfs, '/tree/.b.txt.Xy12', 'beta'); // rsync's temp name, renamed once its time is set
    await first.vfs.utimens('/tree/.b.txt.Xy12', T2);
    expect(await first.vfs.drain()).toEqual([]);
    await first.vfs.rename('/tree/.b.txt.Xy12', '/tree/b.txt');
    expect(await first.vfs.drain()).toEqual([]);
    // the server ignored the times it was sent
    expect(remote('/tree/a.txt')!.mtime).toBeGreaterThan(T1 / 1000);
    expect(remote('/tree/b.txt')!.mtime).toBeGreaterThan(T2 / 1000);
    // listed afresh (dir cache time 0), the mount shows the times set here
    expect(await mtimeOf(first.vfs, '/tree/a.txt')).toBe(T1);
    expect(await mtimeOf(first.vfs, '/tree/b.txt')).toBe(T2);
    expect(first.vfs.status().mtimes).toMatchObject({ mode: 'local', basis: 'checked', files: 2 });
    first.close();

    const second = await mount();
    expect(await mtimeOf(second.vfs, '/tree/a.txt')).toBe(T1);
    expect(await mtimeOf(second.vfs, '/tree/b.txt')).toBe(T2);
    // the same time again (a second rsync -a): nothing is uploaded
    const uploads = (api.calls.update ?? 0) + (api.calls.uploadMany ?? 0);
    await second.vfs.utimens('/tree/a.txt', T1);
    expect(await second.vfs.drain()).toEqual([]);
    expect((api.calls.update ?? 0) + (api.calls.uploadMany ?? 0)).toBe(uploads);
    // a new version uploaded elsewhere shows its own (the server's) time
    api.putFile(repo, '/tree/a.txt', 'changed elsewhere');
    expect(await mtimeOf(second.vfs, '/tree/a.txt')).toBe(remote('/tree/a.txt')!.mtime * 1000);
    // a delete through the mount drops the entry
    await second.vfs.unlink('/tree/b.txt');
    expect(second.vfs.status().mtimes!.files).toBe(0);
  });

  it("a file written here shows the second it was written, not its later upload's, after a remount too", async () => {
    const { api, mount, remote } = await setup();
    api.uploadGate = async () => void (await sleep(1100)); // the upload lands in a later second than the write
    const first = await mount();
    await writeWhole(first.vfs, '/obj.o', 'built');
    const written = Math.floor((await mtimeOf(first.vfs, '/obj.o')) / 1000) * 1000;
    expect(await first.vfs.drain()).toEqual([]);
    expect(remote('/obj.o')!.mtime * 1000).toBeGreaterThan(written);
    expect(await mtimeOf(first.vfs, '/obj.o')).toBe(written);
    first.close();
    const second = await mount();
    expect(await mtimeOf(second.vfs, '/obj.o')).toBe(written);
  });

  it('a file given its time by a mount that died before the upload keeps it: the next mount uploads and keeps it', async () => {
    const { api, mount, remote } = await setup();
    api.uploadGate = () => new Promise<void>(() => {}); // the first mount never gets an upload through
    const first = await mount();
    await writeWhole(first.vfs, '/set.txt', 'set before the crash');
    await first.vfs.utimens('/set.txt', T1);
    await writeWhole(first.vfs, '/plain.txt', 'no time of its own');
    const plainWritten = Math.floor((await mtimeOf(first.vfs, '/plain.txt')) / 1000) * 1000;
    first.close();
    api.uploadGate = null;
    const second = await mount();
    expect(await second.vfs.drain()).toEqual([]);
    expect(remote('/set.txt')!.mtime).toBeGreaterThan(T1 / 1000);
    expect(await mtimeOf(second.vfs, '/set.txt')).toBe(T1);
    // a file without a time of its own shows the second it was written, whenever it was uploaded
    expect(await mtimeOf(second.vfs, '/plain.txt')).toBe(plainWritten);
  });

  it('a rename of a folder through the mount carries its files’ times', async () => {
    const { mount } = await setup();
    const m = await mount();
    await m.vfs.mkdir('/d', 0o755);
    await writeWhole(m.vfs, '/d/f.txt', 'x');
    await m.vfs.utimens('/d/f.txt', T1);
    expect(await m.vfs.drain()).toEqual([]);
    await m.vfs.rename('/d', '/e');
    expect(await mtimeOf(m.vfs, '/e/f.txt')).toBe(T1);
  });
});
