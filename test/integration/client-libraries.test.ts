// The client against `seafs serve`: libraries, encryption, permissions of
// shares and strangers, history and trash, persistence across a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FAST, LocalFiles, adminClient, expectApiError, fetchFile, newUser, readAll } from '../helpers/client-setup.js';

const UNLOCK_TTL = 2; // seconds, so the expiry can be observed

let server: TestServer;
let admin: SeafileClient;
let bob: SeafileClient; // gets an `r` share
let carol: SeafileClient; // gets an `rw` share
let eve: SeafileClient; // gets nothing
const files = new LocalFiles();
const clients: SeafileClient[] = [];

beforeAll(async () => {
  server = await startTestServer({ extraArgs: ['--unlock-ttl', String(UNLOCK_TTL)] });
  admin = await adminClient(server);
  bob = await newUser(server, admin, 'bob@seafs.test');
  carol = await newUser(server, admin, 'carol@seafs.test');
  eve = await newUser(server, admin, 'eve@seafs.test');
  clients.push(admin, bob, carol, eve);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
  files.cleanup();
});

async function put(
  c: SeafileClient,
  repo: string,
  dir: string,
  name: string,
  content: string | Buffer,
): Promise<string> {
  const link = await c.uploadLink(repo, dir);
  const [f] = await c.upload(link, dir, files.write(content), name);
  return f!.id;
}

describe('libraries', () => {
  it('creates, lists (with type), reads, renames and deletes a library', async () => {
    const created = await admin.createLibrary('Plain', { desc: 'a test' });
    expect(created.repo_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.repo_name).toBe('Plain');
    const id = created.repo_id;

    const all = await admin.listLibraries();
    const mine = await admin.listLibraries('mine');
    for (const list of [all, mine]) {
      const l = list.find((x) => x.id === id);
      expect(l).toMatchObject({
        name: 'Plain',
        owner: server.adminEmail,
        permission: 'rw',
        encrypted: false,
        type: 'repo',
      });
    }
    expect((await admin.listLibraries('shared')).find((x) => x.id === id)).toBeUndefined();

    const info = await admin.getLibrary(id);
    // as seahub's Repo.get: the owner as seen from the caller's side
    expect(info).toMatchObject({ id, name: 'Plain', owner: 'self', encrypted: false });

    await admin.renameLibrary(id, 'Renamed');
    expect((await admin.getLibrary(id)).name).toBe('Renamed');

    await admin.deleteLibrary(id);
    await expectApiError(admin.getLibrary(id), 'not_found', 404);
    expect((await admin.listLibraries()).find((x) => x.id === id)).toBeUndefined();
  });

  it('reports an unknown library as not_found', async () => {
    await expectApiError(admin.getLibrary('00000000-0000-4000-8000-000000000000'), 'not_found', 404);
    await expectApiError(admin.listDir('00000000-0000-4000-8000-000000000000', '/'), 'not_found', 404);
  });
});

describe('encrypted libraries', () => {
  it('the file server refuses content until unlocked; the password is forgotten after the TTL and given again', async () => {
    const lib = await admin.createLibrary('Secret', { password: 'open sesame' });
    const id = lib.repo_id;
    expect((await admin.getLibrary(id)).encrypted).toBe(true);
    expect((await admin.listLibraries()).find((x) => x.id === id)?.encrypted).toBe(true);

    // creating a library does not unlock it: links are given (as by seahub), the file server refuses
    const refusedUpload = await expectApiError(
      admin.upload(await admin.uploadLink(id, '/'), '/', files.write('x'), 'x.txt', { repoId: id }),
      'server',
      500,
    );
    expect(refusedUpload.serverMessage).toBe('Internal error');
    await expectApiError(admin.unlockLibrary(id, 'wrong'), 'password_required', 400);

    await admin.unlockLibrary(id, 'open sesame');
    await put(admin, id, '/', 'hidden.txt', 'the secret content');
    expect((await fetchFile(admin, id, '/hidden.txt')).toString()).toBe('the secret content');

    // ranges on an encrypted library: real servers answer 200 with the whole file; start says where body begins
    const link = await admin.downloadLink(id, '/hidden.txt', { reuse: true });
    const r = await admin.download(link.url, { start: 4, end: 9 });
    const body = await readAll(r.body);
    expect([200, 206]).toContain(r.status);
    expect(body.subarray(4 - r.start, 10 - r.start).toString()).toBe('secret');

    // after the TTL the server has forgotten: listings and links still answer, the file server refuses
    await new Promise((r) => setTimeout(r, (UNLOCK_TTL + 1) * 1000));
    const listing = await admin.listDir(id, '/');
    expect(listing.uptodate ? [] : listing.entries.map((e) => e.name)).toContain('hidden.txt');
    const stale = await admin.downloadLink(id, '/hidden.txt', { reuse: true });
    const refused = await expectApiError(admin.download(stale.url), 'password_required', 400);
    expect(refused.serverMessage).toBe('Repo is encrypted. Please provide password to view it.');
    // given the library, the client that holds the password unlocks again and carries on
    expect(await readAll((await admin.download(stale.url, undefined, { repoId: id })).body)).toEqual(
      Buffer.from('the secret content'),
    );
    // a client that never had the password gets the refusal, then works once the server holds it again
    const other = new SeafileClient({ baseUrl: server.url, token: admin.token, ...FAST });
    clients.push(other);
    await new Promise((r) => setTimeout(r, (UNLOCK_TTL + 1) * 1000));
    await expectApiError(fetchFile(other, id, '/hidden.txt'), 'password_required', 400);
    const newer = files.write('the newer content');
    expect((await admin.update(await admin.updateLink(id, '/'), '/hidden.txt', newer, { repoId: id })).length).toBe(40);
    expect((await fetchFile(other, id, '/hidden.txt')).toString()).toBe('the newer content');
  });

  it('refuses to unlock a library that is not encrypted (409)', async () => {
    const lib = await admin.createLibrary('NotSecret');
    await expectApiError(admin.unlockLibrary(lib.repo_id, 'x'), 'conflict', 409);
  });
});

