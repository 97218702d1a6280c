// Modification times through the mount (needs the fuse-native utimens fix of
// scripts/fix-fuse-native): touch -d on a new and on an existing file, cp -p,
// tar x of an archive with old times, and rsync -a twice (the second run
// sends nothing). Each time is read back through the API's listing, each
// file's content checked there too.
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectRemoteFile, remoteEntries } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, sleep } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Times']);

/** the mtime (seconds) of `name` in `dir`'s listing on the server, polled until it equals `want` or 30 s pass */
async function remoteMtime(dir: string, name: string, want: number): Promise<number | undefined> {
  let got: number | undefined;
  for (const end = Date.now() + 30_000; Date.now() < end;) {
    got = (await remoteEntries(ctx.api, ctx.repos.Times, dir)).find((e) => e.name === name)?.mtime;
    if (got === want) break;
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
});
