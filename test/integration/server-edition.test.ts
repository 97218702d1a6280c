// `seafs serve --edition community|pro` answers file locks as seahub 10 CE
// and Pro do, and the v2.1 sync-batch move/copy as seahub 10 does; the client
// learns from server-info whether it may lock, and moves a folder whose name
// holds ':' (fileops split it in two).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import { adminClient, expectApiError } from '../helpers/client-setup.js';
import { adminToken, apiAs, startTestServer, uploadTo, type TestServer } from '../helpers/server.js';

type Call = ReturnType<typeof apiAs>;

async function setup(extraArgs: string[]) {
  const server = await startTestServer({ extraArgs });
  const call = apiAs(server.url, await adminToken(server));
  const client = await adminClient(server);
  const repo = (await client.createLibrary('lib')).repo_id;
  const link = await client.uploadLink(repo, '/');
  expect((await uploadTo(link, '/', { 'plan.txt': 'plan' })).status).toBe(200);
  return { server, call, client, repo };
}

const names = async (client: SeafileClient, repo: string, dir: string) => {
  const l = await client.listDir(repo, dir);
  if (l.uptodate) throw new Error('uptodate');
  return l.entries.map((e) => e.name).sort();
};

describe('seafs serve --edition community: no file locks, as seahub 10 CE', () => {
  let server: TestServer;
  let call: Call;
  let client: SeafileClient;
  let repo: string;
  beforeAll(async () => {
    ({ server, call, client, repo } = await setup(['--edition', 'community']));
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it('server-info lists only seafile-basic', async () => {
    const r = await call('GET', '/api2/server-info/');
    expect(r.json).toMatchObject({ encrypted_library_version: 2, features: ['seafile-basic'] });
  });

  it('a lock answers 500 with an HTML page, an unlock 403 "File is not locked"; listings carry no lock fields', async () => {
    const lock = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/plan.txt', operation: 'lock' } });
    expect(lock.status).toBe(500);
    expect(lock.headers.get('content-type')).toMatch(/^text\/html/);
    expect(lock.text).toContain('<h1>Page unavailable</h1>');
    const unlock = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/plan.txt', operation: 'unlock' } });
    expect([unlock.status, unlock.json]).toEqual([403, { error_msg: 'File is not locked' }]);
    const missing = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/no.txt', operation: 'lock' } });
    expect([missing.status, missing.json]).toEqual([400, { error_msg: 'Path is missing or invalid.' }]);
    const v21 = await call('PUT', `/api/v2.1/repos/${repo}/file/`, {
      query: { p: '/plan.txt' },
      json: { operation: 'lock' },
    });
    expect([v21.status, v21.json]).toEqual([
      403,
      { error_msg: 'file lock feature only supported in professional edition.' },
    ]);
    const entry = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json[0];
    expect(entry.name).toBe('plan.txt');
    expect(Object.keys(entry).filter((k) => /lock/.test(k))).toEqual([]);
    const detail = await call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/plan.txt' } });
    expect(detail.json).not.toHaveProperty('is_locked');
  });

  it('the client knows from server-info that it cannot lock, and says so without asking the server to', async () => {
    expect(await client.supportsFileLocks()).toBe(false);
    const e = await expectApiError(client.lockFile(repo, '/plan.txt'), 'unsupported');
    expect(e.serverMessage).toBe('this server does not support file locks');
    await expectApiError(client.unlockFile(repo, '/plan.txt'), 'unsupported');
  });
});

describe('seafs serve (pro, the default): file locks as seahub 10 answers them', () => {
  let server: TestServer;
  let call: Call;
  let client: SeafileClient;
  let repo: string;
  beforeAll(async () => {
    ({ server, call, client, repo } = await setup([]));
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  it('server-info lists seafile-pro; the client locks, and unlocking a file nobody locked succeeds', async () => {
    expect((await call('GET', '/api2/server-info/')).json.features).toEqual([
      'seafile-basic',
      'seafile-pro',
      'file-search',
    ]);
    const unlock = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/plan.txt', operation: 'unlock' } });
    expect([unlock.status, unlock.json]).toEqual([403, { error_msg: 'File is not locked' }]);
    expect(await client.supportsFileLocks()).toBe(true);
    await client.unlockFile(repo, '/plan.txt');
    await client.lockFile(repo, '/plan.txt');
    const again = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/plan.txt', operation: 'lock' } });
    expect([again.status, again.json]).toEqual([403, { error_msg: 'File is already locked' }]);
    const l = await client.listDir(repo, '/');
    expect(!l.uptodate && l.entries[0]).toMatchObject({ is_locked: true, locked_by_me: true });
    await client.unlockFile(repo, '/plan.txt');
    const after = await client.listDir(repo, '/');
    expect(!after.uptodate && after.entries[0]).toMatchObject({ is_locked: false });
  });

  it('moves and copies a folder named "a:b" with the client (sync-batch); fileops cannot name it', async () => {
    await client.mkdir(repo, '/a:b');
    await client.mkdir(repo, '/dst');
    const link = await client.uploadLink(repo, '/a:b');
    await uploadTo(link, '/a:b', { 'one.txt': '1', 'two:2.txt': '2' });
    const old = await call('POST', `/api2/repos/${repo}/fileops/move/`, {
      query: { p: '/' },
      form: { file_names: 'a:b', dst_repo: repo, dst_dir: '/dst' },
    });
    expect([old.status, old.json]).toEqual([400, { error_msg: 'file_names invalid.' }]);
    await client.batchMove(repo, '/', ['a:b'], repo, '/dst');
    expect(await names(client, repo, '/')).toEqual(['dst', 'plan.txt']);
    expect(await names(client, repo, '/dst/a:b')).toEqual(['one.txt', 'two:2.txt']);
    await client.batchCopy(repo, '/dst', ['a:b'], repo, '/');
    expect(await names(client, repo, '/a:b')).toEqual(['one.txt', 'two:2.txt']);
    expect(await names(client, repo, '/dst/a:b')).toEqual(['one.txt', 'two:2.txt']);
  });

  it('sync-batch answers as seahub 10: a 400 per missing field, 404 for a missing library or folder, success for a missing name', async () => {
    const body = {
      src_repo_id: repo,
      src_parent_dir: '/',
      src_dirents: ['plan.txt'],
      dst_repo_id: repo,
      dst_parent_dir: '/dst',
    };
    for (const field of Object.keys(body)) {
      const r = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', { json: { ...body, [field]: undefined } });
      expect([r.status, r.json]).toEqual([400, { error_msg: `${field} invalid.` }]);
    }
    const empty = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', { json: { ...body, src_dirents: [] } });
    expect([empty.status, empty.json]).toEqual([400, { error_msg: 'src_dirents invalid.' }]);
    const noLib = '00000000-0000-4000-8000-000000000000';
    const lib = await call('POST', '/api/v2.1/repos/sync-batch-copy-item/', { json: { ...body, dst_repo_id: noLib } });
    expect([lib.status, lib.json]).toEqual([404, { error_msg: `Library ${noLib} not found.` }]);
    const dir = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', {
      json: { ...body, dst_parent_dir: '/nope' },
    });
    expect([dir.status, dir.json]).toEqual([404, { error_msg: 'Folder /nope not found.' }]);
    // a name that is not there: success, and nothing moves (not even the names that are there)
    const ghost = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', {
      json: { ...body, src_dirents: ['plan.txt', 'ghost.txt'] },
    });
    expect([ghost.status, ghost.json]).toEqual([200, { success: true }]);
    expect(await names(client, repo, '/')).toContain('plan.txt');
    // into the folder it is in: the C server adds before it removes, so the name changes
    const same = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', {
      json: { ...body, dst_parent_dir: '/' },
    });
    expect([same.status, same.json]).toEqual([200, { success: true }]);
    expect(await names(client, repo, '/')).toEqual(['a:b', 'dst', 'plan (1).txt']);
  });

  it("a name holding '\"' does not move between folders of one library, as on seafile-server 10.0", async () => {
    await client.mkdir(repo, '/q"x');
    const single = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/plan (1).txt' },
      form: { operation: 'rename', newname: 'p"q.txt' },
    });
    expect(single.status).toBe(301);
    const mv = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/p"q.txt' },
      form: { operation: 'move', dst_repo: repo, dst_dir: '/dst' },
    });
    expect([mv.status, mv.json]).toEqual([500, { error_msg: 'SearpcError:move file failed' }]);
    for (const name of ['q"x']) {
      const sync = await call('POST', '/api/v2.1/repos/sync-batch-move-item/', {
        json: {
          src_repo_id: repo,
          src_parent_dir: '/',
          src_dirents: [name],
          dst_repo_id: repo,
          dst_parent_dir: '/dst',
        },
      });
      expect([sync.status, sync.json]).toEqual([500, { error_msg: 'Internal Server Error' }]);
    }
    const old = await call('POST', `/api2/repos/${repo}/fileops/move/`, {
      query: { p: '/' },
      form: { file_names: 'q"x', dst_repo: repo, dst_dir: '/dst' },
    });
    expect([old.status, old.json]).toEqual([520, { error_msg: 'Failed to move file.' }]);
    expect(await names(client, repo, '/')).toEqual(['a:b', 'dst', 'p"q.txt', 'q"x']);
    // a copy, and a quote elsewhere in the path, are fine
    await client.batchCopy(repo, '/', ['q"x'], repo, '/dst');
    await client.batchMove(repo, '/dst', ['a:b'], repo, '/q"x');
    expect(await names(client, repo, '/q"x')).toEqual(['a:b']);
  });

  it('batch-delete-item answers as seahub 10, and the client deletes a folder named "a:b" with it', async () => {
    const body = { repo_id: repo, parent_dir: '/q"x', dirents: ['a:b'] };
    for (const field of Object.keys(body)) {
      const r = await call('DELETE', '/api/v2.1/repos/batch-delete-item/', { json: { ...body, [field]: undefined } });
      expect([r.status, r.json]).toEqual([400, { error_msg: `${field} invalid.` }]);
    }
    const dir = await call('DELETE', '/api/v2.1/repos/batch-delete-item/', { json: { ...body, parent_dir: '/nope' } });
    expect([dir.status, dir.json]).toEqual([404, { error_msg: 'Folder /nope not found.' }]);
    const ghost = await call('DELETE', '/api/v2.1/repos/batch-delete-item/', { json: { ...body, dirents: ['ghost'] } });
    expect(ghost.status).toBe(200);
    expect(ghost.json).toMatchObject({ success: true });
    await client.batchDelete(repo, '/q"x', ['a:b']);
    expect(await names(client, repo, '/q"x')).toEqual([]);
  });
});
