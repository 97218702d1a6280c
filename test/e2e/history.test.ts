// Earlier versions and the trash through a real mount: .seafile-history lists
// a file's versions (written through the API), each read byte for byte, one
// copied back over the file; the hidden folders stay out of find, ls -a, du
// and rsync -a, and refuse every change (EROFS); files and folders deleted
// through the mount (and a folder deleted through the API) show in
// .seafile-trash, read, and come back with mv. Everything checked through the API.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stamp } from '../../src/vfs/hidden/names.js';
import { remoteBytes, remoteExists, sha256, sha256File, waitRemoteFile } from '../helpers/api-check.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, q, run, scratchDir, sh, sleep } from '../helpers/mount.js';

const ctx = setupE2E(['History']);

async function putVersion(local: string, dir: string, name: string): Promise<void> {
  const link = await ctx.api.uploadLink(ctx.repos.History, dir);
  await ctx.api.upload(link, dir, local, name, { replace: true });
}

describe('earlier versions and the trash in the drive', () => {
  it('lists three versions written through the API, reads each, and a cp of one restores it', async () => {
    const repo = ctx.repos.History;
    await ctx.api.mkdir(repo, '/docs');
    const v = [path.join(ctx.src, 'v1'), path.join(ctx.src, 'v2'), path.join(ctx.src, 'v3')];
    writeFileSync(v[0], 'the first version\n');
    await writeRandom(v[1], 24 * 1024 * 1024 + 123); // read through ranged GETs and a stream, never whole in memory
    writeFileSync(v[2], 'the third and current version\n');
    for (const f of v) {
      await putVersion(f, '/docs', 'report.txt');
      await sleep(1100); // one version per second: each named by its own time
    }
    const history = await ctx.api.fileHistory(repo, '/docs/report.txt');
    expect(history).toHaveLength(3);
    const want = history.map((c) => `${stamp(c.ctime * 1000)} report.txt`).sort();

    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 1, attrTimeout: 1 });
    const hist = path.join(m.mnt, '.seafile-history');
    const ls = await run('ls', ['-1', path.join(hist, 'docs', 'report.txt')]);
    expect(ls.out.trim().split('\n')).toEqual(want);
    const sizes = await run('stat', ['-c', '%s', ...want.map((n) => path.join(hist, 'docs', 'report.txt', n))]);
    expect(sizes.out.trim().split('\n').map(Number)).toEqual([18, 24 * 1024 * 1024 + 123, 30]);
    for (let i = 0; i < 3; i++) {
      expect(await sha256File(path.join(hist, 'docs', 'report.txt', want[i])), want[i]).toBe(await sha256File(v[i]));
    }
    // a ranged read in the middle of the large version
    const mid = await sh(
      `dd if=${q(path.join(hist, 'docs', 'report.txt', want[1]))} bs=4096 skip=3000 count=2 2>/dev/null | sha256sum`,
    );
    expect(mid.out.split(' ')[0]).toBe(sha256(readFileSync(v[1]).subarray(3000 * 4096, 3002 * 4096)));

    // restore by copy: the first version becomes current (a new version on the server)
    await sh(`cp ${q(path.join(hist, 'docs', 'report.txt', want[0]))} ${q(path.join(m.mnt, 'docs', 'report.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/docs/report.txt', v[0]);
    expect(await ctx.api.fileHistory(repo, '/docs/report.txt')).toHaveLength(4);
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
  });

  it('seafs restore FILE --at TIME makes the version of that time current by a revert', async () => {
    const repo = ctx.repos.History;
    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 1, attrTimeout: 1 });
    const file = path.join(m.mnt, 'docs', 'report.txt');
    const env = { ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') };
    const versions = (await ctx.api.fileHistory(repo, '/docs/report.txt')).sort((a, b) => a.ctime - b.ctime);
    const second = `${stamp(versions[1].ctime * 1000)} report.txt`;
    const before = await sha256File(path.join(ctx.src, 'v2'));
    // the version's name as shown in .seafile-history is a time it reads
    const r = await run(process.execPath, [CLI, 'restore', file, '--at', second.replace(/ report\.txt$/, '')], {
      env,
      allowFail: true,
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim()).toBe(`${file}: restored the version "${second}" (${24 * 1024 * 1024 + 123} bytes)`);
    expect(sha256(await remoteBytes(ctx.api, repo, '/docs/report.txt'))).toBe(before);
    // at once: the restore leaves neither the mount's listing nor the kernel's attributes stale
    expect(await sha256File(file)).toBe(before);
    const early = await run(process.execPath, [CLI, 'restore', file, '--at', '2001-01-01 00:00'], {
      env,
      allowFail: true,
    });
    expect(early.code).toBe(1);
    expect(early.err.trim()).toBe(
      `seafs: /docs/report.txt has no version at or before that time; the oldest version is "${stamp(versions[0].ctime * 1000)} report.txt"`,
    );
    const r2 = await m.unmount();
    expect(r2.code, r2.err).toBe(0);
  });

  it('find, ls -a, du and rsync -a never enter the hidden folders, which answer to their path and refuse changes', async () => {
    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 1, attrTimeout: 1 });
    const mnt = m.mnt;
    const find = await run('find', [mnt]);
    expect(find.out).toContain('/docs/report.txt');
    expect(find.out).not.toContain('.seafile-');
    const lsa = await run('ls', ['-a', mnt]);
    expect(
      lsa.out
        .trim()
        .split('\n')
        .filter((n) => n !== '.' && n !== '..'),
    ).toEqual(['docs']);
    const du = await run('du', ['-a', mnt]);
    expect(du.out).not.toContain('.seafile-');
    const dest = path.join(ctx.src, 'rsync-copy');
    mkdirSync(dest);
    await run('rsync', ['-a', `${mnt}/`, `${dest}/`]);
    expect((await run('find', [dest])).out).not.toContain('.seafile-');
    expect((await run('ls', ['-A', dest])).out.trim()).toBe('docs');

    // by path: ls -d, ls, stat
    expect((await run('ls', ['-d', path.join(mnt, '.seafile-history')])).out.trim()).toBe(
      path.join(mnt, '.seafile-history'),
    );
    expect((await run('ls', [path.join(mnt, '.seafile-history')])).out.trim()).toBe('docs');
    expect((await run('stat', ['-c', '%F', path.join(mnt, '.seafile-trash')])).out.trim()).toBe('directory');

    // every change under them is refused as on a read-only filesystem
    const versionsBefore = (await ctx.api.fileHistory(ctx.repos.History, '/docs/report.txt')).length;
    const vdir = path.join(mnt, '.seafile-history', 'docs', 'report.txt');
    const first = (await run('ls', ['-1', vdir])).out.trim().split('\n')[0];
    const version = path.join(vdir, first);
    const attempts = [
      `echo x > ${q(version)}`,
      `echo x >> ${q(version)}`,
      `touch ${q(path.join(vdir, 'new.txt'))}`,
      `rm -f ${q(version)}`,
      `mkdir ${q(path.join(mnt, '.seafile-history', 'docs', 'sub'))}`,
      `mv ${q(path.join(mnt, 'docs', 'report.txt'))} ${q(path.join(vdir, 'moved.txt'))}`,
      `mv ${q(version)} ${q(path.join(mnt, 'docs', 'moved.txt'))}`,
      `truncate -s 0 ${q(version)}`,
      `touch -d @1000000000 ${q(version)}`,
      `rmdir ${q(path.join(mnt, '.seafile-trash'))}`,
    ];
    for (const a of attempts) {
      const r = await sh(a, { allowFail: true });
      expect(r.code, a).not.toBe(0);
      expect(r.err, a).toContain('Read-only file system');
    }
    expect(await ctx.api.fileHistory(ctx.repos.History, '/docs/report.txt')).toHaveLength(versionsBefore);
    expect(await remoteExists(ctx.api, ctx.repos.History, '/docs/moved.txt')).toBe(false);
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
  });

  it('files and folders deleted through the mount show in the trash, read, and come back with mv', async () => {
    const repo = ctx.repos.History;
    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 1, attrTimeout: 1 });
    const mnt = m.mnt;
    const trash = path.join(mnt, '.seafile-trash');
    await sh(
      `printf 'single file' > ${q(mnt)}/single.txt && mkdir -p ${q(mnt)}/folder/sub && ` +
        `printf 'in folder' > ${q(mnt)}/folder/a.txt && printf 'deeper' > ${q(mnt)}/folder/sub/b.txt`,
    );
    await waitRemoteFile(ctx.api, repo, '/folder/sub/b.txt', Buffer.from('deeper'));
    await waitRemoteFile(ctx.api, repo, '/single.txt', Buffer.from('single file'));
    await sh(`rm ${q(mnt)}/single.txt && rm -r ${q(mnt)}/folder`);
    expect(await remoteExists(ctx.api, repo, '/folder')).toBe(false);

    const names = (await run('ls', ['-1', trash])).out.trim().split('\n');
    const entry = (label: string) => {
      const hit = names.find((n) => n.endsWith(` ${label}`));
      expect(hit, `${label} in ${names.join(', ')}`).toBeDefined();
      return hit!;
    };
    const single = entry('single.txt');
    expect(single).toMatch(/^\d{4}-\d\d-\d\d \d\d\.\d\d\.\d\d single\.txt$/);
    expect((await run('cat', [path.join(trash, single)])).out).toBe('single file');
    expect((await run('stat', ['-c', '%F', path.join(trash, entry('folder'))])).out.trim()).toBe('directory');

    // mv back to where it was, and elsewhere
    await run('mv', [path.join(trash, single), path.join(mnt, 'single.txt')]);
    expect((await remoteBytes(ctx.api, repo, '/single.txt')).toString()).toBe('single file');
    // rm -r deleted the files one by one: the folder comes back empty, then its files into it
    await run('mv', [path.join(trash, entry('folder')), path.join(mnt, 'folder')]);
    await run('mv', [path.join(trash, entry('folder%2Fa.txt')), path.join(mnt, 'folder', 'a.txt')]);
    await run('mv', [path.join(trash, entry('folder%2Fsub%2Fb.txt')), path.join(mnt, 'b-here.txt')]);
    expect((await remoteBytes(ctx.api, repo, '/folder/a.txt')).toString()).toBe('in folder');
    expect((await remoteBytes(ctx.api, repo, '/b-here.txt')).toString()).toBe('deeper');
    expect(await remoteExists(ctx.api, repo, '/folder/sub/b.txt')).toBe(false);
    expect((await run('cat', [path.join(mnt, 'b-here.txt')])).out).toBe('deeper');

    // a folder deleted whole (as in the web UI) comes back whole, under another name
    await ctx.api.mkdir(repo, '/whole/inner', { createParents: true });
    writeFileSync(path.join(ctx.src, 'w.txt'), 'whole content');
    await putVersion(path.join(ctx.src, 'w.txt'), '/whole/inner', 'w.txt');
    await ctx.api.deleteDir(repo, '/whole');
    await sleep(1100); // the trash listing is kept for the cache time (1 s)
    const again = (await run('ls', ['-1', trash])).out.trim().split('\n');
    const whole = again.find((n) => n.endsWith(' whole'))!;
    expect(whole).toBeDefined();
    await run('mv', [path.join(trash, whole), path.join(mnt, 'whole-again')]);
    expect((await remoteBytes(ctx.api, repo, '/whole-again/inner/w.txt')).toString()).toBe('whole content');
    expect(await remoteExists(ctx.api, repo, '/whole')).toBe(false);
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
  });

  it('with the kernel caching attributes (5 s), a cat right after seafs restore shows the restored content', async () => {
    const repo = ctx.repos.History;
    await ctx.api.mkdir(repo, '/exact');
    // [versions written in turn, the one restored]: another size, then the same size (only the time differs)
    const cases = [
      ['sizes.txt', ['the first version\n', 'the second, longer version\n'], 0],
      ['same.txt', ['alpha-1\n', 'alpha-2\n'], 0],
    ] as const;
    for (const [name, contents] of cases) {
      for (const c of contents) {
        writeFileSync(path.join(ctx.src, name), c);
        await putVersion(path.join(ctx.src, name), '/exact', name);
        await sleep(1100); // one version per second
      }
    }
    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 10, attrTimeout: 5 });
    const env = { ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') };
    for (const [name, contents, back] of cases) {
      const file = path.join(m.mnt, 'exact', name);
      // read through the mount: the kernel now holds its attributes and pages
      expect((await run('cat', [file])).out).toBe(contents[1]);
      const versions = (await ctx.api.fileHistory(repo, `/exact/${name}`)).sort((a, b) => a.ctime - b.ctime);
      const at = stamp(versions[back].ctime * 1000);
      const r = await run(process.execPath, [CLI, 'restore', file, '--at', at], { env, allowFail: true });
      expect(r.code, r.err).toBe(0);
      expect((await remoteBytes(ctx.api, repo, `/exact/${name}`)).toString()).toBe(contents[back]);
      expect((await run('cat', [file])).out, name).toBe(contents[back]);
      expect((await run('stat', ['-c', '%s', file])).out.trim()).toBe(String(contents[back].length));
    }
    const r2 = await m.unmount();
    expect(r2.code, r2.err).toBe(0);
  });

  it('with the kernel caching attributes (5 s), a file moved out of the trash shows normal modes at once', async () => {
    const repo = ctx.repos.History;
    const m = await mountLibrary(ctx.server, { library: 'History', dirCacheTime: 10, attrTimeout: 5 });
    const mnt = m.mnt;
    const trash = path.join(mnt, '.seafile-trash');
    await sh(`printf 'to the trash' > ${q(mnt)}/modes.txt && mkdir ${q(mnt)}/modes-dir`);
    await waitRemoteFile(ctx.api, repo, '/modes.txt', Buffer.from('to the trash'));
    await sh(`rm ${q(mnt)}/modes.txt && rmdir ${q(mnt)}/modes-dir`);
    const names = (await run('ls', ['-1', trash])).out.trim().split('\n');
    const file = names.find((n) => n.endsWith(' modes.txt'))!;
    const dir = names.find((n) => n.endsWith(' modes-dir'))!;
    expect([file, dir].every(Boolean), names.join(', ')).toBe(true);
    // the entries are looked up (the kernel keeps their attributes), then moved out
    await run('stat', [path.join(trash, file), path.join(trash, dir)]);
    await run('mv', [path.join(trash, file), path.join(mnt, 'modes-back.txt')]);
    await run('mv', [path.join(trash, dir), path.join(mnt, 'modes-dir')]);
    expect((await run('stat', ['-c', '%A', path.join(mnt, 'modes-back.txt')])).out.trim()).toBe('-rw-r--r--');
    expect((await run('stat', ['-c', '%A', path.join(mnt, 'modes-dir')])).out.trim()).toBe('drwxr-xr-x');
    // and it is an ordinary file again: written to, and read back through the API
    await sh(`printf ', and back' >> ${q(mnt)}/modes-back.txt && printf 'new' > ${q(mnt)}/modes-dir/n.txt`);
    await waitRemoteFile(ctx.api, repo, '/modes-back.txt', Buffer.from('to the trash, and back'));
    await waitRemoteFile(ctx.api, repo, '/modes-dir/n.txt', Buffer.from('new'));
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
  });
});
