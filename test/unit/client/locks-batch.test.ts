// The client against scripted servers answering as seahub 10 does: file locks
// learned once from server-info (or from Community Edition's 500/403 answers)
// and never retried, and batch moves through the v2.1 sync-batch endpoint
// with the names as a JSON array (fileops splits them on ':'), falling back
// to fileops only where the endpoint is missing.
import { describe, expect, it } from 'vitest';
import { clientFixture, failure, json, type Handler, type Seen } from '../../helpers/client-fixture.js';

const { setup } = clientFixture();

/** Django's 500 page with DEBUG off, as seahub 10 CE answers a lock */
const DJANGO_500 =
  '<!DOCTYPE html>\n<html lang="en">\n<head>\n    <title>Page unavailable</title>\n</head>\n<body>\n' +
  '    <h1>Page unavailable</h1>\n</body>\n</html>\n';

function html(res: Parameters<Handler>[1], status: number, body: string) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const count = (seen: Seen[], method: string, prefix: string) =>
  seen.filter((s) => s.method === method && s.url.startsWith(prefix)).length;

const REPO = '11111111-0000-4000-8000-000000000000';
const FILE_URL = `/api2/repos/${REPO}/file/`;

describe('file locks on a server that may not have them', () => {
  it('a server whose features list only seafile-basic gets no lock request; server-info is asked once', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url === '/api2/server-info/')
        return json(res, 200, { version: '10.0.1', encrypted_library_version: 2, features: ['seafile-basic'] });
      html(res, 500, DJANGO_500);
    });
    const lock = await failure(client.lockFile(REPO, '/a.txt'));
    expect(lock).toMatchObject({ kind: 'unsupported', serverMessage: 'this server does not support file locks' });
    expect((await failure(client.unlockFile(REPO, '/a.txt'))).kind).toBe('unsupported');
    expect(await client.supportsFileLocks()).toBe(false);
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(0);
    expect(count(srv.seen, 'GET', '/api2/server-info/')).toBe(1);
  });

  it('without features, a lock answering 500 (an HTML page) means no locks: sent once, not retried, then not sent', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url === '/api2/server-info/') return json(res, 200, { version: '6.0.0' });
      html(res, 500, DJANGO_500);
    });
    expect(await client.supportsFileLocks()).toBe(true);
    expect((await failure(client.lockFile(REPO, '/a.txt'))).kind).toBe('unsupported');
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(1);
    expect((await failure(client.lockFile(REPO, '/b.txt'))).kind).toBe('unsupported');
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(1);
    expect(await client.supportsFileLocks()).toBe(false);
  });

  it('without features, an unlock answering 403 "File is not locked" means no locks', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url === '/api2/server-info/') return json(res, 404, { detail: 'Not found.' });
      json(res, 403, { error_msg: 'File is not locked' });
    });
    expect((await failure(client.unlockFile(REPO, '/a.txt'))).kind).toBe('unsupported');
    expect((await failure(client.lockFile(REPO, '/a.txt'))).kind).toBe('unsupported');
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(1);
  });

  it('on Pro, unlocking a file nobody locked succeeds, and a failing lock is a server error sent once', async () => {
    const { srv, client } = await setup((req, res, body) => {
      if (req.url === '/api2/server-info/')
        return json(res, 200, { version: '10.0.1', features: ['seafile-basic', 'seafile-pro'] });
      const form = new URLSearchParams(body.toString());
      if (form.get('operation') === 'unlock') return json(res, 403, { error_msg: 'File is not locked' });
      json(res, 500, { error_msg: 'Internal Server Error' });
    });
    await client.unlockFile(REPO, '/a.txt');
    const e = await failure(client.lockFile(REPO, '/a.txt'));
    expect({ kind: e.kind, status: e.status }).toEqual({ kind: 'server', status: 500 });
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(2);
    expect(await client.supportsFileLocks()).toBe(true);
  });

  it('a server-info that fails is asked again later; meanwhile the lock is tried', async () => {
    let infoCalls = 0;
    const { srv, client } = await setup((req, res) => {
      if (req.url === '/api2/server-info/') {
        infoCalls++;
        if (infoCalls === 1) return json(res, 400, { error_msg: 'nope' });
        return json(res, 200, { version: '10.0.1', features: ['seafile-basic', 'seafile-pro'] });
      }
      json(res, 200, 'success');
    });
    await client.lockFile(REPO, '/a.txt');
    await client.lockFile(REPO, '/b.txt');
    expect(count(srv.seen, 'PUT', FILE_URL)).toBe(2);
    expect(await client.supportsFileLocks()).toBe(true);
  });
});

