import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { apiError, expectErrno, FakeApi, gate, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';
import type { Vfs } from '../../../src/vfs/vfs.js';

const SERVER = 'https://cloud.example.com';

describe('extended attributes: what the mount knows about each file and folder', () => {
  const cleanups = cleanupAfterEach();

  async function setup(opts: { library?: string | null; stream?: boolean } = {}) {
    const api = new FakeApi();
    if (opts.stream) api.offerUploadStreams();
    const repo = api.addLibrary('Work Docs');
    const library = opts.library === null ? undefined : (opts.library ?? 'Work Docs');
    const m = await makeVfs(api, {
      library,
      serverUrl: `${SERVER}/`,
      writeBack: { retryBaseMs: 10, streamThresholdBytes: 1024 * 1024 },
    });
    cleanups.push(m.cleanup);
    return { api, repo, ...m };
  }

  const get = async (vfs: Vfs, p: string, name: string) => (await vfs.xattrs.get(p, name)).toString();
  /** as `getfattr -d` does: every listed name, then each value */
  async function dump(vfs: Vfs, p: string): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const n of await vfs.xattrs.list(p)) out[n] = await get(vfs, p, n);
    return out;
  }

  it('a synced file shows its id, library, status, lock holder and web page', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/reports');
    api.putFile(repo, '/reports/q3 final.pdf', 'numbers');
    api.setModifier(repo, '/reports/q3 final.pdf', 'carol@example.com');
    expect(await dump(vfs, '/reports/q3 final.pdf')).toEqual({
      'user.seafile.id': api.fileIdAt(repo, '/reports/q3 final.pdf'),
      'user.seafile.library': repo,
      'user.seafile.modifier': 'carol@example.com',
      'user.seafile.status': 'synced',
      'user.seafile.locked_by': '',
      'user.seafile.url': `${SERVER}/lib/${repo}/file/reports/q3%20final.pdf`,
    });
  });

  it('a folder shows its id, library, status and web page (no lock holder, no modifier it lacks)', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/reports/2026');
    api.putFile(repo, '/reports/2026/a.txt', 'a');
    const names = await vfs.xattrs.list('/reports');
    expect(names).toEqual(['user.seafile.id', 'user.seafile.library', 'user.seafile.status', 'user.seafile.url']);
    expect(await get(vfs, '/reports', 'user.seafile.id')).toMatch(/^[0-9a-f]{40}$/);
    expect(await get(vfs, '/reports', 'user.seafile.status')).toBe('synced');
    expect(await get(vfs, '/reports', 'user.seafile.url')).toBe(`${SERVER}/library/${repo}/Work%20Docs/reports/`);
    // the library's root: its id is the library's
    expect(await vfs.xattrs.list('/')).not.toContain('user.seafile.id');
    expect(await get(vfs, '/', 'user.seafile.url')).toBe(`${SERVER}/library/${repo}/Work%20Docs/`);
    await expectErrno(vfs.xattrs.get('/reports', 'user.seafile.locked_by'), 'ENODATA');
    await expectErrno(vfs.xattrs.get('/reports', 'user.seafile.modifier'), 'ENODATA');
  });

  it('a file waiting for upload is pending, its folders count it, and it is synced once uploaded', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/a/b');
    const held = gate();
    api.uploadGate = held.wait;
    await writeWhole(vfs, '/a/b/new.txt', 'new');
    await writeWhole(vfs, '/a/other.txt', 'other');
    expect(await get(vfs, '/a/b/new.txt', 'user.seafile.status')).toBe('pending');
    // not on the server yet: no id, nothing to link to
    expect(await vfs.xattrs.list('/a/b/new.txt')).not.toContain('user.seafile.id');
    await expectErrno(vfs.xattrs.get('/a/b/new.txt', 'user.seafile.share_link'), 'ENODATA');
    expect(await get(vfs, '/a/b', 'user.seafile.status')).toBe('1 pending');
    expect(await get(vfs, '/a', 'user.seafile.status')).toBe('2 pending');
    expect(await get(vfs, '/', 'user.seafile.status')).toBe('2 pending');
    held.open();
    expect(await vfs.drain()).toEqual([]);
    await sleep(1100); // a value read is answered unchanged for a second (getfattr's size probe, then the value)
    expect(await get(vfs, '/a/b/new.txt', 'user.seafile.status')).toBe('synced');
    expect(await get(vfs, '/a', 'user.seafile.status')).toBe('synced');
    expect(await get(vfs, '/a/b/new.txt', 'user.seafile.id')).toBe(api.fileIdAt(repo, '/a/b/new.txt'));
  });

  it('a value read twice within a second is the same, so its size does not change between probe and fetch', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/d');
    const held = gate();
    api.uploadGate = held.wait;
    await writeWhole(vfs, '/d/f.txt', 'x');
    const first = await get(vfs, '/d', 'user.seafile.status');
    expect(first).toBe('1 pending');
    held.open();
    expect(await vfs.drain()).toEqual([]);
    expect(await get(vfs, '/d', 'user.seafile.status')).toBe(first);
    await sleep(1100);
    expect(await get(vfs, '/d', 'user.seafile.status')).toBe('synced');
  });

  it('a large file being written shows the share of it already streamed to the server', async () => {
    const { repo, vfs, api } = await setup({ stream: true });
    api.putDir(repo, '/big');
    const fh = await vfs.create('/big/video.bin', 0o644);
    const piece = Buffer.alloc(128 * 1024, 7);
    for (let off = 0; off < 3 * 1024 * 1024; off += piece.length)
      await vfs.write('/big/video.bin', fh, piece, piece.length, off);
    let status = '';
    for (let i = 0; i < 100 && !/^uploading \d+%$/.test(status); i++) {
      await sleep(20);
      status = (await vfs.xattrs.get('/big/video.bin', 'user.seafile.status')).toString();
    }
    expect(status).toMatch(/^uploading \d+%$/);
    await vfs.flush('/big/video.bin', fh);
    await vfs.release('/big/video.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/big/video.bin')!.length).toBe(3 * 1024 * 1024);
  });

  it('a failed upload shows the reason', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/x');
    const refused = () => apiError('forbidden', 403, 'upload', 'Permission denied.');
    api.failNext.set('uploadLink', Array.from({ length: 20 }, refused));
    await writeWhole(vfs, '/x/f.txt', 'data').catch(() => {});
    let status = '';
    for (let i = 0; i < 100 && !status.startsWith('error'); i++) {
      await sleep(20);
      status = (await vfs.xattrs.get('/x/f.txt', 'user.seafile.status')).toString();
    }
    expect(status).toMatch(/^error: .*Permission denied/);
    expect(await get(vfs, '/x', 'user.seafile.status')).toBe('1 pending (1 failed)');
  });

  it('locked_by names the holder of a lock; setting user.seafile.lock to 1 or 0 locks or unlocks on the server', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/theirs.docx', 't');
    api.putFile(repo, '/mine.docx', 'm');
    api.setLockOwner(repo, '/theirs.docx', 'bob@example.com');
    expect(await get(vfs, '/theirs.docx', 'user.seafile.locked_by')).toBe('bob@example.com');
    expect(await get(vfs, '/mine.docx', 'user.seafile.locked_by')).toBe('');

    await vfs.xattrs.set('/mine.docx', 'user.seafile.lock', Buffer.from('1'));
    expect(api.calls.lockFile).toBe(1);
    expect(await get(vfs, '/mine.docx', 'user.seafile.locked_by')).toBe('me@example.com');
    expect(await get(vfs, '/mine.docx', 'user.seafile.lock')).toBe('1');
    await vfs.xattrs.set('/mine.docx', 'user.seafile.lock', Buffer.from('0'));
    expect(api.calls.unlockFile).toBe(1);
    expect(await get(vfs, '/mine.docx', 'user.seafile.locked_by')).toBe('');
    // the lock attribute is not listed: copying attributes (cp -a, rsync -X) must never lock the copy
    expect(await vfs.xattrs.list('/mine.docx')).not.toContain('user.seafile.lock');
    // someone else's lock is theirs to lift
    await expectErrno(vfs.xattrs.set('/theirs.docx', 'user.seafile.lock', Buffer.from('0')), 'EACCES');
    await expectErrno(vfs.xattrs.set('/mine.docx', 'user.seafile.lock', Buffer.from('yes')), 'EINVAL');
  });

  it('on a server without locks (Community Edition) the lock attributes answer ENOTSUP and are not listed', async () => {
    const { api, repo, vfs } = await setup();
    api.communityEdition = true;
    api.putFile(repo, '/plan.docx', 'p');
    for (const v of ['1', '0']) {
      await expect(vfs.xattrs.set('/plan.docx', 'user.seafile.lock', Buffer.from(v))).rejects.toMatchObject({
        code: 'ENOTSUP',
        message: 'ENOTSUP: this server does not support file locks',
      });
    }
    await expectErrno(vfs.xattrs.remove('/plan.docx', 'user.seafile.lock'), 'ENOTSUP');
    await expectErrno(vfs.xattrs.get('/plan.docx', 'user.seafile.lock'), 'ENOTSUP');
    await expectErrno(vfs.xattrs.get('/plan.docx', 'user.seafile.locked_by'), 'ENOTSUP');
    // getfattr -d reads every listed name: none of them may fail
    const names = await vfs.xattrs.list('/plan.docx');
    expect(names).not.toContain('user.seafile.locked_by');
    expect(await dump(vfs, '/plan.docx')).toMatchObject({ 'user.seafile.status': 'synced' });
    expect(api.calls.lockFile ?? 0).toBe(0);
    expect(api.calls.unlockFile ?? 0).toBe(0);
  });

  it('a conflict copy, and the file it was split from while the copy is beside it, show conflict', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/plan.txt', 'base\n');
    const fh = await vfs.open('/plan.txt', FC.O_WRONLY | FC.O_TRUNC);
    await vfs.write('/plan.txt', fh, Buffer.from('local\n'), 6, 0);
    api.putFile(repo, '/plan.txt', 'theirs\n');
    await vfs.release('/plan.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    const copy = api.names(repo, '/').find((n) => n.includes('SFConflict'))!;
    expect(copy).toBeDefined();
    expect(await get(vfs, `/${copy}`, 'user.seafile.status')).toBe('conflict');
    expect(await get(vfs, '/plan.txt', 'user.seafile.status')).toBe('conflict');
    // the user resolves it by deleting the copy
    await vfs.unlink(`/${copy}`);
    await sleep(1100);
    expect(await get(vfs, '/plan.txt', 'user.seafile.status')).toBe('synced');
  });

  it('share_link returns the existing link, or makes one when read by name; -d never makes one', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/shared');
    api.putFile(repo, '/shared/a.pdf', 'a');
    api.putFile(repo, '/b.pdf', 'b');
    const existing = await api.createShareLink(repo, '/shared');
    // a dump of everything makes no link
    await dump(vfs, '/b.pdf');
    await dump(vfs, '/shared/a.pdf');
    expect(api.calls.createShareLink).toBe(1); // the test's own
    expect(await vfs.xattrs.list('/b.pdf')).not.toContain('user.seafile.share_link');
    // a folder's existing link (listed with a trailing slash) is found
    expect(await vfs.xattrs.list('/shared')).toContain('user.seafile.share_link');
    expect(await get(vfs, '/shared', 'user.seafile.share_link')).toBe(existing.link);
    // read by name: made once, the same URL afterwards, then listed
    const link = await get(vfs, '/b.pdf', 'user.seafile.share_link');
    expect(link).toMatch(/^https:\/\/fake\.example\.com\/f\/[0-9a-f]+\/$/);
    await sleep(1100);
    expect(await get(vfs, '/b.pdf', 'user.seafile.share_link')).toBe(link);
    expect(api.calls.createShareLink).toBe(2);
    expect(api.shareLinks.filter((l) => l.path === '/b.pdf')).toHaveLength(1);
    expect(await vfs.xattrs.list('/b.pdf')).toContain('user.seafile.share_link');
  });

  it('share_link reuses a link made elsewhere since the list was read, and replaces an expired one', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/c.pdf', 'c');
    api.putFile(repo, '/d.pdf', 'd');
    api.putDir(repo, '/e');
    const old = await api.createShareLink(repo, '/d.pdf');
    old.is_expired = true;
    await dump(vfs, '/c.pdf'); // the library's links are listed (and kept a minute)
    expect(await vfs.xattrs.list('/d.pdf')).not.toContain('user.seafile.share_link');
    // someone makes a link meanwhile: the server refuses a second one (400 "already exists")
    const elsewhere = await api.createShareLink(repo, '/c.pdf');
    expect(await get(vfs, '/c.pdf', 'user.seafile.share_link')).toBe(elsewhere.link);
    expect(api.shareLinks.filter((l) => l.path === '/c.pdf')).toHaveLength(1);
    // an expired link blocks a new one on the server: it is deleted, then a link is made
    const fresh = await get(vfs, '/d.pdf', 'user.seafile.share_link');
    expect(fresh).not.toBe(old.link);
    expect(api.shareLinks.filter((l) => l.path === '/d.pdf').map((l) => [l.link, l.is_expired])).toEqual([
      [fresh, false],
    ]);
    // a folder's link that expired after the list was read: found at the refusal, replaced
    const gone = await api.createShareLink(repo, '/e');
    gone.is_expired = true;
    const folder = await get(vfs, '/e', 'user.seafile.share_link');
    expect(folder).not.toBe(gone.link);
    expect(api.shareLinks.filter((l) => l.path === '/e/').map((l) => [l.link, l.is_expired])).toEqual([
      [folder, false],
    ]);
    expect(api.calls.deleteShareLink).toBe(2);
  });

  it('unknown names are ENODATA, other namespaces are ENODATA, and setting anything but the lock is ENOTSUP', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/f.txt', 'f');
    await expectErrno(vfs.xattrs.get('/f.txt', 'user.seafile.nope'), 'ENODATA');
    await expectErrno(vfs.xattrs.get('/f.txt', 'user.mime_type'), 'ENODATA');
    await expectErrno(vfs.xattrs.get('/f.txt', 'security.capability'), 'ENODATA');
    await expectErrno(vfs.xattrs.get('/f.txt', 'system.posix_acl_access'), 'ENODATA');
    await expectErrno(vfs.xattrs.set('/f.txt', 'user.seafile.status', Buffer.from('synced')), 'ENOTSUP');
    await expectErrno(vfs.xattrs.set('/f.txt', 'user.comment', Buffer.from('hi')), 'ENOTSUP');
    await expectErrno(vfs.xattrs.set('/f.txt', 'trusted.x', Buffer.from('1')), 'ENOTSUP');
    await expectErrno(vfs.xattrs.remove('/f.txt', 'user.seafile.id'), 'ENOTSUP');
    await expectErrno(vfs.xattrs.get('/missing.txt', 'user.seafile.id'), 'ENOENT');
    expect(api.calls.lockFile ?? 0).toBe(0);
  });

  it('the root of all libraries has no attributes; a library folder under it has its own', async () => {
    const { repo, vfs } = await setup({ library: null });
    expect(await vfs.xattrs.list('/')).toEqual([]);
    await expectErrno(vfs.xattrs.get('/', 'user.seafile.status'), 'ENODATA');
    await expectErrno(vfs.xattrs.set('/', 'user.seafile.lock', Buffer.from('1')), 'ENOTSUP');
    expect(await get(vfs, '/Work Docs', 'user.seafile.library')).toBe(repo);
  });

  it('a dump of every attribute of a 2,000-file tree asks the server once per folder and once for its links', async () => {
    const { api, repo, vfs } = await setup();
    const dirs = 20;
    for (let d = 0; d < dirs; d++) api.putDir(repo, `/d${d}`);
    for (let d = 0; d < dirs; d++) for (let f = 0; f < 100; f++) api.putFile(repo, `/d${d}/f${f}.txt`, `${d}/${f}`);
    const before = { ...api.calls };
    let values = 0;
    for (let d = 0; d < dirs; d++) {
      values += Object.keys(await dump(vfs, `/d${d}`)).length;
      for (let f = 0; f < 100; f++) values += Object.keys(await dump(vfs, `/d${d}/f${f}.txt`)).length;
    }
    expect(values).toBe(dirs * 4 + dirs * 100 * 5);
    const made = Object.fromEntries(Object.entries(api.calls).map(([k, n]) => [k, n - (before[k] ?? 0)]));
    const total = Object.values(made).reduce((a, b) => a + b, 0);
    expect(made.createShareLink ?? 0).toBe(0);
    expect(made.listShareLinks).toBe(1);
    expect(total).toBeLessThanOrEqual(dirs + 2);
  });

  it('a folder made through the mount shows the id the server gives it, afresh once a file is uploaded into it', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/a/old');
    api.putFile(repo, '/a/old/kept.txt', 'kept');
    await vfs.readdir('/a');
    await vfs.mkdir('/a/new', 0o755);
    const serverId = async (name: string) => {
      const l = await api.listDir(repo, '/a');
      if (l.uptodate) throw new Error('unexpected uptodate');
      return l.entries.find((e) => e.name === name)!.id;
    };
    const listings = () => api.calls.listDir ?? 0;

    // made here after /a was listed: /a is listed again, once
    let before = listings();
    const made = await get(vfs, '/a/new', 'user.seafile.id');
    expect(listings() - before).toBe(1);
    expect(made).toBe(await serverId('new'));
    expect(await vfs.xattrs.list('/a/new')).toContain('user.seafile.id');

    // a file uploaded into it changes its id on the server
    await writeWhole(vfs, '/a/new/f.txt', 'content');
    expect(await vfs.drain()).toEqual([]);
    await sleep(1100); // a value read is answered unchanged for a second
    before = listings();
    const after = await get(vfs, '/a/new', 'user.seafile.id');
    expect(listings() - before).toBe(1);
    expect(after).not.toBe(made);
    expect(after).toBe(await serverId('new'));

    // nothing changed since: no listing; nor for a folder never changed here
    await sleep(1100);
    before = listings();
    expect(await get(vfs, '/a/new', 'user.seafile.id')).toBe(after);
    expect(await get(vfs, '/a/old', 'user.seafile.id')).toBe(await serverId('old'));
    expect(listings() - before).toBe(1); // serverId's own
  });

  it('a change two levels down makes the id of the folder above it asked afresh too', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/top/mid');
    api.putFile(repo, '/top/mid/a.txt', 'a');
    await vfs.readdir('/top/mid');
    const old = await get(vfs, '/top', 'user.seafile.id');
    await writeWhole(vfs, '/top/mid/b.txt', 'b');
    expect(await vfs.drain()).toEqual([]);
    await sleep(1100);
    const l = await api.listDir(repo, '/');
    if (l.uptodate) throw new Error('unexpected uptodate');
    const now = l.entries.find((e) => e.name === 'top')!.id;
    expect(now).not.toBe(old);
    expect(await get(vfs, '/top', 'user.seafile.id')).toBe(now);
  });
});