describe('permissions', () => {
  let shared: string;

  beforeAll(async () => {
    shared = (await admin.createLibrary('Shared')).repo_id;
    await admin.mkdir(shared, '/docs');
    await put(admin, shared, '/docs', 'readme.txt', 'hello');
  });

  it('keeps a library invisible to a user it is not shared with', async () => {
    expect((await eve.listLibraries()).find((x) => x.id === shared)).toBeUndefined();
    const e = await eve.getLibrary(shared).catch((x: unknown) => x);
    expect(['not_found', 'forbidden']).toContain((e as { kind?: string }).kind);
    // each failure is caught where its call starts: one still pending while an earlier one is
    // awaited would otherwise be an unhandled rejection
    const calls = [
      eve.listDir(shared, '/'),
      eve.downloadLink(shared, '/docs/readme.txt'),
      eve.mkdir(shared, '/x'),
      eve.uploadLink(shared, '/'),
    ];
    for (const err of await Promise.all(calls.map((p) => (p as Promise<unknown>).catch((x: unknown) => x)))) {
      expect(['not_found', 'forbidden']).toContain((err as { kind?: string }).kind);
    }
  });

  it('lets an `r` share read and refuses every write with forbidden', async () => {
    await admin.shareLibrary(shared, ['bob@seafs.test'], 'r');
    const seen = (await bob.listLibraries('shared')).find((x) => x.id === shared);
    expect(seen).toMatchObject({ permission: 'r', type: 'srepo', owner: server.adminEmail });
    expect((await bob.listLibraries('mine')).find((x) => x.id === shared)).toBeUndefined();

    const l = await bob.listDir(shared, '/docs');
    expect(l.uptodate === false && l.entries.map((e) => e.name)).toEqual(['readme.txt']);
    expect((await fetchFile(bob, shared, '/docs/readme.txt')).toString()).toBe('hello');

    await expectApiError(bob.mkdir(shared, '/new'), 'forbidden', 403);
    await expectApiError(bob.createFile(shared, '/docs/new.txt'), 'forbidden', 403);
    await expectApiError(bob.renameFile(shared, '/docs/readme.txt', 'x.txt'), 'forbidden', 403);
    await expectApiError(bob.moveFile(shared, '/docs/readme.txt', shared, '/'), 'forbidden', 403);
    await expectApiError(bob.deleteFile(shared, '/docs/readme.txt'), 'forbidden', 403);
    await expectApiError(bob.deleteDir(shared, '/docs'), 'forbidden', 403);
    await expectApiError(bob.renameDir(shared, '/docs', 'd2'), 'forbidden', 403);
    await expectApiError(bob.uploadLink(shared, '/docs'), 'forbidden', 403);
    await expectApiError(bob.updateLink(shared, '/docs'), 'forbidden', 403);
    await expectApiError(bob.batchDelete(shared, '/docs', ['readme.txt']), 'forbidden', 403);
    await expectApiError(bob.renameLibrary(shared, 'mine now'), 'forbidden', 403);
    await expectApiError(bob.deleteLibrary(shared), 'forbidden', 403);
    // nothing changed
    expect((await admin.getLibrary(shared)).name).toBe('Shared');
    expect((await fetchFile(admin, shared, '/docs/readme.txt')).toString()).toBe('hello');
  });

  it('lets an `rw` share write but not delete the library', async () => {
    await admin.shareLibrary(shared, ['carol@seafs.test'], 'rw');
    expect((await carol.listLibraries()).find((x) => x.id === shared)?.permission).toBe('rw');
    await carol.mkdir(shared, '/carol');
    await put(carol, shared, '/carol', 'c.txt', 'from carol');
    expect((await fetchFile(admin, shared, '/carol/c.txt')).toString()).toBe('from carol');
    await expectApiError(carol.deleteLibrary(shared), 'forbidden', 403);
  });

  it('takes access away on unshare', async () => {
    await admin.unshareLibrary(shared, 'bob@seafs.test');
    expect((await bob.listLibraries()).find((x) => x.id === shared)).toBeUndefined();
    const err = await bob.listDir(shared, '/').catch((x: unknown) => x);
    expect(['not_found', 'forbidden']).toContain((err as { kind?: string }).kind);
  });
});

