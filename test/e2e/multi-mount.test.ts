// Several mounts and accounts: two mounts of one library see each other's
// changes within the cache time; a --read-only mount and a read-only (`r`)
// share refuse every write; a library shared to a group shows in a member's
// mount; the all-libraries mode lists libraries at the root, refuses changes
// there, and moves files across libraries.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { expectRemoteTree, remoteBytes, remoteNames, waitRemoteExists, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, sh, sleep } from '../helpers/mount.js';
import { adminToken, apiAs, createUser } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Shared', 'Mine', 'Second']);

const USER2 = 'reader@seafs.test';
const USER2_PW = 'reader-secret-pw';

/** Polls a shell check until it succeeds; returns the elapsed ms or fails with the last output. */
async function until(script: string, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  let last = '';
  for (;;) {
    const r = await sh(script, { allowFail: true });
    if (r.code === 0) return Date.now() - t0;
    last = r.out + r.err;
    if (Date.now() - t0 > timeoutMs) throw new Error(`not true after ${timeoutMs} ms: ${script}\n${last}`);
    await sleep(200);
  }
}

/** Every write tool run against `dir` must fail with one of `errors`; returns the messages. */
async function expectWritesRefused(dir: string, existing: string, errors: RegExp): Promise<void> {
  const attempts = [
    `echo new > ${q(dir)}/new-file.txt`,
    `touch ${q(dir)}/touched`,
    `echo more >> ${q(existing)}`,
    `printf X | dd of=${q(existing)} conv=notrunc status=none`,
    `truncate -s 0 ${q(existing)}`,
    `mkdir ${q(dir)}/newdir`,
    `rm -f ${q(existing)}`,
    `mv ${q(existing)} ${q(existing)}.moved`,
    `cp ${q(existing)} ${q(existing)}.copy`,
  ];
  for (const a of attempts) {
    const r = await sh(a, { allowFail: true });
    expect(r.code, `${a} must fail`).not.toBe(0);
    expect(r.err, a).toMatch(errors);
  }
}

