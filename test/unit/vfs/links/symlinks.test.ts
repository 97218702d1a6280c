// Symbolic links on the vfs with --links: each is the server's file NAME.rclonelink holding the target
// (rclone's format); without --links those files are ordinary files and symlink(2) is not offered.
import { constants as C } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../../helpers/cleanup.js';
import { FakeApi, expectErrno, makeVfs, vfsOnLibrary, writeWhole } from '../../../helpers/fake-api.js';
import { pollUntil } from '../../../helpers/poll.js';

const isLink = (mode: number) => (mode & C.S_IFMT) === C.S_IFLNK;

describe('symbolic links (--links)', () => {
  const cleanups = cleanupAfterEach();

  it('shows a NAME.rclonelink file as the link NAME: mode 777 link, size of the target, readlink its content', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putDir(repo, '/d');
    api.putFile(repo, '/d/l.rclonelink', '../x/target.txt');
    api.putFile(repo, '/d/plain.txt', 'p');
    expect((await vfs.readdir('/d')).sort()).toEqual(['l', 'plain.txt']);
    const a = await vfs.getattr('/d/l');
    expect(a.mode).toBe(C.S_IFLNK | 0o777);
    expect(a.size).toBe('../x/target.txt'.length);
    expect(vfs.getattrNow('/d/l')).toEqual(a);
    expect(await vfs.readlink('/d/l')).toBe('../x/target.txt');
    // the stored name is not there as such, and a file is not a link
    await expectErrno(vfs.getattr('/d/l.rclonelink'), 'ENOENT');
    await expectErrno(vfs.readlink('/d/plain.txt'), 'EINVAL');
    await expectErrno(vfs.readlink('/d/nothing'), 'ENOENT');
    expect(vfs.absentNow('/d/l')).toBe(false);
  });

  it('reads a target once per content: the second readlink asks nothing of the server', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/l.rclonelink', 'there');
    expect(await vfs.readlink('/l')).toBe('there');
    const calls = JSON.stringify(api.calls);
    expect(await vfs.readlink('/l')).toBe('there');
    expect(JSON.stringify(api.calls)).toBe(calls);
  });

  it('symlink(2) makes NAME.rclonelink holding the target, no newline, shown at once and uploaded', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putDir(repo, '/d');
    await vfs.readdir('/d');
    await vfs.symlink('sub/ü target', '/d/new');
    const a = vfs.getattrNow('/d/new');
    expect(a && isLink(a.mode)).toBe(true);
    expect(a?.size).toBe(Buffer.byteLength('sub/ü target'));
    expect(await vfs.readlink('/d/new')).toBe('sub/ü target');
    expect(await vfs.readdir('/d')).toEqual(['new']);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/d/new.rclonelink')?.toString()).toBe('sub/ü target');
    expect(api.content(repo, '/d/new')).toBeUndefined();
    expect(await vfs.readlink('/d/new')).toBe('sub/ü target');
  });

  it('a link made offline waits in the journal, shows and reads meanwhile, and is uploaded once the server is back', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true, probeMinMs: 20, probeMaxMs: 50 });
    api.putFile(repo, '/known.rclonelink', 'k');
    expect(await vfs.readlink('/known')).toBe('k');
    api.down = true;
    await vfs.symlink('made/offline', '/off');
    expect(await vfs.readlink('/off')).toBe('made/offline');
    expect(await vfs.readlink('/known')).toBe('k');
    expect(api.content(repo, '/off.rclonelink')).toBeUndefined();
    api.down = false;
    expect(await pollUntil(() => vfs.connectivity.online, 5000)).not.toBeNull();
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/off.rclonelink')?.toString()).toBe('made/offline');
  });

  it('refuses a link over anything, and names ending in .rclonelink for new files and folders', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/f', 'x');
    api.putFile(repo, '/l.rclonelink', 'f');
    await expectErrno(vfs.symlink('t', '/f'), 'EEXIST');
    await expectErrno(vfs.symlink('t', '/l'), 'EEXIST');
    await expectErrno(vfs.create('/n.rclonelink', 0o644), 'EINVAL');
    expect(vfs.createNow('/m.rclonelink')).toBeNull();
    await expectErrno(vfs.mkdir('/d.rclonelink', 0o755), 'EINVAL');
    await expectErrno(vfs.symlink('t', '/s.rclonelink'), 'EINVAL');
    await expectErrno(vfs.rename('/f', '/g.rclonelink'), 'EINVAL');
    expect(api.content(repo, '/f')?.toString()).toBe('x');
  });

  it('refuses targets not UTF-8 (U+FFFD) or over 4095 bytes, and answers a stored one over that as too long', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/long.rclonelink', 'y'.repeat(5000));
    await expectErrno(vfs.symlink('bad\uFFFDbytes', '/a'), 'EINVAL');
    await expectErrno(vfs.symlink('x'.repeat(4096), '/b'), 'ENAMETOOLONG');
    await vfs.symlink('x'.repeat(4095), '/c');
    expect((await vfs.readlink('/c')).length).toBe(4095);
    expect((await vfs.getattr('/long')).size).toBe(5000);
    await expectErrno(vfs.readlink('/long'), 'ENAMETOOLONG');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/a.rclonelink')).toBeUndefined();
    expect(api.content(repo, '/b.rclonelink')).toBeUndefined();
  });

  it('unlink and rename of a link remove and move its .rclonelink file', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putDir(repo, '/d');
    api.putFile(repo, '/a.rclonelink', 'ta');
    api.putFile(repo, '/b.rclonelink', 'tb');
    await vfs.rename('/a', '/d/a2');
    expect(api.content(repo, '/a.rclonelink')).toBeUndefined();
    expect(api.content(repo, '/d/a2.rclonelink')?.toString()).toBe('ta');
    expect(await vfs.readlink('/d/a2')).toBe('ta');
    await expectErrno(vfs.getattr('/a'), 'ENOENT');
    await vfs.unlink('/b');
    expect(api.content(repo, '/b.rclonelink')).toBeUndefined();
    await expectErrno(vfs.getattr('/b'), 'ENOENT');
  });

  it('a rename replaces what is at its target: a link over a file, a file over a link', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/l.rclonelink', 't');
    api.putFile(repo, '/f', 'file');
    api.putFile(repo, '/g', 'other');
    api.putFile(repo, '/m.rclonelink', 'tm');
    await vfs.rename('/l', '/f');
    expect(api.content(repo, '/f')).toBeUndefined();
    expect(api.content(repo, '/f.rclonelink')?.toString()).toBe('t');
    expect(isLink((await vfs.getattr('/f')).mode)).toBe(true);
    await vfs.rename('/g', '/m');
    expect(api.content(repo, '/m.rclonelink')).toBeUndefined();
    expect(api.content(repo, '/m')?.toString()).toBe('other');
    expect(isLink((await vfs.getattr('/m')).mode)).toBe(false);
  });

  it('a file NAME beside NAME.rclonelink is shadowed by the link (as rclone mount shows it) until the link goes', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/a', 'real file');
    api.putFile(repo, '/a.rclonelink', 'elsewhere');
    expect(await vfs.readdir('/')).toEqual(['a']);
    expect(isLink((await vfs.getattr('/a')).mode)).toBe(true);
    expect(await vfs.readlink('/a')).toBe('elsewhere');
    await vfs.unlink('/a');
    expect(api.content(repo, '/a.rclonelink')).toBeUndefined();
    expect(api.content(repo, '/a')?.toString()).toBe('real file');
    const a = await vfs.getattr('/a');
    expect(isLink(a.mode)).toBe(false);
    expect(a.size).toBe(9);
  });

  it('lutimes of a link sets its stored file time', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups, { links: true });
    api.putFile(repo, '/l.rclonelink', 't');
    expect(vfs.utimensNow('/l', 1_600_000_000_000)).toBe(false);
    await vfs.utimens('/l', 1_600_000_000_000);
    expect((await vfs.getattr('/l')).mtime.getTime()).toBe(1_600_000_000_000);
  });
});

