// Modification times through the mount (needs the fuse-native utimens fix of
// scripts/fix-fuse-native): touch -d on a new and on an existing file, cp -p,
// tar x of an archive with old times, and rsync -a twice (the second run
// sends nothing). Each time is read back through the API's listing, each
// file's content checked there too.
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/errors.js';
import { expectRemoteFile, remoteEntries } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, sleep } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Times']);

/** the mtime (seconds) of `name` in `dir`'s listing on the server, polled until it equals `want` or 30 s pass */
/** the server's listing of `dir`; none yet while the folder's creation (made in the background after mkdir) is on its way */
async function entriesOnceThere(dir: string) {
  try {
    return await remoteEntries(ctx.api, ctx.repos.Times, dir);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return [];
    throw e;
  }
}

async function remoteMtime(dir: string, name: string, want: number): Promise<number | undefined> {
  let got: number | undefined;
  for (const end = Date.now() + 30_000; Date.now() < end;) {
    got = (await entriesOnceThere(dir)).find((e) => e.name === name)?.mtime;
    if (got === want) break;
    await sleep(250);
  }
  return got;
}

/** polls the server's mtime (seconds) of `name` in `dir` until `ok` holds or 30 s pass */
async function remoteMtimeWhere(dir: string, name: string, ok: (s: number) => boolean): Promise<number | undefined> {
  let got: number | undefined;
  for (const end = Date.now() + 30_000; Date.now() < end;) {
    got = (await entriesOnceThere(dir)).find((e) => e.name === name)?.mtime;
    if (got !== undefined && ok(got)) break;
    await sleep(250);
  }
  return got;
}

const T1 = Date.UTC(2001, 1, 3, 4, 5, 6) / 1000;
const T2 = Date.UTC(2010, 6, 7, 8, 9, 10) / 1000;