describe('several mounts, read-only access, all-libraries mode', () => {
  beforeAll(async () => {
    await createUser(ctx.server, USER2, USER2_PW);
    await ctx.api.shareLibrary(ctx.repos.Shared, [USER2], 'r');
  });

  it("two mounts of one library see each other's changes after the cache time", async () => {
    const repo = ctx.repos.Mine;
    const opts = { library: 'Mine', dirCacheTime: 1, attrTimeout: 1 };
    const a = await mountLibrary(ctx.server, opts);
    const b = await mountLibrary(ctx.server, opts);
    const A = (p: string) => path.join(a.mnt, p);
    const B = (p: string) => path.join(b.mnt, p);
    // B lists the root first, so it has a cached listing to revalidate
    expect((await sh(`ls -A ${q(b.mnt)}`)).out).toBe('');

    await sh(`mkdir ${q(A('dir'))} && printf 'from A\\n' > ${q(A('dir/note.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/dir/note.txt', Buffer.from('from A\n'));
    const seen = await until(`test "$(cat ${q(B('dir/note.txt'))})" = 'from A'`, 15_000);
    // B edits it in place and adds a file; A sees both
    await sh(`printf 'edited by B, longer\\n' > ${q(B('dir/note.txt'))} && printf b > ${q(B('dir/b.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/dir/note.txt', Buffer.from('edited by B, longer\n'));
    await waitRemoteFile(ctx.api, repo, '/dir/b.txt', Buffer.from('b'));
    const seenBack = await until(
      `test "$(cat ${q(A('dir/note.txt'))})" = 'edited by B, longer' && test -f ${q(A('dir/b.txt'))}`,
      15_000,
    );
    // A deletes and renames; B stops seeing the old names
    await sh(`rm ${q(A('dir/b.txt'))} && mv ${q(A('dir/note.txt'))} ${q(A('dir/renamed.txt'))}`);
    await waitRemoteExists(ctx.api, repo, '/dir/renamed.txt', true);
    const gone = await until(`test "$(ls ${q(B('dir'))})" = renamed.txt && ! test -e ${q(B('dir/b.txt'))}`, 15_000);
    console.log(
      `two mounts (--dir-cache-time 1): B saw A's file ${seen} ms after upload, A saw B's edit after ${seenBack} ms, deletes after ${gone} ms`,
    );
    // a change made through the API (another client) shows up too
    await ctx.api.renameFile(repo, '/dir/renamed.txt', 'by-api.txt');
    await until(`test -f ${q(A('dir/by-api.txt'))} && test -f ${q(B('dir/by-api.txt'))}`, 15_000);
    expect((await a.unmount()).code).toBe(0);
    expect((await b.unmount()).code).toBe(0);
  });

  it('two mounts writing 25 files each into one folder at the same time: all 50 on the server, both see all', async () => {
    const repo = ctx.repos.Mine;
    const opts = { library: 'Mine', dirCacheTime: 1, attrTimeout: 1 };
    const a = await mountLibrary(ctx.server, opts);
    const b = await mountLibrary(ctx.server, opts);
    await sh(`mkdir ${q(a.mnt)}/both`);
    await until(`test -d ${q(b.mnt)}/both`, 15_000);
    const write = (dir: string, tag: string) =>
      sh(
        `for i in $(seq 1 25); do head -c $((i * 3001)) /dev/zero | tr '\\0' '${tag}' > ${q(dir)}/both/${tag}$i.txt; done`,
      );
    await Promise.all([write(a.mnt, 'a'), write(b.mnt, 'b')]);
    const want = [
      ...Array.from({ length: 25 }, (_, i) => `a${i + 1}.txt`),
      ...Array.from({ length: 25 }, (_, i) => `b${i + 1}.txt`),
    ].sort();
    for (const n of want)
      await waitRemoteFile(ctx.api, repo, `/both/${n}`, Buffer.alloc(Number(n.slice(1, -4)) * 3001, n[0]));
    expect(await remoteNames(ctx.api, repo, '/both')).toEqual(want);
    await until(`test "$(ls ${q(a.mnt)}/both | wc -l)" = 50 && test "$(ls ${q(b.mnt)}/both | wc -l)" = 50`, 15_000);
    expect((await sh(`cat ${q(a.mnt)}/both/b25.txt | wc -c`)).out.trim()).toBe(String(25 * 3001));
    expect((await a.unmount()).code).toBe(0);
    expect((await b.unmount()).code).toBe(0);
    await ctx.api.deleteDir(repo, '/both');
  });

  it('a --read-only mount refuses every write with EROFS and still reads', async () => {
    const repo = ctx.repos.Mine;
    const m = await mountLibrary(ctx.server, { library: 'Mine', readOnly: true });
    const f = path.join(m.mnt, 'dir/by-api.txt');
    expect((await sh(`cat ${q(f)}`)).out).toBe('edited by B, longer\n');
    await expectWritesRefused(path.join(m.mnt, 'dir'), f, /Read-only file system/);
    expect((await remoteBytes(ctx.api, repo, '/dir/by-api.txt')).toString()).toBe('edited by B, longer\n');
    expect(await remoteNames(ctx.api, repo, '/dir')).toEqual(['by-api.txt']);
    expect((await m.unmount()).code).toBe(0);
  });

  it('a read-only share (`r`) refuses writes with EROFS or EACCES, in library and all-libraries mode', async () => {
    const repo = ctx.repos.Shared;
    await ctx.api.mkdir(repo, '/docs');
    const link = await ctx.api.uploadLink(repo, '/docs');
    const local = path.join(ctx.src, 'shared.txt');
    writeFileSync(local, 'shared content\n');
    await ctx.api.upload(link, '/docs', local, 'shared.txt');

    const lib = await mountLibrary(ctx.server, { library: 'Shared', user: USER2, password: USER2_PW });
    const f = path.join(lib.mnt, 'docs/shared.txt');
    expect((await sh(`cat ${q(f)}`)).out).toBe('shared content\n');
    await expectWritesRefused(path.join(lib.mnt, 'docs'), f, /Read-only file system|Permission denied/);
    expect((await lib.unmount()).code).toBe(0);

    const all = await mountLibrary(ctx.server, { user: USER2, password: USER2_PW });
    expect((await sh(`ls ${q(all.mnt)}`)).out).toBe('Shared\n');
    const g = path.join(all.mnt, 'Shared/docs/shared.txt');
    expect((await sh(`cat ${q(g)}`)).out).toBe('shared content\n');
    await expectWritesRefused(path.join(all.mnt, 'Shared/docs'), g, /Read-only file system|Permission denied/);
    expect((await all.unmount()).code).toBe(0);

    await waitRemoteFile(ctx.api, repo, '/docs/shared.txt', Buffer.from('shared content\n'), 1000);
    expect(await remoteNames(ctx.api, repo, '/docs')).toEqual(['shared.txt']);
  });

  it('a read-write share (`rw`) takes writes from the other account, which the owner sees', async () => {
    await ctx.api.shareLibrary(ctx.repos.Second, [USER2], 'rw');
    try {
      const m = await mountLibrary(ctx.server, { user: USER2, password: USER2_PW });
      expect((await sh(`ls ${q(m.mnt)}`)).out).toBe('Second\nShared\n');
      await sh(
        `mkdir ${q(m.mnt)}/Second/from-reader && printf 'written by the reader' > ${q(m.mnt)}/Second/from-reader/note.txt`,
      );
      await waitRemoteFile(ctx.api, ctx.repos.Second, '/from-reader/note.txt', Buffer.from('written by the reader'));
      await sh(`rm -r ${q(m.mnt)}/Second/from-reader`);
      await waitRemoteExists(ctx.api, ctx.repos.Second, '/from-reader', false);
      expect((await m.unmount()).code).toBe(0);
    } finally {
      await ctx.api.unshareLibrary(ctx.repos.Second, USER2);
    }
  });

  it("a library shared to a group shows at the root of a member's all-libraries mount and takes the member's writes", async () => {
    const admin = apiAs(ctx.server.url, await adminToken(ctx.server));
    const group = (await admin('POST', '/api/v2.1/groups/', { form: { name: 'e2e-team' } })).json as { id: number };
    // 201, as seahub answers a new member
    expect((await admin('POST', `/api/v2.1/groups/${group.id}/members/`, { form: { email: USER2 } })).status).toBe(201);
    const share = await admin('PUT', `/api2/shared-repos/${ctx.repos.Mine}/`, {
      query: { share_type: 'group', group_id: String(group.id), permission: 'rw' },
    });
    expect(share.json).toBe('success');
    try {
      const m = await mountLibrary(ctx.server, { user: USER2, password: USER2_PW });
      expect((await sh(`ls ${q(m.mnt)}`)).out).toBe('Mine\nShared\n');
      await sh(`printf 'written through the group' > ${q(m.mnt)}/Mine/group-note.txt`);
      await waitRemoteFile(ctx.api, ctx.repos.Mine, '/group-note.txt', Buffer.from('written through the group'));
      await sh(`rm ${q(m.mnt)}/Mine/group-note.txt`);
      await waitRemoteExists(ctx.api, ctx.repos.Mine, '/group-note.txt', false);
      expect((await m.unmount()).code).toBe(0);
    } finally {
      await admin('DELETE', `/api/v2.1/groups/${group.id}/`);
    }
  });

  it('all-libraries mode: the root lists libraries, refuses changes, and files move across libraries', async () => {
    const m = await mountLibrary(ctx.server, {});
    const R = (p = '') => path.join(m.mnt, p);
    expect((await sh(`ls ${q(R())}`)).out).toBe('Mine\nSecond\nShared\n');
    expect((await sh(`stat -c %F ${q(R('Mine'))}`)).out).toBe('directory\n');
    for (const [cmd, err] of [
      [`mkdir ${q(R('NewLibrary'))}`, /Operation not permitted|Permission denied|Read-only file system/],
      [`touch ${q(R('file-at-root'))}`, /Operation not permitted|Permission denied|Read-only file system/],
      [`rmdir ${q(R('Second'))}`, /Operation not permitted|Permission denied|Read-only file system/],
      [`rm -rf ${q(R('Second'))}`, /Operation not permitted|Permission denied|Read-only file system/],
      [`mv ${q(R('Second'))} ${q(R('Renamed'))}`, /Operation not permitted|Permission denied|Read-only file system/],
    ] as const) {
      const r = await sh(cmd, { allowFail: true });
      expect(r.code, `${cmd} must fail`).not.toBe(0);
      expect(r.err, cmd).toMatch(err);
    }
    expect((await ctx.api.listLibraries()).map((l) => l.name).sort()).toEqual(['Mine', 'Second', 'Shared']);

    // inside a library everything works; moves cross libraries
    await sh(`mkdir -p ${q(R('Second/in'))} && printf 'cross\\n' > ${q(R('Second/in/x.txt'))}`);
    await sh(`mv ${q(R('Second/in/x.txt'))} ${q(R('Mine/x.txt'))} && mv ${q(R('Second/in'))} ${q(R('Mine/in-moved'))}`);
    expect((await sh(`ls ${q(R('Second'))}`)).out).toBe('');
    await waitRemoteFile(ctx.api, ctx.repos.Mine, '/x.txt', Buffer.from('cross\n'));
    await waitRemoteExists(ctx.api, ctx.repos.Mine, '/in-moved', true);
    expect(await remoteNames(ctx.api, ctx.repos.Second, '/')).toEqual([]);
    // a folder with content, uploaded then still dirty, across libraries
    const T = path.join(ctx.src, 'xlib');
    mkdirSync(path.join(T, 'a/b'), { recursive: true });
    writeFileSync(path.join(T, 'top.txt'), 'top\n');
    writeFileSync(path.join(T, 'a/b/deep.txt'), 'deep\n'.repeat(5000));
    await sh(`cp -r ${q(T)} ${q(R('Second/xlib'))}`);
    await waitRemoteFile(ctx.api, ctx.repos.Second, '/xlib/a/b/deep.txt', path.join(T, 'a/b/deep.txt'));
    await sh(`mv ${q(R('Second/xlib'))} ${q(R('Mine/xlib-moved'))}`);
    await sh(`cp -r ${q(T)} ${q(R('Second/xlib2'))} && mv ${q(R('Second/xlib2'))} ${q(R('Shared/xlib2'))}`);
    expect((await sh(`ls ${q(R('Second'))}`)).out).toBe('');
    await expectRemoteTree(ctx.api, ctx.repos.Mine, '/xlib-moved', T);
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await expectRemoteTree(ctx.api, ctx.repos.Shared, '/xlib2', T);
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await sleep(300);
      }
    }
    expect(await remoteNames(ctx.api, ctx.repos.Second, '/')).toEqual([]);
    // the owner still writes to the library it shares read-only
    await sh(`printf owner > ${q(R('Shared/docs/owner.txt'))}`);
    await waitRemoteFile(ctx.api, ctx.repos.Shared, '/docs/owner.txt', Buffer.from('owner'));
    expect((await m.unmount()).code).toBe(0);
  });

  it('a library created through the API appears at the root of a running all-libraries mount', async () => {
    const m = await mountLibrary(ctx.server, { dirCacheTime: 1 });
    expect((await sh(`ls ${q(m.mnt)}`)).out).toBe('Mine\nSecond\nShared\n');
    const { client } = await SeafileClient.login(
      { baseUrl: ctx.server.url },
      ctx.server.adminEmail,
      ctx.server.adminPassword,
    );
    let later: string;
    try {
      later = (await client.createLibrary('Later ü #1')).repo_id;
    } finally {
      await client.close();
    }
    await until(`ls ${q(m.mnt)} | grep -qx 'Later ü #1'`, 15_000);
    // a library whose name needs quoting takes writes like any other
    await sh(`printf 'in later' > ${q(path.join(m.mnt, 'Later ü #1', 'f.txt'))}`);
    await waitRemoteFile(ctx.api, later!, '/f.txt', Buffer.from('in later'));
    expect((await m.unmount()).code).toBe(0);
  });
});