describe('batch move and copy', () => {
  it('send the names as a JSON array to sync-batch-move-item, so a name with ":" stays one name', async () => {
    const { srv, client } = await setup((_req, res) => json(res, 200, { success: true }));
    await client.batchMove(REPO, '/src/', ['a:b', 'c'], REPO, '/dst');
    await client.batchCopy(REPO, '/', ['x:y'], REPO, '/dst/');
    expect(srv.seen.map((s) => [s.method, s.url, s.headers['content-type']])).toEqual([
      ['POST', '/api/v2.1/repos/sync-batch-move-item/', 'application/json'],
      ['POST', '/api/v2.1/repos/sync-batch-copy-item/', 'application/json'],
    ]);
    expect(JSON.parse(srv.seen[0].body.toString())).toEqual({
      src_repo_id: REPO,
      src_parent_dir: '/src',
      src_dirents: ['a:b', 'c'],
      dst_repo_id: REPO,
      dst_parent_dir: '/dst',
    });
    expect(JSON.parse(srv.seen[1].body.toString())).toMatchObject({ src_dirents: ['x:y'], dst_parent_dir: '/dst' });
  });

  it('fall back to fileops on a server without the endpoint (404), once and for good', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url!.startsWith('/api/v2.1/')) return html(res, 404, '<h1>Not Found</h1>');
      json(res, 200, 'success');
    });
    await client.batchMove(REPO, '/src', ['a', 'b'], REPO, '/dst');
    await client.batchMove(REPO, '/src', ['c'], REPO, '/dst');
    expect(srv.seen.map((s) => s.url)).toEqual([
      '/api/v2.1/repos/sync-batch-move-item/',
      `/api2/repos/${REPO}/fileops/move/?p=%2Fsrc`,
      `/api2/repos/${REPO}/fileops/move/?p=%2Fsrc`,
    ]);
    expect(new URLSearchParams(srv.seen[1].body.toString()).get('file_names')).toBe('a:b');
  });

  it("a 404 of the endpoint's own (a missing folder) is reported, not a reason to fall back", async () => {
    const { srv, client } = await setup((_req, res) => json(res, 404, { error_msg: 'Folder /dst not found.' }));
    const e = await failure(client.batchMove(REPO, '/src', ['a'], REPO, '/dst'));
    expect({ kind: e.kind, status: e.status }).toEqual({ kind: 'not_found', status: 404 });
    expect(srv.seen).toHaveLength(1);
  });

  it('a move whose answer was lost is looked for before it is sent again', async () => {
    let moved = false;
    const { srv, client } = await setup((req, res) => {
      if (req.url!.includes('sync-batch-move-item')) {
        moved = true;
        return json(res, 502, { error_msg: 'Bad Gateway' });
      }
      const p = new URL(req.url!, 'http://x').searchParams.get('p');
      const there = p === '/dst' ? moved : !moved;
      json(res, 200, there ? [{ type: 'dir', name: 'a:b', id: '0'.repeat(40), mtime: 1 }] : []);
    });
    await client.batchMove(REPO, '/src', ['a:b'], REPO, '/dst');
    expect(count(srv.seen, 'POST', '/api/v2.1/repos/sync-batch-move-item/')).toBe(1);
  });

  it('batch delete sends the names as a JSON array to batch-delete-item, and falls back to fileops on its own', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url === '/api/v2.1/repos/batch-delete-item/' && srv.seen.length > 1)
        return html(res, 404, '<h1>Not Found</h1>');
      json(res, 200, req.url!.startsWith('/api/v2.1/') ? { success: true } : 'success');
    });
    await client.batchDelete(REPO, '/d/', ['a:b', 'c']);
    expect([srv.seen[0].method, srv.seen[0].url, srv.seen[0].headers['content-type']]).toEqual([
      'DELETE',
      '/api/v2.1/repos/batch-delete-item/',
      'application/json',
    ]);
    expect(JSON.parse(srv.seen[0].body.toString())).toEqual({ repo_id: REPO, parent_dir: '/d', dirents: ['a:b', 'c'] });
    // a server without it: fileops/delete, and from then on only that; moves keep their own endpoint
    await client.batchDelete(REPO, '/d', ['x']);
    await client.batchDelete(REPO, '/d', ['y']);
    await client.batchMove(REPO, '/d', ['z'], REPO, '/e');
    expect(srv.seen.slice(1).map((s) => `${s.method} ${s.url}`)).toEqual([
      'DELETE /api/v2.1/repos/batch-delete-item/',
      `POST /api2/repos/${REPO}/fileops/delete/?p=%2Fd`,
      `POST /api2/repos/${REPO}/fileops/delete/?p=%2Fd`,
      'POST /api/v2.1/repos/sync-batch-move-item/',
    ]);
  });
});