describe('symbolic links in all-libraries mode', () => {
  const cleanups = cleanupAfterEach();

  it('works below each library folder; a library itself is never a link', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/l.rclonelink', 'there');
    const m = await makeVfs(api, { links: true });
    cleanups.push(m.cleanup);
    const { vfs } = m;
    expect(await vfs.readdir('/lib')).toEqual(['l']);
    expect(await vfs.readlink('/lib/l')).toBe('there');
    await vfs.symlink('../x', '/lib/new');
    expect(isLink((await vfs.getattr('/lib/new')).mode)).toBe(true);
    await expectErrno(vfs.readlink('/lib'), 'EINVAL');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/new.rclonelink')?.toString()).toBe('../x');
  });
});

describe('without --links', () => {
  const cleanups = cleanupAfterEach();

  it('shows .rclonelink files as ordinary files and offers no links', async () => {
    const { api, repo, vfs } = await vfsOnLibrary(cleanups);
    api.putFile(repo, '/l.rclonelink', 'target');
    expect(await vfs.readdir('/')).toEqual(['l.rclonelink']);
    const a = await vfs.getattr('/l.rclonelink');
    expect(a.mode & C.S_IFMT).toBe(C.S_IFREG);
    expect(a.size).toBe(6);
    await expectErrno(vfs.getattr('/l'), 'ENOENT');
    await expectErrno(vfs.symlink('t', '/x'), 'ENOSYS');
    await expectErrno(vfs.readlink('/l.rclonelink'), 'EINVAL');
    await writeWhole(vfs, '/n.rclonelink', 'made here');
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/n.rclonelink')?.toString()).toBe('made here');
  });
});
