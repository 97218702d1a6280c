// Extended attributes through a real mount, with the tools users have
// (getfattr, setfattr from Debian's `attr`): a file's and a folder's state,
// locks set both ways, a conflict copy, share links that work without a
// login, and the refusals (ENODATA, ENOTSUP). Checked through the API.
import { open } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { remoteBytes, remoteNames, waitRemoteFile } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, run, sleep, testEnv, type Mount } from '../helpers/mount.js';
import { createUser, startTestServer, uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['Attrs']);
const BOB = 'bob@seafs.test';
const BOB_PW = 'bob-secret-pw';
const SLOW_MS = 2500;

/** `getfattr -d`: every user.* attribute of `file` with its value */
async function dump(file: string): Promise<Record<string, string>> {
  const r = await run('getfattr', ['-d', '--absolute-names', file]);
  const out: Record<string, string> = {};
  for (const line of r.out.split('\n')) {
    const m = /^([^#=][^=]*)="(.*)"$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

/** `getfattr --only-values -n NAME`: the value, or the failure as getfattr prints it */
async function value(file: string, name: string): Promise<{ code: number; out: string; err: string }> {
  return run('getfattr', ['--only-values', '--absolute-names', '-n', name, file], { allowFail: true });
}

async function waitStatus(file: string, want: RegExp, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = (await value(file, 'user.seafile.status')).out;
    if (want.test(last)) return last;
    await sleep(250);
  }
  expect(last, `user.seafile.status of ${file} after ${timeoutMs} ms`).toMatch(want);
  return last;
}

/** `seafs status --json` of the mount: its pending uploads and folders (for a failure's message) */
async function pendingOf(mount: Mount): Promise<string> {
  const r = await run(process.execPath, [CLI, 'status', mount.mnt, '--json'], { env: testEnv(), allowFail: true });
  return `seafs status: ${r.out} ${r.err}`;
}

async function entryOf(dir: string, name: string) {
  const l = await ctx.api.listDir(ctx.repos.Attrs, dir);
  if (l.uptodate) throw new Error('unexpected uptodate');
  return l.entries.find((e) => e.name === name);
}

describe('extended attributes through the mount', () => {
  let m: Mount;
  const M = (p: string) => path.join(m.mnt, p);

  beforeAll(async () => {
    const tool = await run('getfattr', ['--version'], { allowFail: true }).catch(() => ({ code: 127 }));
    if (tool.code !== 0)
      throw new Error('getfattr/setfattr are missing: install the Debian package `attr` (scripts/setup does)');
    m = await mountLibrary(ctx.server, { library: 'Attrs', attrTimeout: 1, dirCacheTime: 1 });
  });

  it('getfattr -d shows a synced file and a folder: id, library, modifier, status, lock holder, web page', async () => {
    const repo = ctx.repos.Attrs;
    await run('mkdir', [M('docs')]);
    await run('bash', ['-c', `printf 'quarterly report' > '${M('docs/report.txt')}'`]);
    await waitRemoteFile(ctx.api, repo, '/docs/report.txt', Buffer.from('quarterly report'));
    await waitStatus(M('docs/report.txt'), /^synced$/);
    await sleep(1200); // the folder's listing afresh (modifier, ids)
    const file = await entryOf('/docs', 'report.txt');
    const folder = await entryOf('/', 'docs');
    expect(await dump(M('docs/report.txt'))).toEqual({
      'user.seafile.id': file!.id,
      'user.seafile.library': repo,
      'user.seafile.modifier': ctx.server.adminEmail,
      'user.seafile.status': 'synced',
      'user.seafile.locked_by': '',
      'user.seafile.url': `${ctx.server.url}/lib/${repo}/file/docs/report.txt`,
    });
    expect(await dump(M('docs'))).toEqual({
      'user.seafile.id': folder!.id,
      'user.seafile.library': repo,
      'user.seafile.status': 'synced',
      'user.seafile.url': `${ctx.server.url}/library/${repo}/Attrs/docs/`,
    });
    // listxattr (every namespace): only these names
    const names = await run('getfattr', ['-m', '-', '--absolute-names', M('docs/report.txt')]);
    expect(names.out.split('\n').filter((l) => l && !l.startsWith('#'))).toEqual([
      'user.seafile.id',
      'user.seafile.library',
      'user.seafile.locked_by',
      'user.seafile.modifier',
      'user.seafile.status',
      'user.seafile.url',
    ]);
  });

  it('a file written while the server is down is pending (its folder counts it), then synced', async () => {
    const repo = ctx.repos.Attrs;
    await run('mkdir', ['-p', M('offline/deep')]);
    await ctx.server.halt();
    try {
      await run('bash', ['-c', `printf 'written offline' > '${M('offline/deep/note.txt')}'`]);
      expect((await value(M('offline/deep/note.txt'), 'user.seafile.status')).out).toBe('pending');
      expect((await value(M('offline'), 'user.seafile.status')).out).toBe('1 pending');
    } finally {
      await ctx.server.restart({ samePort: true });
    }
    await waitStatus(M('offline/deep/note.txt'), /^synced$/);
    // the folder counts the same file states: synced too (a failure shows what the mount still holds)
    const folder = (await value(M('offline'), 'user.seafile.status')).out;
    expect(folder, folder === 'synced' ? '' : await pendingOf(m)).toBe('synced');
    expect((await remoteBytes(ctx.api, repo, '/offline/deep/note.txt')).toString()).toBe('written offline');
    // one upload landed: no second copy of the file (a retry taken for someone else's version)
    expect(await remoteNames(ctx.api, repo, '/offline/deep')).toEqual(['note.txt']);
  });

  it('a file written while the server is slowed (--latency-ms 2500) is pending (its folder counts it), then synced', async () => {
    // a server of its own: every answer 2.5 s late, so an upload (a link, then the POST) outlasts getfattr
    const slow = await startTestServer({ latencyMs: SLOW_MS });
    try {
      const { client } = await SeafileClient.login({ baseUrl: slow.url }, slow.adminEmail, slow.adminPassword);
      try {
        const repo = (await client.createLibrary('Slowed')).repo_id;
        const sm = await mountLibrary(slow, { library: 'Slowed', readyTimeoutMs: 120_000 });
        const S = (p: string) => path.join(sm.mnt, p);
        await run('mkdir', [S('docs')]);
        await run('bash', ['-c', `printf 'written while slow' > '${S('docs/slow.txt')}'`]);
        // the upload needs two answers at least (a link, the POST): 5 s
        expect((await value(S('docs/slow.txt'), 'user.seafile.status')).out).toBe('pending');
        expect((await value(S('docs'), 'user.seafile.status')).out).toBe('1 pending');
        await waitStatus(S('docs/slow.txt'), /^synced$/);
        expect((await value(S('docs'), 'user.seafile.status')).out).toBe('synced');
        expect((await remoteBytes(client, repo, '/docs/slow.txt')).toString()).toBe('written while slow');
        expect((await sm.unmount()).code).toBe(0);
      } finally {
        await client.close();
      }
    } finally {
      await slow.stop();
    }
  }, 300_000); // every answer late: the mount's start, the mkdir, the upload and the unmount (about 45 s under load)

  it('locked_by names another user who locked the file; setfattr user.seafile.lock 1/0 locks and unlocks', async () => {
    const repo = ctx.repos.Attrs;
    await createUser(ctx.server, BOB, BOB_PW);
    await ctx.api.shareLibrary(repo, [BOB], 'rw');
    const link = await ctx.api.uploadLink(repo, '/');
    expect((await uploadTo(link, '/', { 'theirs.docx': 'bob edits', 'mine.docx': 'mine' })).status).toBe(200);
    const { client: bob } = await SeafileClient.login({ baseUrl: ctx.server.url }, BOB, BOB_PW);
    try {
      await bob.lockFile(repo, '/theirs.docx');
      await sleep(1200);
      expect((await value(M('theirs.docx'), 'user.seafile.locked_by')).out).toBe(BOB);
      // someone else's lock: this account may not lift it
      const lift = await run('setfattr', ['-n', 'user.seafile.lock', '-v', '0', M('theirs.docx')], { allowFail: true });
      expect(lift.code).not.toBe(0);
      expect((await entryOf('/', 'theirs.docx'))?.is_locked).toBe(true);
      await bob.unlockFile(repo, '/theirs.docx');
    } finally {
      await bob.close();
    }

    await run('setfattr', ['-n', 'user.seafile.lock', '-v', '1', M('mine.docx')]);
    expect(await entryOf('/', 'mine.docx')).toMatchObject({ is_locked: true, locked_by_me: true });
    expect((await value(M('mine.docx'), 'user.seafile.locked_by')).out).toBe(ctx.server.adminEmail);
    await run('setfattr', ['-n', 'user.seafile.lock', '-v', '0', M('mine.docx')]);
    expect((await entryOf('/', 'mine.docx'))?.is_locked).toBeFalsy();
    await sleep(1100);
    expect((await value(M('mine.docx'), 'user.seafile.locked_by')).out).toBe('');
  });

  it('a conflict copy and the file beside it show conflict', async () => {
    const repo = ctx.repos.Attrs;
    const link = await ctx.api.uploadLink(repo, '/');
    expect((await uploadTo(link, '/', { 'plan.txt': 'base\n' })).status).toBe(200);
    await sleep(1200);
    const fh = await open(M('plan.txt'), 'r+');
    await fh.truncate(0);
    await fh.write('local edit\n', 0);
    expect((await uploadTo(link, '/', { 'plan.txt': 'their edit\n' }, { replace: true })).status).toBe(200);
    await fh.close();
    let copy: string | undefined;
    for (let i = 0; i < 240 && !copy; i++) {
      copy = (await remoteNames(ctx.api, repo, '/'))!.find((n) => /^plan \(SFConflict .*\)\.txt$/.test(n));
      if (!copy) await sleep(250);
    }
    expect(copy, 'a conflict copy on the server').toBeDefined();
    expect((await remoteBytes(ctx.api, repo, `/${copy}`)).toString()).toBe('local edit\n');
    await waitStatus(M(copy!), /^conflict$/);
    expect((await value(M('plan.txt'), 'user.seafile.status')).out).toBe('conflict');
  });

  it('share_link read twice gives one URL, and the URL downloads the file without a login', async () => {
    const repo = ctx.repos.Attrs;
    const first = await value(M('docs/report.txt'), 'user.seafile.share_link');
    expect(first.code, first.err).toBe(0);
    expect(first.out).toMatch(new RegExp(`^${ctx.server.url}/f/[0-9a-f]+/$`));
    await sleep(1100);
    expect((await value(M('docs/report.txt'), 'user.seafile.share_link')).out).toBe(first.out);
    const links = (await ctx.api.listShareLinks({ repoId: repo })).filter((l) => l.path === '/docs/report.txt');
    expect(links.map((l) => l.link)).toEqual([first.out]);
    // now listed, so getfattr -d shows it
    expect((await dump(M('docs/report.txt')))['user.seafile.share_link']).toBe(first.out);
    // a dump never makes links: the folder has none
    expect(Object.keys(await dump(M('docs')))).not.toContain('user.seafile.share_link');
    const docs = (await ctx.api.listShareLinks({ repoId: repo })).filter((l) => l.path.replace(/\/$/, '') === '/docs');
    expect(docs).toHaveLength(0);
    const res = await fetch(first.out); // anonymous, following the redirect to the file server
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).toString()).toBe('quarterly report');
  });

  it('an unknown name is ENODATA, and setting or removing anything but the lock is ENOTSUP', async () => {
    const f = M('docs/report.txt');
    for (const name of ['user.seafile.nope', 'user.comment', 'security.capability', 'trusted.x']) {
      const r = await value(f, name);
      expect(r.code, name).not.toBe(0);
      expect(r.err, name).toMatch(/No such attribute/);
    }
    for (const name of ['user.seafile.status', 'user.comment', 'security.selinux', 'trusted.x']) {
      const r = await run('setfattr', ['-n', name, '-v', 'x', f], { allowFail: true });
      expect(r.code, name).not.toBe(0);
      expect(r.err, name).toMatch(/Operation not supported/);
    }
    const rm = await run('setfattr', ['-x', 'user.seafile.id', f], { allowFail: true });
    expect(rm.err).toMatch(/Operation not supported/);
    // nothing changed on the server: the file is as it was
    expect((await remoteBytes(ctx.api, ctx.repos.Attrs, '/docs/report.txt')).toString()).toBe('quarterly report');
    const r = await m.unmount();
    expect(r.code, r.out + r.err).toBe(0);
  });
});
