// Who may call the endpoints of seahub's web interface that `seafs serve`
// added for seafile-js (api-web.ts, api-history-web.ts, api-tasks.ts,
// api-links-web.ts, api-sharing-web.ts): another account gets nothing of a
// library, link or group that is not its own. What each call answers is
// checked by test/compat/seafile-js.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, apiAs, createUser, getToken, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let eve: ReturnType<typeof apiAs>;
let repo = '';
let commit = '';

beforeAll(async () => {
  server = await startTestServer();
  admin = apiAs(server.url, await adminToken(server));
  await createUser(server, 'eve@seafs.test', 'eve-pw-1');
  eve = apiAs(server.url, await getToken(server.url, 'eve@seafs.test', 'eve-pw-1'));
  repo = (await admin('POST', '/api2/repos/', { form: { name: 'private' } })).json.repo_id;
  await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/secret' }, form: { operation: 'mkdir' } });
  commit = (await admin('GET', `/api/v2.1/repos/${repo}/history/`)).json.data[0].commit_id;
});

afterAll(async () => {
  await server?.stop();
});

describe("another account's library", () => {
  it('is neither read, listed, zipped, reverted, transferred nor deleted', async () => {
    const denied = [
      await eve('GET', `/api/v2.1/repos/${repo}/`),
      await eve('GET', `/api/v2.1/repos/${repo}/commits/${commit}/dir/`, { query: { path: '/' } }),
      await eve('POST', `/api/v2.1/repos/${repo}/commits/${commit}/revert/`),
      await eve('POST', `/api/v2.1/repos/${repo}/zip-task/`, { form: { parent_dir: '/', dirents: 'secret' } }),
      await eve('GET', '/api/v2.1/search-file/', { query: { repo_id: repo, q: 'secret' } }),
      await eve('GET', `/api2/repos/${repo}/history-limit/`),
      await eve('PUT', `/api2/repos/${repo}/owner/`, { form: { owner: 'eve@seafs.test' } }),
      await eve('POST', `/api/v2.1/repos/${repo}/trash/`, { json: { path: '/' } }),
      await eve('GET', `/api/v2.1/repos/${repo}/share-links/`),
      await eve('GET', `/api/v2.1/repos/${repo}/upload-links/`),
      await eve('POST', `/api/v2.1/starred-items/`, { form: { repo_id: repo, path: '/secret' } }),
      await eve('GET', '/api/v2.1/smart-link/', { query: { repo_id: repo, path: '/secret', is_dir: 'true' } }),
    ];
    for (const r of denied) expect([403, 404]).toContain(r.status);
    // as seahub for a library that is not there: success, and nothing deleted (checked below)
    expect((await eve('DELETE', `/api/v2.1/repos/${repo}/`)).json).toEqual({ success: true });
    const copy = await eve('POST', '/api/v2.1/repos/async-batch-copy-item/', {
      json: {
        src_repo_id: repo,
        src_parent_dir: '/',
        src_dirents: ['secret'],
        dst_repo_id: (await eve('POST', '/api2/repos/', { form: { name: 'eves' } })).json.repo_id,
        dst_parent_dir: '/',
      },
    });
    expect(copy.status).toBe(404);
    expect((await admin('GET', `/api2/repos/${repo}/owner/`)).json).toMatchObject({ owner: server.adminEmail });
    expect((await admin('GET', `/api2/repos/${repo}/dir/`)).json.map((e: { name: string }) => e.name)).toEqual([
      'secret',
    ]);
  });
});

describe("another account's links and groups", () => {
  it('cannot change or delete its links, nor manage its group', async () => {
    const link = (await admin('POST', '/api/v2.1/share-links/', { form: { repo_id: repo, path: '/secret' } })).json;
    const drop = (await admin('POST', '/api/v2.1/upload-links/', { form: { repo_id: repo, path: '/secret' } })).json;
    const past = new Date(Date.now() - 60_000).toISOString();
    expect((await eve('PUT', `/api/v2.1/share-links/${link.token}/`, { json: { expiration_time: past } })).status).toBe(
      403,
    );
    expect(
      (await eve('PUT', `/api/v2.1/upload-links/${drop.token}/`, { json: { expiration_time: past } })).status,
    ).toBe(403);
    const bulk = await eve('DELETE', '/api/v2.1/share-links/', { json: { tokens: [link.token] } });
    expect(bulk.json.failed).toEqual([{ token: link.token, error_msg: 'Permission denied.' }]);
    expect((await admin('GET', `/api/v2.1/share-links/${link.token}/`)).json.is_expired).toBe(false);
    expect((await admin('GET', `/api/v2.1/upload-links/${drop.token}/`)).json.is_expired).toBe(false);
    // nor can its owner ask for what links here do not do (the expiry asked with it is not set either)
    const edit = await admin('PUT', `/api/v2.1/share-links/${link.token}/`, {
      json: { permissions: JSON.stringify({ can_edit: true, can_download: true }), expiration_time: past },
    });
    expect(edit.status).toBe(400);
    expect((await admin('GET', `/api/v2.1/share-links/${link.token}/`)).json.is_expired).toBe(false);

    const g = (await admin('POST', '/api/v2.1/groups/', { form: { name: 'staff' } })).json.id;
    await admin('POST', `/api/v2.1/groups/${g}/members/`, { form: { email: 'eve@seafs.test' } });
    // a plain member adds no one, makes no admin, unshares no library of the group
    expect(
      (await eve('POST', `/api/v2.1/groups/${g}/members/bulk/`, { form: { emails: 'eve@seafs.test' } })).status,
    ).toBe(403);
    expect(
      (await eve('PUT', `/api/v2.1/groups/${g}/members/eve@seafs.test/`, { form: { is_admin: 'true' } })).status,
    ).toBe(403);
    await admin('PUT', `/api2/repos/${repo}/dir/shared_items/`, {
      query: { p: '/' },
      form: { share_type: 'group', group_id: String(g), permission: 'r' },
    });
    expect((await eve('DELETE', `/api/v2.1/groups/${g}/libraries/${repo}/`)).status).toBe(403);
    expect((await eve('GET', `/api2/repos/${repo}/`)).status).toBe(200);
    // nor shares a sub-folder of a library it can only read
    const sub = await eve('PUT', `/api2/repos/${repo}/dir/shared_items/`, {
      query: { p: '/secret' },
      form: { share_type: 'user', username: 'eve@seafs.test', permission: 'rw' },
    });
    expect(sub.status).toBe(403);
  });
});