describe('modification times', () => {
  it('touch -d, cp -p, tar x and rsync -a keep their times on the server; a second rsync -a sends nothing', async () => {
    const m = await mountLibrary(ctx.server, { library: 'Times', attrTimeout: 0 });
    const mnt = m.mnt;
    const stamp = async (p: string) => Number((await run('stat', ['-c', '%Y', p])).out.trim());

    // touch -d: a new file, then an existing (clean) one, which is sent again with the new time
    await sh(`echo new > ${q(mnt)}/touched.txt && touch -d @${T1} ${q(mnt)}/touched.txt`);
    expect(await stamp(`${mnt}/touched.txt`)).toBe(T1);
    expect(await remoteMtime('/', 'touched.txt', T1)).toBe(T1);
    await sh(`touch -d @${T2} ${q(mnt)}/touched.txt`);
    expect(await stamp(`${mnt}/touched.txt`)).toBe(T2);
    expect(await remoteMtime('/', 'touched.txt', T2)).toBe(T2);
    await expectRemoteFile(ctx.api, ctx.repos.Times, '/touched.txt', Buffer.from('new\n'));

    // cp -p
    const f = path.join(ctx.src, 'kept.bin');
    writeFileSync(f, 'content with an old time\n');
    utimesSync(f, T1, T1);
    await sh(`cp -p ${q(f)} ${q(mnt)}/kept.bin`);
    expect(await stamp(`${mnt}/kept.bin`)).toBe(T1);
    expect(await remoteMtime('/', 'kept.bin', T1)).toBe(T1);
    await expectRemoteFile(ctx.api, ctx.repos.Times, '/kept.bin', f);

    // tar x of an archive whose files have old times
    const tree = path.join(ctx.src, 'tree');
    mkdirSync(path.join(tree, 'sub'), { recursive: true });
    for (const [i, n] of ['a.txt', 'b.txt', 'sub/c.txt'].entries()) {
      writeFileSync(path.join(tree, n), `file ${n}\n`);
      utimesSync(path.join(tree, n), T1 + i, T1 + i);
    }
    await sh(
      `tar -cf ${q(ctx.src)}/tree.tar -C ${q(tree)} . && mkdir ${q(mnt)}/untarred && tar -xf ${q(ctx.src)}/tree.tar -C ${q(mnt)}/untarred`,
    );
    for (const [i, n] of ['a.txt', 'b.txt', 'sub/c.txt'].entries()) {
      const dir = path.posix.dirname(`/untarred/${n}`);
      expect(await remoteMtime(dir, path.posix.basename(n), T1 + i), n).toBe(T1 + i);
      await expectRemoteFile(ctx.api, ctx.repos.Times, `/untarred/${n}`, path.join(tree, n));
    }

    // rsync -a twice: the second run finds every file as it is and sends nothing
    await run('rsync', ['-a', `${tree}/`, `${mnt}/synced/`]);
    for (const [i, n] of ['a.txt', 'b.txt', 'sub/c.txt'].entries()) {
      expect(await remoteMtime(path.posix.dirname(`/synced/${n}`), path.posix.basename(n), T1 + i), n).toBe(T1 + i);
    }
    const second = await run('rsync', ['-ai', `${tree}/`, `${mnt}/synced/`]);
    expect(second.out.split('\n').filter((l) => /^[<>ch.]f/.test(l))).toEqual([]);

    expect((await m.unmount()).code).toBe(0);
    // after the mount is gone, the server still holds every time
    expect(await remoteMtime('/', 'touched.txt', T2)).toBe(T2);
    expect(await remoteMtime('/', 'kept.bin', T1)).toBe(T1);
  });

  it('touch FILE and touch -m set the time to now, touch -a leaves it, touch DIR succeeds; all kept across a remount', async () => {
    let m = await mountLibrary(ctx.server, { library: 'Times', attrTimeout: 0 });
    const stamp = async (p: string) => Number((await run('stat', ['-c', '%Y', p])).out.trim());
    const names = ['plain.txt', 'minus-m.txt', 'minus-a.txt'];
    await sh(`cd ${q(m.mnt)} && mkdir dir && for f in ${names.join(' ')}; do echo $f > $f; touch -d @${T1} $f; done`);
    for (const n of names) expect(await remoteMtime('/', n, T1), n).toBe(T1);

    const before = Math.floor(Date.now() / 1000);
    const touched = await sh(
      `cd ${q(m.mnt)} && touch plain.txt && touch -m minus-m.txt && touch -a minus-a.txt && touch dir`,
    );
    expect(touched.code).toBe(0);
    const after = Math.ceil(Date.now() / 1000);
    const isNow = (s: number) => s >= before && s <= after;
    // shown at once
    expect(isNow(await stamp(`${m.mnt}/plain.txt`)), 'touch FILE').toBe(true);
    expect(isNow(await stamp(`${m.mnt}/minus-m.txt`)), 'touch -m FILE').toBe(true);
    expect(await stamp(`${m.mnt}/minus-a.txt`), 'touch -a FILE').toBe(T1);
    // and on the server, content unchanged
    for (const n of ['plain.txt', 'minus-m.txt']) {
      const t = await remoteMtimeWhere('/', n, isNow);
      expect(isNow(t ?? 0), `${n} on the server: ${t}, wanted ${before}..${after}`).toBe(true);
    }
    expect(await remoteMtime('/', 'minus-a.txt', T1)).toBe(T1);
    for (const n of names) await expectRemoteFile(ctx.api, ctx.repos.Times, `/${n}`, Buffer.from(`${n}\n`));

    // a remount (new cache) shows the same times
    const shown = await Promise.all(names.map((n) => stamp(`${m.mnt}/${n}`)));
    expect((await m.unmount()).code).toBe(0);
    m = await mountLibrary(ctx.server, { library: 'Times', attrTimeout: 0 });
    expect(await Promise.all(names.map((n) => stamp(`${m.mnt}/${n}`)))).toEqual(shown);
    // touch DIR again on a folder the new mount only knows from the server
    expect((await sh(`touch ${q(m.mnt)}/dir`)).code).toBe(0);
    expect((await m.unmount()).code).toBe(0);
  });
});
