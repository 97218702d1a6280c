// Permissions, sharing, encrypted libraries, quotas and size limits of `seafs serve`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, uploadTo, startServerWithUsers, newLibrary, BOB, CAROL, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;
let carol: ReturnType<typeof apiAs>;
let repo: string;

beforeAll(async () => {
  // test knobs: unlocks last 2 s, uploads over 1 MB are refused
  ({
    server,
    admin,
    users: [bob, carol],
  } = await startServerWithUsers([BOB, CAROL], { extraArgs: ['--unlock-ttl', '2', '--max-upload-mb', '1'] }));
  repo = await newLibrary(admin, 'shared-lib', { 'doc.txt': 'hello' });
});

afterAll(async () => {
  await server?.stop();
});

describe('sharing and permissions', () => {
  it("another user's library is invisible", async () => {
    expect((await bob('GET', '/api2/repos/')).json).toEqual([]);
    expect((await bob('GET', `/api2/repos/${repo}/`)).status).toBe(404);
    expect((await bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).status).toBe(404);
    expect((await bob('GET', `/api2/repos/${repo}/file/`, { query: { p: '/doc.txt' } })).status).toBe(404);
    expect((await bob('GET', `/api2/repos/${repo}/upload-link/`)).status).toBe(404);
    expect((await bob('DELETE', `/api2/repos/${repo}/`)).status).toBe(404);
  });

  it('an r share lists and reads, and gets 403 on every write', async () => {
    const s = await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'r' },
    });
    expect(s.json).toBe('success');
    const libs = (await bob('GET', '/api2/repos/')).json;
    expect(libs).toHaveLength(1);
    expect(libs[0]).toMatchObject({
      id: repo,
      type: 'srepo',
      permission: 'r',
      share_type: 'personal',
      owner: server.adminEmail,
    });
    expect((await bob('GET', '/api2/repos/', { query: { type: 'shared' } })).json).toHaveLength(1);
    expect((await bob('GET', '/api2/repos/', { query: { type: 'mine' } })).json).toHaveLength(0);
    const listing = await bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } });
    expect(listing.json[0]).toMatchObject({ name: 'doc.txt', permission: 'r' });
    const link = (await bob('GET', `/api2/repos/${repo}/file/`, { query: { p: '/doc.txt' } })).json;
    expect(await (await fetch(link)).text()).toBe('hello');
    const writes = [
      bob('GET', `/api2/repos/${repo}/upload-link/`),
      bob('GET', `/api2/repos/${repo}/update-link/`),
      bob('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/x' }, form: { operation: 'mkdir' } }),
      bob('POST', `/api2/repos/${repo}/file/`, { query: { p: '/new.txt' }, form: { operation: 'create' } }),
      bob('POST', `/api2/repos/${repo}/file/`, {
        query: { p: '/doc.txt' },
        form: { operation: 'rename', newname: 'z.txt' },
      }),
      bob('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/doc.txt' } }),
      bob('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/' } }),
      bob('POST', `/api2/repos/${repo}/fileops/delete/`, { query: { p: '/' }, form: { file_names: 'doc.txt' } }),
      bob('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/doc.txt', operation: 'lock' } }),
      bob('POST', `/api2/repos/${repo}/`, { query: { op: 'rename' }, form: { repo_name: 'mine' } }),
    ];
    for (const w of await Promise.all(writes)) expect(w.status).toBe(403);
    // the library is untouched
    expect(
      (await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map((e: { name: string }) => e.name),
    ).toEqual(['doc.txt']);
    // carol still sees nothing
    expect((await carol('GET', `/api2/repos/${repo}/`)).status).toBe(404);
  });

  it('an rw share can write; unsharing hides the library again', async () => {
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      form: { share_type: 'personal', user: 'bob@seafs.test', permission: 'rw' },
    });
    const mk = await bob('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/from-bob' },
      form: { operation: 'mkdir' },
    });
    expect(mk.status).toBe(201);
    const items = (
      await admin('GET', `/api2/repos/${repo}/dir/shared_items/`, { query: { p: '/', share_type: 'user' } })
    ).json;
    expect(items).toEqual([
      expect.objectContaining({
        share_type: 'user',
        permission: 'rw',
        user_info: expect.objectContaining({ name: 'bob@seafs.test' }),
      }),
    ]);
    expect((await admin('GET', '/api2/shared-repos/')).json[0]).toMatchObject({
      repo_id: repo,
      user: 'bob@seafs.test',
      permission: 'rw',
    });
    const un = await admin('DELETE', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test' },
    });
    expect(un.json).toBe('success');
    expect((await bob('GET', `/api2/repos/${repo}/`)).status).toBe(404);
  });

  it("a file locked by its owner refuses others' changes (403, 423 on V2.1 delete)", async () => {
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      form: { share_type: 'personal', user: 'carol@seafs.test', permission: 'rw' },
    });
    expect((await admin('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/doc.txt', operation: 'lock' } })).json).toBe(
      'success',
    );
    const entry = (await carol('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.find(
      (e: { name: string }) => e.name === 'doc.txt',
    );
    expect(entry).toMatchObject({ is_locked: true, locked_by_me: false, lock_owner: server.adminEmail });
    const ren = await carol('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/doc.txt' },
      form: { operation: 'rename', newname: 'x.txt' },
    });
    expect(ren.status).toBe(403);
    expect((await carol('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/doc.txt' } })).status).toBe(403);
    expect((await carol('DELETE', `/api/v2.1/repos/${repo}/file/`, { query: { p: '/doc.txt' } })).status).toBe(423);
    expect(
      (await carol('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/doc.txt', operation: 'unlock' } })).status,
    ).toBe(403);
    expect(
      (await admin('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/doc.txt', operation: 'unlock' } })).json,
    ).toBe('success');
    await admin('DELETE', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'carol@seafs.test' },
    });
  });

  it('shares through dir/shared_items with p=/', async () => {
    const r = await admin('PUT', `/api2/repos/${repo}/dir/shared_items/`, {
      query: { p: '/' },
      form: { share_type: 'user', username: 'carol@seafs.test', permission: 'r' },
    });
    expect(r.json.success).toHaveLength(1);
    expect((await carol('GET', `/api2/repos/${repo}/`)).json).toMatchObject({ id: repo, permission: 'r' });
    const d = await admin('DELETE', `/api2/repos/${repo}/dir/shared_items/`, {
      query: { p: '/', share_type: 'user', username: 'carol@seafs.test' },
    });
    expect(d.json).toEqual({ success: true });
    expect((await carol('GET', `/api2/repos/${repo}/`)).status).toBe(404);
  });
});

