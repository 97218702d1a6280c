// `seafs serve --server-version` and `--fileserver go`: each client-visible
// change of Seafile 11.0, 12.0 and 13.0, and the Go file server's answers.
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import {
  BOB,
  apiAs,
  getToken,
  newLibrary,
  startServerWithUsers,
  type RawApi,
  type TestServer,
} from '../helpers/server.js';

const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
const servers: TestServer[] = [];

async function serverAs(args: string[]): Promise<{ server: TestServer; admin: RawApi; bob: RawApi }> {
  const { server, admin, users } = await startServerWithUsers([BOB], { extraArgs: args });
  servers.push(server);
  return { server, admin, bob: users[0] };
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

describe('11.0: virtual user ids', () => {
  let v10: Awaited<ReturnType<typeof serverAs>>;
  let v11: Awaited<ReturnType<typeof serverAs>>;
  beforeAll(async () => {
    [v10, v11] = await Promise.all([
      serverAs(['--server-version', '10.0.1']),
      serverAs(['--server-version', '11.0.13']),
    ]);
  });

  it('11.0 names the account by a virtual id in owner, modifier and lock_owner; the login e-mail is the contact', async () => {
    const info = (await v11.bob('GET', '/api2/account/info/')).json;
    expect(info.email).toMatch(/^[0-9a-f]{32}@auth\.local$/);
    expect(info.contact_email).toBe(BOB.email);
    const repo = await newLibrary(v11.bob, 'Mine', { 'a.txt': 'hello' });
    const lib = (await v11.bob('GET', '/api2/repos/')).json.find((l: { id: string }) => l.id === repo);
    expect(lib.owner).toBe(info.email);
    expect(lib.owner_contact_email).toBe(BOB.email);
    const entry = (await v11.bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json[0];
    expect(entry.modifier_email).toBe(info.email);
    expect(entry.modifier_contact_email).toBe(BOB.email);
    expect(
      (await v11.bob('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/a.txt', operation: 'lock' } })).status,
    ).toBe(200);
    const locked = (await v11.bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json[0];
    expect(locked.lock_owner).toBe(info.email);
    expect(locked.locked_by_me).toBe(true);
    // logging in by the e-mail still works, and shares name the account by its e-mail
    expect(await getToken(v11.server.url, BOB.email, BOB.password)).toMatch(/^[0-9a-f]{40}$/);
  });

  it('10.0 names the account by its e-mail', async () => {
    const info = (await v10.bob('GET', '/api2/account/info/')).json;
    expect(info.email).toBe(BOB.email);
    const repo = await newLibrary(v10.bob, 'Mine');
    const lib = (await v10.bob('GET', '/api2/repos/')).json.find((l: { id: string }) => l.id === repo);
    expect(lib.owner).toBe(BOB.email);
  });

  it('11.0 takes "Authorization: Bearer", 10.0 does not', async () => {
    const bearer = async (s: TestServer) => {
      const token = await getToken(s.url, BOB.email, BOB.password);
      const r = await fetch(`${s.url}/api2/account/info/`, { headers: { Authorization: `Bearer ${token}` } });
      return r.status;
    };
    expect(await bearer(v11.server)).toBe(200);
    expect(await bearer(v10.server)).toBe(403); // as with no credentials
  });
});

describe('12.0: too many files, direct download', () => {
  let v11: Awaited<ReturnType<typeof serverAs>>;
  let v12: Awaited<ReturnType<typeof serverAs>>;
  beforeAll(async () => {
    [v11, v12] = await Promise.all([
      serverAs(['--server-version', '11.0.13', '--max-library-files', '1']),
      serverAs(['--server-version', '12.0.14', '--max-library-files', '1']),
    ]);
  });

  it('refuses a file over the library limit with 442 before 12.0 and 447 from 12.0', async () => {
    for (const [s, status] of [
      [v11, 442],
      [v12, 447],
    ] as const) {
      const repo = await newLibrary(s.bob, 'Full', { 'one.txt': '1' });
      const r = await s.bob('POST', `/api2/repos/${repo}/file/`, {
        query: { p: '/two.txt' },
        form: { operation: 'create' },
      });
      expect(r.status).toBe(status);
      expect(r.json.error_msg).toMatch(/number of files/);
    }
  });

  it('serves GET {fileserver}/repos/{id}/files/{path}?op=download with the token: ETag, 304, Range', async () => {
    const repo = await newLibrary(v12.bob, 'Direct', { 'd é.txt': 'direct bytes' });
    const token = await getToken(v12.server.url, BOB.email, BOB.password);
    const url = `${v12.server.url}/seafhttp/repos/${repo}/files/${encodeURIComponent('d é.txt')}?op=download`;
    const auth = { Authorization: `Token ${token}` };
    const whole = await fetch(url, { headers: auth });
    expect(whole.status).toBe(200);
    expect(await whole.text()).toBe('direct bytes');
    const etag = whole.headers.get('etag')!;
    const entry = (await v12.bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json[0];
    expect(etag).toBe(entry.id);
    expect((await fetch(url, { headers: { ...auth, 'If-None-Match': etag } })).status).toBe(304);
    const part = await fetch(url, { headers: { ...auth, Range: 'bytes=7-11' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe('bytes');
    expect((await fetch(url)).status).toBe(400); // no token
    expect((await fetch(url, { headers: { Authorization: 'Token nope' } })).status).toBe(403);
    // an encrypted library (unlocked for its owner): Range is not honoured, the whole file comes
    const enc = await newLibrary(v12.bob, 'Secret', { 's.txt': 'secret bytes' }, 'pw-123456');
    const encUrl = `${v12.server.url}/seafhttp/repos/${enc}/files/s.txt?op=download`;
    const encPart = await fetch(encUrl, { headers: { ...auth, Range: 'bytes=0-1' } });
    expect(encPart.status).toBe(200);
    expect(await encPart.text()).toBe('secret bytes');
    // another account's library: refused
    const admin = await getToken(v12.server.url, v12.server.adminEmail, v12.server.adminPassword);
    expect((await fetch(url, { headers: { Authorization: `Token ${admin}` } })).status).toBe(403);
    // 11.0 has no such URL
    const old = await newLibrary(v11.bob, 'Old', { 'a.txt': 'x' });
    const oldToken = await getToken(v11.server.url, BOB.email, BOB.password);
    const none = await fetch(`${v11.server.url}/seafhttp/repos/${old}/files/a.txt?op=download`, {
      headers: { Authorization: `Token ${oldToken}` },
    });
    expect(none.status).toBe(404);
  });
});

describe('the client and the direct download', () => {
  it('learns the file server from a download link, then reads through the direct URL with its token (download and streamGet)', async () => {
    const { server } = await serverAs(['--server-version', '12.0.14', '--verbose']);
    const { client } = await SeafileClient.login({ baseUrl: server.url }, BOB.email, BOB.password);
    try {
      const repo = (await client.createLibrary('Client')).repo_id;
      await client.createFile(repo, '/one.txt');
      const local = path.join(os.tmpdir(), `seafs-direct-${process.pid}.txt`);
      writeFileSync(local, 'streamed through the direct URL');
      await client.uploadBatch(await client.uploadLink(repo, '/'), '/', [{ path: local, name: 'two.txt' }], {
        replace: true,
      });
      expect(client.directDownloadUrl(repo, '/two.txt')).toBeNull();
      await client.downloadLink(repo, '/one.txt');
      const url = client.directDownloadUrl(repo, '/two.txt')!;
      expect(url).toBe(`${server.url}/seafhttp/repos/${repo}/files/two.txt?op=download`);
      const res = await client.download(url, { start: 9 });
      const parts: Buffer[] = [];
      for await (const c of res.body) parts.push(c as Buffer);
      expect(Buffer.concat(parts).toString()).toBe('through the direct URL');
      const id = (await client.listDir(repo, '/')) as { entries: { name: string; id: string }[] };
      expect(res.etag).toBe(id.entries.find((e) => e.name === 'two.txt')!.id);
      const streamed = await new Promise<{ etag?: string; body: string }>((resolve, reject) => {
        const bufs: Buffer[] = [];
        let etag: string | undefined;
        let last = Buffer.alloc(0);
        client.streamGet(url, 0, {
          head: (_s, _start, _len, e) => void (etag = e),
          space: () => (last = Buffer.alloc(4096)),
          wrote: (n) => void bufs.push(last.subarray(0, n)),
          end: (err) => (err ? reject(err) : resolve({ etag, body: Buffer.concat(bufs).toString() })),
        });
      });
      expect(streamed).toEqual({ etag: res.etag, body: 'streamed through the direct URL' });
      rmSync(local, { force: true });
    } finally {
      await client.close();
    }
  });
});

describe('13.0: strict names, api2 share-link views gone in 13.0.18', () => {
  let v12: Awaited<ReturnType<typeof serverAs>>;
  let v13: Awaited<ReturnType<typeof serverAs>>;
  let v1317: Awaited<ReturnType<typeof serverAs>>;
  beforeAll(async () => {
    [v12, v13, v1317] = await Promise.all([
      serverAs(['--server-version', '12.0.14']),
      serverAs(['--server-version', '13.0.25']),
      serverAs(['--server-version', '13.0.17']),
    ]);
  });

  const refused = ['a..b.txt', 'back\\slash.txt', 'smile \u{1F600}.txt', `${'é'.repeat(128)}.txt`];

  it('13.0 refuses "..", "\\", emoji and over 255 bytes in create and rename; 12.0 takes them', async () => {
    const r13 = await newLibrary(v13.bob, 'Names', { 'ok.txt': 'x' });
    const r12 = await newLibrary(v12.bob, 'Names', { 'ok.txt': 'x' });
    for (const name of refused) {
      const create = await v13.bob('POST', `/api2/repos/${r13}/file/`, {
        query: { p: `/${name}` },
        form: { operation: 'create' },
      });
      expect(create.status, name).toBe(400);
      const rename = await v13.bob('POST', `/api2/repos/${r13}/file/`, {
        query: { p: '/ok.txt' },
        form: { operation: 'rename', newname: name },
      });
      expect(rename.status, name).toBe(400);
      if (Buffer.byteLength(name) <= 255) {
        const old = await v12.bob('POST', `/api2/repos/${r12}/file/`, {
          query: { p: `/${name}` },
          form: { operation: 'create' },
        });
        expect(old.status, name).toBe(201);
      }
    }
    const names = (await v13.bob('GET', `/api2/repos/${r13}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).toEqual(['ok.txt']);
  });

  it('api2 d/{token}/dir answers before 13.0.18 and is gone from it', async () => {
    for (const [s, status] of [
      [v1317, 200],
      [v13, 404],
    ] as const) {
      const repo = await newLibrary(s.bob, 'Shared', { 'a.txt': 'x' });
      await s.bob('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/pub' }, form: { operation: 'mkdir' } });
      const link = (await s.bob('POST', '/api/v2.1/share-links/', { json: { repo_id: repo, path: '/pub' } })).json;
      const r = await apiAs(s.server.url, null)('GET', `/api2/d/${link.token}/dir/`, { query: { p: '/' } });
      expect(r.status).toBe(status);
    }
  });
});

describe('--fileserver go', () => {
  let go: Awaited<ReturnType<typeof serverAs>>;
  let c: Awaited<ReturnType<typeof serverAs>>;
  beforeAll(async () => {
    [go, c] = await Promise.all([
      serverAs(['--server-version', '13.0.25', '--fileserver', 'go']),
      serverAs(['--server-version', '13.0.25']),
    ]);
  });

  async function post(url: string, fields: Record<string, string>, files: [string, Buffer][] = []) {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    for (const [name, b] of files) fd.append('file', new Blob([b]), name);
    const r = await fetch(url, { method: 'POST', body: fd });
    return { status: r.status, type: r.headers.get('content-type') ?? '', text: await r.text() };
  }

  // as the real 10.0 Go fileserver answered (test/manual/real-go-fileserver.test.ts, docs/real-server.md)
  it('has no update-blks-api, wraps its commit errors as {"error": ...} in plain text, a missing block 500 with no message', async () => {
    const repo = await newLibrary(go.bob, 'Go');
    const upd = await go.bob('GET', `/api2/repos/${repo}/update-blks-link/`, { query: { p: '/' } });
    const gone = await post(upd.json, { target_file: '/x', file_size: '0', blockids: '[]', commitonly: 'true' });
    expect(gone).toEqual({ status: 404, type: 'text/plain; charset=utf-8', text: '404 page not found\n' });
    const block = Buffer.from('a block of bytes');
    const links = (
      await go.bob('POST', `/api2/repos/${repo}/upload-blks-link/`, {
        query: { p: '/' },
        form: { blklist: sha1(block) },
      })
    ).json;
    // the commit URL without its query: commitonly and ret-json in the form
    const commit = links.commiturl.split('?')[0];
    const missing = await post(commit, {
      parent_dir: '/',
      file_name: 'm.bin',
      file_size: String(block.length),
      blockids: JSON.stringify([sha1(block)]),
      commitonly: 'true',
    });
    // the quota check stats every block first: a failed stat is an internal error
    expect(missing).toEqual({ status: 500, type: 'text/plain; charset=utf-8', text: '\n' });
    const fields = { parent_dir: '/', file_name: 'm.bin', file_size: '1', commitonly: 'true' };
    expect(await post(commit, fields)).toEqual({
      status: 400,
      type: 'text/plain; charset=utf-8',
      text: '{"error": "No blockids given.\n"}\n',
    });
    expect((await post(commit, { ...fields, blockids: 'not json' })).status).toBe(500);
    const noSize = { parent_dir: '/', file_name: 'm.bin', commitonly: 'true', blockids: '[]' };
    expect((await post(commit, noSize)).text).toBe('{"error": "Invalid file size.\n"}\n');
    const noCommitOnly = { parent_dir: '/', file_name: 'm.bin', file_size: '1', blockids: '[]' };
    expect((await post(commit, noCommitOnly)).text).toBe('{"error": "Only commit supported.\n"}\n');
    expect((await post(commit, { ...fields, file_name: '', blockids: '[]' })).text).toBe(
      '{"error": "No file_name given.\n"}\n',
    );
    // a raw block whose id is not its sha1: 500, no message; not multipart: 400, no message
    expect((await post(links.rawblksurl, {}, [['f'.repeat(40), block]])).text).toBe('\n');
    const notMultipart = await fetch(links.rawblksurl, { method: 'POST', body: 'x' });
    expect([notMultipart.status, await notMultipart.text()]).toEqual([400, '\n']);
    expect((await post(links.rawblksurl, {}, [[sha1(block), block]])).status).toBe(200);
    const nfd = 'cafe\u0301.bin';
    const ok = await post(commit, {
      parent_dir: '/',
      file_name: nfd,
      file_size: String(block.length),
      blockids: JSON.stringify([sha1(block)]),
      commitonly: '1',
      'ret-json': '1',
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.text).id).toMatch(/^[0-9a-f]{40}$/);
    const names = (await go.bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).toEqual(['caf\u00e9.bin']);
    const noParent = await post(commit, { file_name: 'x', file_size: '0', blockids: '[]', commitonly: '1' });
    expect(noParent.type).toBe('text/plain; charset=utf-8');
    expect(noParent.status).toBe(400);
  });

  it("downloads with the Go server's headers: charset=gbk, filename*=\"utf-8' '...\", cached an hour, no ETag", async () => {
    const name = "d (1)+$&;'\u00e9.txt";
    const repo = await newLibrary(go.bob, 'Down', { [name]: 'hello world' });
    const link = async () => (await go.bob('GET', `/api2/repos/${repo}/file/`, { query: { p: `/${name}` } })).json;
    const url = await link();
    const r = await fetch(url);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('hello world');
    expect(r.headers.get('content-type')).toBe('text/plain; charset=gbk');
    expect(r.headers.get('content-disposition')).toBe(`attachment;filename*="utf-8' 'd%20%281%29+$&%3B%27%C3%A9.txt"`);
    expect(r.headers.get('cache-control')).toBe('max-age=3600');
    expect(r.headers.get('etag')).toBeNull();
    expect(r.headers.get('accept-ranges')).toBeNull();
    const again = await fetch(url);
    expect([again.status, await again.text()]).toEqual([403, 'Access token not found\n']);
    const part = await fetch(await link(), { headers: { Range: 'bytes=2-4' } });
    expect([part.status, part.headers.get('accept-ranges'), await part.text()]).toEqual([206, 'bytes', 'llo']);
    const past = await fetch(await link(), { headers: { Range: 'bytes=100-' } });
    expect([past.status, past.headers.get('content-range'), await past.text()]).toEqual([416, 'bytes */11', '\n']);
    const cached = await fetch(await link(), { headers: { 'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' } });
    expect(cached.status).toBe(304);
  });

  it('the C file server answers the same steps as it does: update-blks-api there, JSON-shaped errors, 443 for a missing block', async () => {
    const repo = await newLibrary(c.bob, 'C');
    const block = Buffer.from('another block');
    const links = (
      await c.bob('POST', `/api2/repos/${repo}/upload-blks-link/`, {
        query: { p: '/' },
        form: { blklist: sha1(block) },
      })
    ).json;
    const missing = await post(links.commiturl, {
      parent_dir: '/',
      file_name: 'm.bin',
      file_size: String(block.length),
      blockids: JSON.stringify([sha1(block)]),
    });
    expect(missing.status).toBe(443);
    expect(missing.text).toBe('{"error": "Out of quota.\n"}');
    // commitonly only in the form: the C server reads it from the query
    const formOnly = await post(links.commiturl.split('?')[0], {
      parent_dir: '/',
      file_name: 'n',
      file_size: '0',
      blockids: '[]',
      commitonly: '1',
    });
    expect(formOnly.status).toBe(400);
  });

  it('upload-api takes ret-json from the form on Go, replace from the query', async () => {
    const repo = await newLibrary(go.bob, 'Up', { 'r.txt': 'old' });
    const link = (await go.bob('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json;
    const r = await post(`${link}?replace=1`, { parent_dir: '/', 'ret-json': 'yes' }, [['r.txt', Buffer.from('new')]]);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)[0].name).toBe('r.txt');
    const names = (await go.bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).toEqual(['r.txt']); // replaced, not "r (1).txt"
    // the Go upload handler's errors: its own words, wrapped as {"error": ...}, sent as text/plain;
    // a folder that does not exist is told before one that is not the link's
    const up = async (fields: Record<string, string>, files: [string, Buffer][] = [['x.txt', Buffer.from('x')]]) =>
      post((await go.bob('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json, fields, files);
    expect(await up({ parent_dir: '/elsewhere' })).toEqual({
      status: 400,
      type: 'text/plain; charset=utf-8',
      text: '{"error": "Parent dir doesn\'t exist.\n"}\n',
    });
    await go.bob('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/sub' }, form: { operation: 'mkdir' } });
    expect(await up({ parent_dir: '/sub' })).toEqual({
      status: 403,
      type: 'text/plain; charset=utf-8',
      text: '{"error": "Parent dir doesn\'t match."}\n',
    });
    expect((await up({})).text).toBe('{"error": "No parent_dir given.\n"}\n');
    expect((await up({ parent_dir: '/' }, [])).text).toBe('{"error": "No file in multipart form.\n"}\n');
    // a backslash stays in the name (C cuts at it); ret-json lists id first; without it the ids as text/plain
    const bs = await up({ parent_dir: '/', 'ret-json': '1' }, [['a\\b.txt', Buffer.from('b')]]);
    expect(Object.keys(JSON.parse(bs.text)[0])).toEqual(['id', 'name', 'size']);
    expect(JSON.parse(bs.text)[0].name).toBe('a\\b.txt');
    const plain = await up({ parent_dir: '/' }, [['p.txt', Buffer.from('p')]]);
    expect(plain.type).toBe('text/plain; charset=utf-8');
    expect(plain.text).toMatch(/^[0-9a-f]{40}$/);
    // a token it does not know: checked before the handler, a plain message
    const gone = await post(`${go.server.url}/seafhttp/upload-api/nope`, { parent_dir: '/' }, [
      ['y', Buffer.from('y')],
    ]);
    expect([gone.status, gone.text]).toEqual([403, 'Access token not found\n']);
    const upd = (await go.bob('GET', `/api2/repos/${repo}/update-link/`, { query: { p: '/' } })).json;
    expect(await post(upd, { target_file: '/none.txt' }, [['none.txt', Buffer.from('u')]])).toEqual({
      status: 441,
      type: 'text/plain; charset=utf-8',
      text: '{"error": "File does not exist.\n"}\n',
    });
  });
});
