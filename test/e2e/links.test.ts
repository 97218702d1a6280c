// Symbolic links through a real mount with --links: a git checkout holding
// links (relative file link, folder link, dangling link) cloned onto the
// mount, stored on the server as NAME.rclonelink files holding the targets
// (read back through the API), `git status` clean after a remount, and rclone
// with its own --links agreeing both ways. Without --links, ln -s fails at once
// as it always did and the .rclonelink files are plain files.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { remoteBytes, remoteEntries, remoteNames } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { mountLibrary, run } from '../helpers/mount.js';
import { git } from '../helpers/git.js';
import { pollUntil } from '../helpers/poll.js';
import { Rclone } from '../helpers/rclone.js';
import { uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['Links']);

/** the links of the checkout, by path in it, and their targets */
const LINKS: Record<string, string> = {
  'rel-link': 'sub/file.txt',
  'dir-link': 'sub',
  dangling: '../missing/nowhere',
  'sub/up-link': '../top.txt',
};

describe('symbolic links (--links)', () => {
  let rclone: Rclone | null = null;
  afterAll(() => rclone?.dispose());

  it('a git checkout with links: stored as .rclonelink files, clean after a remount, and rclone --links agrees both ways', async () => {
    const repo = ctx.repos.Links;
    // the origin: a small repository made here
    const origin = path.join(ctx.src, 'origin');
    mkdirSync(path.join(origin, 'sub'), { recursive: true });
    writeFileSync(path.join(origin, 'top.txt'), 'top\n');
    writeFileSync(path.join(origin, 'sub/file.txt'), 'hello\n');
    for (const [p, target] of Object.entries(LINKS)) symlinkSync(target, path.join(origin, p));
    await git(origin, 'init', '-q');
    await git(origin, 'add', '-A');
    await git(origin, 'commit', '-q', '-m', 'files and links');

    const m = await mountLibrary(ctx.server, { library: 'Links', extraArgs: ['--links'] });
    const work = path.join(m.mnt, 'work');
    await git(m.mnt, 'clone', '-q', origin, work);
    for (const [p, target] of Object.entries(LINKS)) {
      expect(lstatSync(path.join(work, p)).isSymbolicLink(), p).toBe(true);
      expect(readlinkSync(path.join(work, p)), p).toBe(target);
      expect(lstatSync(path.join(work, p)).size, p).toBe(Buffer.byteLength(target));
    }
    // the kernel follows them on the mount
    expect(readFileSync(path.join(work, 'rel-link'), 'utf8')).toBe('hello\n');
    expect(readFileSync(path.join(work, 'sub/up-link'), 'utf8')).toBe('top\n');
    expect(readdirSync(path.join(work, 'dir-link')).sort()).toEqual(['file.txt', 'up-link']);
    expect(readdirSync(work).sort()).toEqual(['.git', 'dangling', 'dir-link', 'rel-link', 'sub', 'top.txt']);
    expect((await git(work, 'status', '--porcelain')).out).toBe('');
    expect((await m.unmount()).code).toBe(0);

    // on the server: NAME.rclonelink holding the target, no newline, and no NAME
    for (const [p, target] of Object.entries(LINKS))
      expect((await remoteBytes(ctx.api, repo, `/work/${p}.rclonelink`)).toString('utf8'), p).toBe(target);
    const names = await remoteNames(ctx.api, repo, '/work');
    expect(names).toContain('dangling.rclonelink');
    expect(names).not.toContain('dangling');

    // a new mount (a fresh cache) sees the same checkout: git finds nothing changed
    // (as fstab gives it, -o links; listings revalidated after a second: the folder rclone makes below shows soon)
    const m2 = await mountLibrary(ctx.server, { library: 'Links', dirCacheTime: 1, extraArgs: ['-o', 'links'] });
    const work2 = path.join(m2.mnt, 'work');
    expect((await git(work2, 'status', '--porcelain')).out).toBe('');
    for (const [p, target] of Object.entries(LINKS)) expect(readlinkSync(path.join(work2, p)), p).toBe(target);

    // rclone --links copies the library down as real links with the same targets
    rclone = await Rclone.create([
      {
        name: 'sea',
        url: ctx.server.url,
        user: ctx.server.adminEmail,
        password: ctx.server.adminPassword,
        library: 'Links',
      },
    ]);
    const down = path.join(ctx.src, 'down');
    await rclone.ok(['copy', '--links', '--exclude', '.git/**', 'sea:work', down]);
    for (const [p, target] of Object.entries(LINKS)) {
      expect(lstatSync(path.join(down, p)).isSymbolicLink(), p).toBe(true);
      expect(readlinkSync(path.join(down, p)), p).toBe(target);
    }
    expect(readFileSync(path.join(down, 'sub/file.txt'), 'utf8')).toBe('hello\n');

    // and a link rclone uploads shows on the mount as that link
    const up = path.join(ctx.src, 'up');
    mkdirSync(up);
    symlinkSync('../far/away.txt', path.join(up, 'made-by-rclone'));
    writeFileSync(path.join(up, 'plain.txt'), 'plain\n');
    await rclone.ok(['copy', '--links', up, 'sea:from-rclone']);
    expect((await remoteBytes(ctx.api, repo, '/from-rclone/made-by-rclone.rclonelink')).toString()).toBe(
      '../far/away.txt',
    );
    const fromRclone = path.join(m2.mnt, 'from-rclone');
    expect(await pollUntil(() => existsSync(fromRclone), 20_000)).not.toBeNull();
    expect(readdirSync(fromRclone).sort()).toEqual(['made-by-rclone', 'plain.txt']);
    expect(lstatSync(path.join(fromRclone, 'made-by-rclone')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(fromRclone, 'made-by-rclone'))).toBe('../far/away.txt');

    // mv, touch -h and rm of a link on the mount move, time and delete its .rclonelink file
    const moved = path.join(fromRclone, 'moved');
    await run('mv', [path.join(fromRclone, 'made-by-rclone'), moved]);
    await run('touch', ['-h', '-d', '@1600000000', moved]);
    expect(lstatSync(moved).mtimeMs).toBe(1_600_000_000_000);
    await run('ln', ['-s', 'plain.txt', path.join(fromRclone, 'gone')]);
    await run('rm', [path.join(fromRclone, 'gone')]);
    expect((await m2.unmount()).code).toBe(0);
    expect((await remoteNames(ctx.api, repo, '/from-rclone'))?.sort()).toEqual(['moved.rclonelink', 'plain.txt']);
    expect((await remoteBytes(ctx.api, repo, '/from-rclone/moved.rclonelink')).toString()).toBe('../far/away.txt');
    const entry = (await remoteEntries(ctx.api, repo, '/from-rclone')).find((e) => e.name === 'moved.rclonelink');
    expect(entry?.mtime).toBe(1_600_000_000);
  });

  it('without --links, ln -s fails at once as before and .rclonelink files are plain files', async () => {
    const repo = ctx.repos.Links;
    const link = await ctx.api.uploadLink(repo, '/');
    expect((await uploadTo(link, '/', { 'plain-link.rclonelink': 'somewhere' })).status).toBe(200);
    const m = await mountLibrary(ctx.server, { library: 'Links' });
    const ln = await run('ln', ['-s', 'target', path.join(m.mnt, 'nolink')], { allowFail: true });
    expect(ln.code).not.toBe(0);
    // ENOSYS, from the kernel: the mount offers no symlink operation
    expect(ln.err).toMatch(/Function not implemented/);
    expect(lstatSync(path.join(m.mnt, 'plain-link.rclonelink')).isFile()).toBe(true);
    expect(readFileSync(path.join(m.mnt, 'plain-link.rclonelink'), 'utf8')).toBe('somewhere');
    expect(await remoteNames(ctx.api, repo, '/')).not.toContain('nolink');
    expect((await m.unmount()).code).toBe(0);
  });
});