describe('encrypted libraries', () => {
  it('as real servers: the web API answers without the password, the file server refuses content', async () => {
    const c = await admin('POST', '/api2/repos/', { form: { name: 'secret', passwd: 'p4ss' } });
    expect(c.json).toMatchObject({ encrypted: 1, enc_version: 2 });
    expect(c.json.magic).toMatch(/^[0-9a-f]{64}$/);
    const id = c.json.repo_id;
    const info = await admin('GET', `/api2/repos/${id}/`);
    expect(info.json).toMatchObject({ encrypted: true, password_need: true });
    expect((await admin('GET', `/api2/repos/${id}/dir/`, { query: { p: '/' } })).status).toBe(200);
    // links are given without the password; the file server answers as the C one: 500, no reason
    const locked = await admin('GET', `/api2/repos/${id}/upload-link/`);
    expect(locked.status).toBe(200);
    expect(await uploadTo(locked.json, '/', { 's.txt': 'x' })).toEqual({
      status: 500,
      text: '{"error": "Internal error\n"}',
    });
    expect((await admin('POST', `/api2/repos/${id}/`, { form: { password: 'wrong' } })).status).toBe(400);
    expect((await admin('POST', `/api2/repos/${id}/`, { form: { password: 'p4ss' } })).json).toBe('success');
    const unlockedAt = Date.now();
    expect((await admin('GET', `/api2/repos/${id}/`)).json.password_need).toBe(false);
    const link = (await admin('GET', `/api2/repos/${id}/upload-link/`)).json;
    const content = 'encrypted content 0123456789';
    expect((await uploadTo(link, '/', { 's.txt': content })).status).toBe(200);
    // ranges are ignored on encrypted libraries: 200 with the whole file
    const dl = (await admin('GET', `/api2/repos/${id}/file/`, { query: { p: '/s.txt' } })).json;
    const reusable = (await admin('GET', `/api2/repos/${id}/file/`, { query: { p: '/s.txt', reuse: '1' } })).json;
    const r = await fetch(dl, { headers: { Range: 'bytes=5-9' } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(content);
    const update = (await admin('GET', `/api2/repos/${id}/update-link/`)).json;
    // using the library does not extend the unlock: it ends --unlock-ttl (2 s) after the password was given
    while (Date.now() - unlockedAt < 1200) {
      expect((await fetch(reusable)).status).toBe(200);
      await new Promise((res) => setTimeout(res, 200));
    }
    await new Promise((res) => setTimeout(res, Math.max(0, unlockedAt + 2300 - Date.now())));
    const refused = await fetch(reusable);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toBe('Repo is encrypted. Please provide password to view it.\n');
    const upd = new FormData();
    upd.append('file', new Blob(['changed']), 's.txt');
    upd.append('target_file', '/s.txt');
    const u = await fetch(`${update}?ret-json=1`, { method: 'POST', body: upd });
    expect(u.status).toBe(500);
    expect(await u.text()).toBe('{"error": "Internal error\n"}');
    // listings and links still answer, never 440
    const listing = await admin('GET', `/api2/repos/${id}/dir/`, { query: { p: '/' } });
    expect(listing.status).toBe(200);
    expect(listing.json.map((e: { name: string }) => e.name)).toEqual(['s.txt']);
    expect((await admin('GET', `/api2/repos/${id}/file/`, { query: { p: '/s.txt' } })).status).toBe(200);
    expect((await admin('GET', `/api2/repos/${id}/file/detail/`, { query: { p: '/s.txt' } })).status).toBe(200);
    expect((await admin('GET', `/api2/repos/${id}/`)).json.password_need).toBe(true);
    // the content is unchanged; with the password again everything works
    expect((await admin('POST', `/api2/repos/${id}/`, { form: { password: 'p4ss' } })).json).toBe('success');
    expect(await (await fetch(reusable)).text()).toBe(content);
  });
});

describe('quota and size limits', () => {
  it('refuses uploads over the quota (443) and the upload link once over it', async () => {
    await admin('PUT', `/api2/accounts/${encodeURIComponent('carol@seafs.test')}/`, { form: { storage: '0.001' } }); // 1000 bytes
    expect((await carol('GET', '/api2/account/info/')).json).toMatchObject({ total: 1000, usage: 0 });
    const id = (await carol('POST', '/api2/repos/', { form: { name: 'small' } })).json.repo_id;
    const link = (await carol('GET', `/api2/repos/${id}/upload-link/`)).json;
    expect((await uploadTo(link, '/', { 'fits.bin': Buffer.alloc(600) })).status).toBe(200);
    const over = await uploadTo(link, '/', { 'over.bin': Buffer.alloc(600) });
    expect(over.status).toBe(443);
    expect(over.text).toContain('"error"');
    expect((await uploadTo(link, '/', { 'fill.bin': Buffer.alloc(400) })).status).toBe(200);
    expect((await carol('GET', '/api2/account/info/')).json.usage).toBe(1000);
    expect((await carol('GET', `/api2/repos/${id}/upload-link/`)).status).toBe(443);
    const names = (await carol('GET', `/api2/repos/${id}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).toEqual(['fill.bin', 'fits.bin']);
  });

  it('refuses files over the size limit with 442', async () => {
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`)).json;
    const r = await uploadTo(link, '/', { 'big.bin': Buffer.alloc(1_500_000) });
    expect(r.status).toBe(442);
    const names = (await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).not.toContain('big.bin');
  });
});