describe('history and trash', () => {
  it('lists library history (V2 and V2.1) and the trash (V2.1), paging both', async () => {
    const id = (await admin.createLibrary('Hist')).repo_id;
    await admin.mkdir(id, '/d');
    await put(admin, id, '/d', 'one.txt', '1');
    await put(admin, id, '/d', 'two.txt', '22');
    await admin.deleteFile(id, '/d/one.txt');
    await admin.deleteFile(id, '/d/two.txt');

    const v2 = await admin.libraryHistory(id);
    expect(v2.commits.length).toBeGreaterThanOrEqual(5);
    for (const c of v2.commits) {
      expect(c.id).toMatch(/^[0-9a-f]{40}$/);
      expect(c.repo_id).toBe(id);
      expect(typeof c.ctime).toBe('number');
      expect(typeof c.desc).toBe('string');
    }
    expect(v2.commits[0]!.parent_id).toBe(v2.commits[1]!.id);

    const p1 = await admin.libraryHistoryV21(id, { page: 1, perPage: 2 });
    expect(p1.data).toHaveLength(2);
    expect(p1.more).toBe(true);
    expect(p1.data[0]!.commit_id).toBe(v2.commits[0]!.id);
    expect(Number.isNaN(Date.parse(p1.data[0]!.time))).toBe(false);
    const p2 = await admin.libraryHistoryV21(id, { page: 2, perPage: 2 });
    expect(p2.data[0]!.commit_id).toBe(v2.commits[2]!.id);

    const names: string[] = [];
    let page = await admin.libraryTrash(id, { perPage: 1 });
    for (let i = 0; i < 20; i++) {
      names.push(...page.data.map((e) => e.obj_name));
      if (!page.more) break;
      page = await admin.libraryTrash(id, { perPage: 1, scanStat: page.scan_stat });
    }
    expect(names.sort()).toEqual(['one.txt', 'two.txt']);
    const whole = await admin.libraryTrash(id);
    const one = whole.data.find((e) => e.obj_name === 'one.txt')!;
    expect(one).toMatchObject({ is_dir: false, size: 1 });
    expect(one.parent_dir.replace(/\/$/, '')).toBe('/d');
  });

  it('restores a trashed folder with revertDir and a trashed file with revertFile, at their commits', async () => {
    const id = (await admin.createLibrary('Restore')).repo_id;
    await admin.mkdir(id, '/keep/inner', { createParents: true });
    await put(admin, id, '/keep/inner', 'k.txt', 'kept');
    await put(admin, id, '/', 'f.txt', 'file');
    await admin.deleteDir(id, '/keep');
    await admin.deleteFile(id, '/f.txt');
    const trash = (await admin.libraryTrash(id)).data;
    const dir = trash.find((e) => e.obj_name === 'keep')!;
    const file = trash.find((e) => e.obj_name === 'f.txt')!;
    await admin.revertDir(id, '/keep', dir.commit_id);
    await admin.revertFile(id, '/f.txt', file.commit_id);
    const listing = await admin.listDir(id, '/keep/inner');
    expect(listing.uptodate ? [] : listing.entries.map((e) => e.name)).toEqual(['k.txt']);
    expect((await admin.fileDetail(id, '/f.txt')).size).toBe(4);
    // back at their paths: no longer in the trash
    expect((await admin.libraryTrash(id)).data).toEqual([]);
  });
});

describe('persistence', () => {
  it('keeps libraries, folders, files, shares and tokens across a restart', async () => {
    const id = (await admin.createLibrary('Durable')).repo_id;
    await admin.mkdir(id, '/a/b', { createParents: true });
    const content = Buffer.alloc(300_000);
    for (let i = 0; i < content.length; i++) content[i] = (i * 7) & 0xff;
    const fid = await put(admin, id, '/a/b', 'data.bin', content);
    await admin.shareLibrary(id, ['carol@seafs.test'], 'r');
    const before = await admin.listDir(id, '/a/b');

    await server.restart();
    const token = admin.token!;
    const again = new SeafileClient({ baseUrl: server.url, token, ...FAST });
    const carol2 = new SeafileClient({ baseUrl: server.url, token: carol.token, ...FAST });
    clients.push(again, carol2);
    await again.authPing();

    expect((await again.listLibraries()).find((x) => x.id === id)?.name).toBe('Durable');
    const after = await again.listDir(id, '/a/b');
    expect(after).toEqual(before);
    expect(after.uptodate === false && after.entries[0]).toMatchObject({
      name: 'data.bin',
      id: fid,
      size: content.length,
    });
    expect((await fetchFile(again, id, '/a/b/data.bin')).equals(content)).toBe(true);
    expect((await carol2.listLibraries()).find((x) => x.id === id)?.permission).toBe('r');
    // the old oid still validates a cached listing
    expect(before.uptodate === false && (await again.listDir(id, '/a/b', { oid: before.oid! }))).toEqual({
      uptodate: true,
      oid: before.uptodate === false ? before.oid : '',
    });
  });
});
