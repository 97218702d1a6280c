// `seafs serve` driven with plain fetch: auth, listings, uploads, downloads,
// file and folder operations, history and trash.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import {
  adminToken,
  apiAs,
  createUser,
  getToken,
  uploadTo,
  startServerWithUsers,
  newLibrary,
  type TestServer,
} from '../helpers/server.js';

let server: TestServer;
let call: ReturnType<typeof apiAs>;
let repo: string;

async function uploadLink(dir = '/'): Promise<string> {
  const r = await call('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: dir } });
  expect(r.status).toBe(200);
  return r.json as string;
}

async function list(p: string): Promise<{ name: string; type: string; id: string; size?: number }[]> {
  const r = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p } });
  expect(r.status).toBe(200);
  return r.json;
}

async function fetchFile(p: string, headers: Record<string, string> = {}, reuse = false) {
  const link = await call('GET', `/api2/repos/${repo}/file/`, { query: { p, ...(reuse ? { reuse: '1' } : {}) } });
  expect(link.status).toBe(200);
  const res = await fetch(link.json as string, { headers });
  return { res, body: Buffer.from(await res.arrayBuffer()), url: link.json as string, oid: link.headers.get('oid') };
}

function totp(secretB32: string, t = Date.now()): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secretB32) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g)!.map((b) => parseInt(b, 2)));
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(Math.floor(t / 30000)));
  const h = createHmac('sha1', key).update(msg).digest();
  const off = h[19] & 0xf;
  return ((h.readUInt32BE(off) & 0x7fffffff) % 1e6).toString().padStart(6, '0');
}

beforeAll(async () => {
  ({ server, admin: call } = await startServerWithUsers());
  repo = await newLibrary(call, 'main');
});

afterAll(async () => {
  await server?.stop();
});

describe('session and auth', () => {
  it('answers ping, server-info and auth ping', async () => {
    const anon = apiAs(server.url, null);
    expect((await anon('GET', '/api2/ping/')).json).toBe('pong');
    const info = await anon('GET', '/api2/server-info/');
    expect(info.json.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(info.json.features).toContain('seafile-basic');
    expect((await call('GET', '/api2/auth/ping/')).json).toBe('pong');
  });

  it('gives a stable 40-hex token, and 400 on bad credentials or missing fields', async () => {
    const t1 = await adminToken(server);
    const t2 = await adminToken(server);
    expect(t1).toMatch(/^[0-9a-f]{40}$/);
    expect(t2).toBe(t1);
    const anon = apiAs(server.url, null);
    const bad = await anon('POST', '/api2/auth-token/', { form: { username: server.adminEmail, password: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.json.non_field_errors[0]).toMatch(/Unable to login/);
    const missing = await anon('POST', '/api2/auth-token/', { form: { password: 'x' } });
    expect(missing.status).toBe(400);
    expect(missing.json.username).toBeDefined();
    // rclone sends JSON
    const json = await anon('POST', '/api2/auth-token/', {
      json: { username: server.adminEmail, password: server.adminPassword },
    });
    expect(json.json.token).toBe(t1);
  });

  it('401 for an invalid token, 403 without one; Bearer works too', async () => {
    const bad = await apiAs(server.url, 'f'.repeat(40))('GET', '/api2/account/info/');
    expect(bad.status).toBe(401);
    expect(bad.json).toEqual({ detail: 'Invalid token' });
    const none = await apiAs(server.url, null)('GET', '/api2/account/info/');
    expect(none.status).toBe(403);
    const bearer = await apiAs(server.url, null)('GET', '/api2/auth/ping/', {
      headers: { Authorization: `Bearer ${await adminToken(server)}` },
    });
    expect(bearer.json).toBe('pong');
  });

  it('two-factor: 400 + X-Seafile-OTP: required without or with a wrong code, token with the right one', async () => {
    const secret = 'JBSWY3DPEHPK3PXPJBSWY3DP';
    await createUser(server, 'otp@seafs.test', 'pw-otp', { totp_secret: secret });
    const anon = apiAs(server.url, null);
    const form = { username: 'otp@seafs.test', password: 'pw-otp' };
    const missing = await anon('POST', '/api2/auth-token/', { form });
    expect(missing.status).toBe(400);
    expect(missing.headers.get('x-seafile-otp')).toBe('required');
    expect(missing.json.non_field_errors[0]).toMatch(/missing/);
    const wrong = await anon('POST', '/api2/auth-token/', {
      form,
      headers: { 'X-Seafile-OTP': '000000' === totp(secret) ? '111111' : '000000' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.json.non_field_errors[0]).toMatch(/invalid/);
    const ok = await anon('POST', '/api2/auth-token/', { form, headers: { 'X-SERVICE-OTP': totp(secret) } });
    expect(ok.status).toBe(200);
    expect(ok.json.token).toMatch(/^[0-9a-f]{40}$/);
  });

  it('account info with -2 for unlimited, and admin-only account endpoints', async () => {
    const info = await call('GET', '/api2/account/info/');
    expect(info.json).toMatchObject({ email: server.adminEmail, total: -2 });
    expect(typeof info.json.usage).toBe('number');
    await createUser(server, 'plain@seafs.test', 'pw-plain');
    const plain = apiAs(server.url, await getToken(server.url, 'plain@seafs.test', 'pw-plain'));
    expect((await plain('GET', '/api2/accounts/')).status).toBe(403);
    const accounts = await call('GET', '/api2/accounts/');
    expect(accounts.json.map((a: { email: string }) => a.email)).toContain('plain@seafs.test');
    const detail = await call('GET', `/api2/accounts/${encodeURIComponent('plain@seafs.test')}/`);
    expect(detail.json).toMatchObject({ email: 'plain@seafs.test', is_staff: false, is_active: true, total: -2 });
    const upd = await call('PUT', `/api2/accounts/${encodeURIComponent('plain@seafs.test')}/`, {
      form: { storage: '5' },
    });
    expect(upd.status).toBe(200);
    expect((await plain('GET', '/api2/account/info/')).json.total).toBe(5_000_000);
    const created = await call('PUT', `/api2/accounts/${encodeURIComponent('new@seafs.test')}/`, {
      form: { password: 'x1' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toContain('/api2/accounts/');
    expect(
      (await call('PUT', `/api2/accounts/${encodeURIComponent('nopw@seafs.test')}/`, { form: { name: 'n' } })).status,
    ).toBe(400);
  });
});

describe('libraries', () => {
  it('lists, describes, renames and deletes', async () => {
    const c = await call('POST', '/api2/repos/', { form: { name: 'temp', desc: 'd' } });
    expect(c.json).toMatchObject({ repo_name: 'temp', encrypted: '' });
    const id = c.json.repo_id;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const mine = await call('GET', '/api2/repos/', { query: { type: 'mine' } });
    const item = mine.json.find((x: { id: string }) => x.id === id);
    expect(item).toMatchObject({
      name: 'temp',
      type: 'repo',
      permission: 'rw',
      encrypted: false,
      owner: server.adminEmail,
    });
    expect((await call('GET', '/api2/repos/', { query: { type: 'shared' } })).json).toEqual([]);
    expect(
      (await call('POST', `/api2/repos/${id}/`, { query: { op: 'rename' }, form: { repo_name: 'temp2' } })).json,
    ).toBe('success');
    const info = await call('GET', `/api2/repos/${id}/`);
    expect(info.json).toMatchObject({ id, name: 'temp2', encrypted: false });
    expect((await call('POST', `/api2/repos/${id}/`, { form: { password: 'x' } })).status).toBe(409);
    expect((await call('DELETE', `/api2/repos/${id}/`)).json).toBe('success');
    expect((await call('GET', `/api2/repos/${id}/`)).status).toBe(404);
    expect((await call('POST', '/api2/repos/', { form: {} })).status).toBe(400);
  });
});

describe('folders', () => {
  it('creates with 201 + Location, auto-renames a clash, create_parents is quiet', async () => {
    const r = await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/f1' }, form: { operation: 'mkdir' } });
    expect(r.status).toBe(201);
    expect(r.json).toBe('success');
    expect(r.headers.get('location')).toContain(`/api2/repos/${repo}/dir/`);
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/f1' }, form: { operation: 'mkdir' } });
    const names = (await list('/')).map((e) => e.name);
    expect(names).toContain('f1 (1)');
    const deep = await call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/f1/a/b/c' },
      form: { operation: 'mkdir', create_parents: 'true' },
    });
    expect(deep.status).toBe(201);
    const again = await call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/f1/a/b/c' },
      form: { operation: 'mkdir', create_parents: 'true' },
    });
    expect(again.status).toBe(201);
    expect((await list('/f1/a/b')).map((e) => e.name)).toEqual(['c']);
  });

  it('lists dirs first then files by lower-cased name, with oid revalidation', async () => {
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/order' }, form: { operation: 'mkdir' } });
    const link = await uploadLink('/order');
    expect((await uploadTo(link, '/order', { 'b.txt': 'b', 'A.txt': 'a', 'c.txt': '' })).status).toBe(200);
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/order/Zdir' }, form: { operation: 'mkdir' } });
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/order/adir' }, form: { operation: 'mkdir' } });
    const r = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order' } });
    expect(r.json.map((e: { name: string }) => e.name)).toEqual(['adir', 'Zdir', 'A.txt', 'b.txt', 'c.txt']);
    const empty = r.json.find((e: { name: string }) => e.name === 'c.txt');
    expect(empty).toMatchObject({ type: 'file', size: 0, id: '0'.repeat(40) });
    expect(r.json.find((e: { name: string }) => e.name === 'adir').id).toBe('0'.repeat(40));
    expect(r.json[2]).toMatchObject({ modifier_email: server.adminEmail, permission: 'rw', starred: false });
    const oid = r.headers.get('oid')!;
    expect(oid).toMatch(/^[0-9a-f]{40}$/);
    const same = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order', oid } });
    expect(same.json).toBe('uptodate');
    // a change deep below changes the folder id
    await call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/order/adir/deeper' },
      form: { operation: 'mkdir' },
    });
    const changed = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order', oid } });
    expect(Array.isArray(changed.json)).toBe(true);
    expect(changed.headers.get('oid')).not.toBe(oid);
    // a change elsewhere does not
    const before = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order/Zdir' } })).headers.get('oid');
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/elsewhere' }, form: { operation: 'mkdir' } });
    const after = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order/Zdir' } })).headers.get('oid');
    expect(after).toBe(before);
  });

  it('filters with t, lists recursively with parent_dir, 404/400 on bad requests', async () => {
    const files = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order', t: 'f' } });
    expect(files.json.every((e: { type: string }) => e.type === 'file')).toBe(true);
    const rec = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/order', t: 'd', recursive: '1' } });
    const paths = rec.json.map(
      (e: { parent_dir: string; name: string }) => `${e.parent_dir.replace(/\/$/, '')}/${e.name}`,
    );
    expect(paths).toEqual(expect.arrayContaining(['/order/adir', '/order/Zdir', '/order/adir/deeper']));
    expect(rec.json.every((e: { type: string }) => e.type === 'dir')).toBe(true);
    const missing = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/nope/' } });
    expect(missing.status).toBe(404);
    expect(missing.json.error_msg).toBe('Folder /nope/ not found.');
    expect((await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/', t: 'x' } })).status).toBe(400);
    const v21 = await call('GET', `/api/v2.1/repos/${repo}/dir/`, { query: { p: '/order', recursive: '1' } });
    expect(v21.json.dirent_list.length).toBeGreaterThanOrEqual(6);
  });

  it('renames (200, auto-rename on clash), deletes (404 when missing)', async () => {
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/r1' }, form: { operation: 'mkdir' } });
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/r2' }, form: { operation: 'mkdir' } });
    const r = await call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/r1' },
      form: { operation: 'rename', newname: 'r2' },
    });
    expect(r.status).toBe(200);
    const names = (await list('/')).map((e) => e.name);
    expect(names).toContain('r2 (1)');
    expect(names).not.toContain('r1');
    expect((await call('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/r2' } })).json).toBe('success');
    expect((await call('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/r2' } })).status).toBe(404);
    // JSON bodies are not read by the /api2/ folder operations
    const json = await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/j' }, json: { operation: 'mkdir' } });
    expect(json.status).toBe(400);
  });
});

describe('uploads and updates', () => {
  it('uploads, auto-renames without replace, replaces with replace=1, plain-text ids without ret-json', async () => {
    const link = await uploadLink('/');
    const first = await uploadTo(link, '/', { 'up.txt': 'one' });
    expect(first.status).toBe(200);
    const [u1] = JSON.parse(first.text);
    expect(u1).toMatchObject({ name: 'up.txt', size: 3 });
    expect(u1.id).toMatch(/^[0-9a-f]{40}$/);
    const second = JSON.parse((await uploadTo(link, '/', { 'up.txt': 'two!' })).text);
    expect(second[0].name).toBe('up (1).txt');
    const replaced = JSON.parse((await uploadTo(link, '/', { 'up.txt': 'three' }, { replace: true })).text);
    expect(replaced[0]).toMatchObject({ name: 'up.txt', size: 5 });
    expect((await fetchFile('/up.txt')).body.toString()).toBe('three');
    const plain = await uploadTo(link, '/', { 'p1.txt': 'x', 'p2.txt': 'yy' }, { retJson: false });
    expect(plain.text.split('\t')).toHaveLength(2);
    expect(plain.text.split('\t')[0]).toMatch(/^[0-9a-f]{40}$/);
  });

  it('creates relative_path folders, refuses a parent_dir other than the link folder and a bad token', async () => {
    const link = await uploadLink('/');
    const r = await uploadTo(link, '/', { 'deep.txt': 'd' }, { relativePath: 'x/y/' });
    expect(r.status).toBe(200);
    expect((await list('/x/y')).map((e) => e.name)).toEqual(['deep.txt']);
    expect((await uploadTo(link, '/x', { 'no.txt': 'n' })).status).toBe(403);
    const bad = await uploadTo(link.replace(/[0-9a-f]{8}$/, '00000000'), '/', { 'no.txt': 'n' });
    expect(bad.status).toBe(403);
    expect((await uploadTo(link, '/', { '..': 'n' })).status).toBe(440);
  });

  it('updates in place, keeps the id for identical content, 441 for a missing target', async () => {
    const up = JSON.parse((await uploadTo(await uploadLink('/'), '/', { 'upd.txt': 'v1' })).text)[0];
    const link = (await call('GET', `/api2/repos/${repo}/update-link/`, { query: { p: '/' } })).json as string;
    expect(link).toContain('/seafhttp/update-api/');
    const send = async (target: string, content: string) => {
      const fd = new FormData();
      fd.append('file', new Blob([content]), 'blob');
      fd.append('target_file', target);
      const res = await fetch(link, { method: 'POST', body: fd });
      return { status: res.status, text: await res.text() };
    };
    const histBefore = (await call('GET', `/api2/repos/${repo}/history/`, { query: { per_page: '1000' } })).json.commits
      .length;
    const r1 = await send('/upd.txt', 'v2-content');
    expect(r1.status).toBe(200);
    expect(r1.text).toMatch(/^[0-9a-f]{40}$/);
    expect(r1.text).not.toBe(up.id);
    const r2 = await send('/upd.txt', 'v2-content');
    expect(r2.text).toBe(r1.text);
    const histAfter = (await call('GET', `/api2/repos/${repo}/history/`, { query: { per_page: '1000' } })).json.commits
      .length;
    expect(histAfter).toBe(histBefore + 1);
    expect((await fetchFile('/upd.txt')).body.toString()).toBe('v2-content');
    const missing = await send('/nothere.txt', 'x');
    expect(missing.status).toBe(441);
    expect(missing.text).toContain('File does not exist.');
  });

  it('takes last_modify as the file mtime', async () => {
    const fd = new FormData();
    fd.append('file', new Blob(['m']), 'mtime.txt');
    fd.append('parent_dir', '/');
    fd.append('last_modify', '2021-03-04T05:06:07+00:00');
    expect((await fetch(await uploadLink('/'), { method: 'POST', body: fd })).status).toBe(200);
    const d = await call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/mtime.txt' } });
    expect(d.json.mtime).toBe(Date.UTC(2021, 2, 4, 5, 6, 7) / 1000);
  });

  it('uploads empty files', async () => {
    const r = JSON.parse((await uploadTo(await uploadLink('/'), '/', { 'empty.bin': '' })).text)[0];
    expect(r).toMatchObject({ name: 'empty.bin', size: 0, id: '0'.repeat(40) });
    const { res, body } = await fetchFile('/empty.bin', { Range: 'bytes=0-10' });
    expect(res.status).toBe(200);
    expect(body.length).toBe(0);
  });
});

describe('downloads', () => {
  const content = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));

  beforeAll(async () => {
    expect((await uploadTo(await uploadLink('/'), '/', { 'data.bin': content })).status).toBe(200);
  });

  it('serves ranges a-b, a-, -n with 206 and Content-Range', async () => {
    const a = await fetchFile('/data.bin', { Range: 'bytes=10-19' });
    expect(a.res.status).toBe(206);
    expect(a.res.headers.get('content-range')).toBe('bytes 10-19/1000');
    expect(a.res.headers.get('accept-ranges')).toBe('bytes');
    expect(a.body.equals(content.subarray(10, 20))).toBe(true);
    const b = await fetchFile('/data.bin', { Range: 'bytes=990-' });
    expect(b.res.status).toBe(206);
    expect(b.body.equals(content.subarray(990))).toBe(true);
    const c = await fetchFile('/data.bin', { Range: 'bytes=-5' });
    expect(c.res.headers.get('content-range')).toBe('bytes 995-999/1000');
    expect(c.body.equals(content.subarray(995))).toBe(true);
    const whole = await fetchFile('/data.bin');
    expect(whole.res.status).toBe(200);
    expect(whole.body.equals(content)).toBe(true);
    expect(whole.res.headers.get('etag')).toBe(whole.oid);
  });

  it('416 with bytes */size when unsatisfiable', async () => {
    const r = await fetchFile('/data.bin', { Range: 'bytes=1000-' });
    expect(r.res.status).toBe(416);
    expect(r.res.headers.get('content-range')).toBe('bytes */1000');
  });

  it('one-time links are spent by their first request (HEAD included); reuse=1 links are not', async () => {
    const link = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/data.bin' } })).json as string;
    expect(link).toMatch(/\/seafhttp\/files\/[^/]+\/data\.bin$/);
    const head = await fetch(link, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('1000');
    const second = await fetch(link);
    expect(second.status).toBe(403);
    expect(second.headers.get('content-type')).toMatch(/text\/plain/);
    const reusable = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/data.bin', reuse: '1' } }))
      .json as string;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(reusable, { headers: { Range: `bytes=${i}-${i}` } });
      expect(r.status).toBe(206);
      expect(Buffer.from(await r.arrayBuffer())[0]).toBe(content[i]);
    }
  });

  it('file detail, 404 for a missing file, names are url-quoted in links', async () => {
    const d = await call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/data.bin' } });
    expect(d.json).toMatchObject({ type: 'file', name: 'data.bin', size: 1000 });
    expect(typeof d.json.mtime).toBe('number');
    expect((await call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/none.bin' } })).status).toBe(404);
    expect((await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/none.bin' } })).status).toBe(404);
    await uploadTo(await uploadLink('/'), '/', { 'sp ace é.txt': 'z' });
    const link = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/sp ace é.txt' } })).json as string;
    expect(link.endsWith('/' + encodeURIComponent('sp ace é.txt'))).toBe(true);
    expect(await (await fetch(link)).text()).toBe('z');
  });
});

describe('file operations', () => {
  beforeAll(async () => {
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/ops' }, form: { operation: 'mkdir' } });
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/ops/dst' }, form: { operation: 'mkdir' } });
    await uploadTo(await uploadLink('/ops'), '/ops', { 'a.txt': 'A', 'b.txt': 'B', 'c.txt': 'C' });
  });

  it('create 201 with auto-rename; rename 301 + Location, same name 409, clash auto-renamed', async () => {
    const c = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/new.txt' },
      form: { operation: 'create' },
    });
    expect(c.status).toBe(201);
    const c2 = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/new.txt' },
      form: { operation: 'create' },
    });
    expect(c2.status).toBe(201);
    expect((await list('/ops')).map((e) => e.name)).toContain('new (1).txt');
    const r = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/new.txt' },
      form: { operation: 'rename', newname: 'renamed.txt' },
    });
    expect(r.status).toBe(301);
    expect(r.json).toBe('success');
    expect(r.headers.get('location')).toContain(encodeURIComponent('/ops/renamed.txt'));
    const same = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/renamed.txt' },
      form: { operation: 'rename', newname: 'renamed.txt' },
    });
    expect(same.status).toBe(409);
    const clash = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/renamed.txt' },
      form: { operation: 'rename', newname: 'a.txt' },
    });
    expect(clash.status).toBe(301);
    expect((await list('/ops')).map((e) => e.name)).toContain('a (1).txt');
  });

  it('refuses invalid names with 400 "name invalid."', async () => {
    for (const bad of ['x/y', '..', 'n'.repeat(256)]) {
      const r = await call('POST', `/api2/repos/${repo}/file/`, {
        query: { p: '/ops/a.txt' },
        form: { operation: 'rename', newname: bad },
      });
      expect(r.status, bad).toBe(400);
      expect(r.json.error_msg).toBe('name invalid.');
    }
    const mk = await call('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/ops/' + 'd'.repeat(256) },
      form: { operation: 'mkdir' },
    });
    expect(mk.status).toBe(400);
  });

  it('move 301 and copy 200, auto-renamed in the destination', async () => {
    const cp = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/b.txt' },
      form: { operation: 'copy', dst_repo: repo, dst_dir: '/ops/dst' },
    });
    expect(cp.status).toBe(200);
    const cp2 = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/b.txt' },
      form: { operation: 'copy', dst_repo: repo, dst_dir: '/ops/dst' },
    });
    expect(cp2.status).toBe(200);
    const mv = await call('POST', `/api2/repos/${repo}/file/`, {
      query: { p: '/ops/b.txt' },
      form: { operation: 'move', dst_repo: repo, dst_dir: '/ops/dst' },
    });
    expect(mv.status).toBe(301);
    expect((await list('/ops/dst')).map((e) => e.name)).toEqual(['b (1).txt', 'b (2).txt', 'b.txt']);
    expect((await list('/ops')).map((e) => e.name)).not.toContain('b.txt');
  });

  it('DELETE of a file succeeds even when missing; batch fileops copy/move/delete', async () => {
    expect((await call('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/ops/ghost.txt' } })).json).toBe(
      'success',
    );
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/batch' }, form: { operation: 'mkdir' } });
    const cp = await call('POST', `/api2/repos/${repo}/fileops/copy/`, {
      query: { p: '/ops' },
      form: { file_names: 'a.txt:c.txt', dst_repo: repo, dst_dir: '/batch' },
    });
    // where each landed, as seahub's OpCopyView
    expect(cp.json).toEqual(['a.txt', 'c.txt'].map((obj_name) => ({ repo_id: repo, parent_dir: '/batch', obj_name })));
    expect((await list('/batch')).map((e) => e.name)).toEqual(['a.txt', 'c.txt']);
    const del = await call('POST', `/api2/repos/${repo}/fileops/delete/`, {
      query: { p: '/batch' },
      form: { file_names: 'a.txt:c.txt' },
    });
    expect(del.json).toBe('success');
    expect(await list('/batch')).toEqual([]);
    const mv = await call('POST', `/api2/repos/${repo}/fileops/move/`, {
      query: { p: '/ops' },
      form: { file_names: 'dst', dst_repo: repo, dst_dir: '/batch' },
    });
    expect(mv.json).toEqual([{ repo_id: repo, parent_dir: '/batch', obj_name: 'dst' }]);
    expect((await list('/batch/dst')).length).toBe(3);
    const into = await call('POST', `/api2/repos/${repo}/fileops/move/`, {
      query: { p: '/batch' },
      form: { file_names: 'dst', dst_repo: repo, dst_dir: '/batch/dst' },
    });
    expect(into.status).toBe(400);
  });

  it('V2.1 file operations answer with obj_name', async () => {
    const r = await call('POST', `/api/v2.1/repos/${repo}/file/`, {
      query: { p: '/ops/a.txt' },
      json: { operation: 'rename', newname: 'c.txt' },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ type: 'file', obj_name: 'c (1).txt', parent_dir: '/ops' });
    const mv = await call('POST', `/api/v2.1/repos/sync-batch-move-item/`, {
      json: {
        src_repo_id: repo,
        src_parent_dir: '/ops',
        src_dirents: ['c (1).txt'],
        dst_repo_id: repo,
        dst_parent_dir: '/batch',
      },
    });
    expect(mv.json).toEqual({ success: true });
    expect((await list('/batch')).map((e) => e.name)).toContain('c (1).txt');
  });

  it("V2.1 folder operations answer with the folder's place and name", async () => {
    const r = await call('POST', `/api/v2.1/repos/${repo}/dir/`, {
      query: { p: '/batch/v21 dir' },
      json: { operation: 'mkdir' },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ type: 'dir', obj_name: 'v21 dir', parent_dir: '/batch', repo_id: repo });
    expect(typeof (r.json as { mtime: unknown }).mtime).toBe('string');
  });

  it('locks: listed, refused twice, block others', async () => {
    const lock = await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/ops/c.txt', operation: 'lock' } });
    expect(lock.json).toBe('success');
    expect(
      (await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/ops/c.txt', operation: 'lock' } })).status,
    ).toBe(403);
    const entry = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/ops' } })).json.find(
      (e: { name: string }) => e.name === 'c.txt',
    );
    expect(entry).toMatchObject({ is_locked: true, locked_by_me: true, lock_owner: server.adminEmail });
    expect(
      (await call('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/ops/c.txt', operation: 'unlock' } })).json,
    ).toBe('success');
  });
});

describe('history, revisions, revert, trash', () => {
  it('keeps library history (V2 and V2.1), file history and revisions; reverts', async () => {
    const link = await uploadLink('/');
    await uploadTo(link, '/', { 'hist.txt': 'version-1' });
    await uploadTo(link, '/', { 'hist.txt': 'version-2' }, { replace: true });
    const v2 = await call('GET', `/api2/repos/${repo}/history/`);
    expect(v2.json.commits[0]).toMatchObject({ repo_id: repo, creator_name: server.adminEmail });
    expect(typeof v2.json.page_next).toBe('boolean');
    const v21 = await call('GET', `/api/v2.1/repos/${repo}/history/`, { query: { per_page: '2' } });
    expect(v21.json.data).toHaveLength(2);
    expect(v21.json.more).toBe(true);
    expect(v21.json.data[0].time).toMatch(/^\d{4}-\d\d-\d\dT/);
    const fh = await call('GET', `/api2/repos/${repo}/file/history/`, { query: { p: '/hist.txt' } });
    expect(fh.json.commits).toHaveLength(2);
    const old = fh.json.commits[1];
    expect(old.rev_file_size).toBe(9);
    const rev = await call('GET', `/api2/repos/${repo}/file/revision/`, {
      query: { p: '/hist.txt', commit_id: old.id },
    });
    expect(await (await fetch(rev.json)).text()).toBe('version-1');
    const rv = await call('PUT', `/api2/repos/${repo}/file/revert/`, { form: { p: '/hist.txt', commit_id: old.id } });
    expect(rv.json).toEqual({ ret: 0 });
    expect((await fetchFile('/hist.txt')).body.toString()).toBe('version-1');
  });

  it('lists deleted entries in the trash (V2.1) and can clean it', async () => {
    await uploadTo(await uploadLink('/'), '/', { 'gone.txt': 'bye' });
    await call('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/gone.txt' } });
    const t = await call('GET', `/api/v2.1/repos/${repo}/trash/`);
    const hit = t.json.data.find((e: { obj_name: string }) => e.obj_name === 'gone.txt');
    expect(hit).toMatchObject({ is_dir: false, parent_dir: '/', size: 3 });
    expect(hit.commit_id).toMatch(/^[0-9a-f]{40}$/);
    expect(t.json.more).toBe(false);
    expect((await call('DELETE', `/api/v2.1/repos/${repo}/trash/`)).json).toEqual({ success: true });
    expect((await call('GET', `/api/v2.1/repos/${repo}/trash/`)).json.data).toEqual([]);
  });

  it('lists a path deleted twice once (the latest deletion) and no longer lists it once it is restored, as real servers', async () => {
    const gone = async () =>
      (
        (await call('GET', `/api/v2.1/repos/${repo}/trash/`)).json.data as { obj_name: string; commit_id: string }[]
      ).filter((e) => e.obj_name === 'twice.txt');
    await uploadTo(await uploadLink('/'), '/', { 'twice.txt': 'first' });
    await call('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/twice.txt' } });
    await uploadTo(await uploadLink('/'), '/', { 'twice.txt': 'second' });
    await call('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/twice.txt' } });
    const listed = await gone();
    expect(listed).toHaveLength(1);
    const rev = await call('GET', `/api2/repos/${repo}/file/revision/`, {
      query: { p: '/twice.txt', commit_id: listed[0].commit_id },
    });
    expect(await (await fetch(rev.json)).text()).toBe('second');
    await call('PUT', `/api2/repos/${repo}/file/revert/`, {
      form: { p: '/twice.txt', commit_id: listed[0].commit_id },
    });
    expect((await fetchFile('/twice.txt')).body.toString()).toBe('second');
    expect(await gone()).toEqual([]);
  });
});

describe('starred, search, share and upload links', () => {
  it('stars and unstars a file', async () => {
    await uploadTo(await uploadLink('/'), '/', { 'star.txt': 's' });
    expect((await call('POST', '/api2/starredfiles/', { form: { repo_id: repo, p: '/star.txt' } })).status).toBe(201);
    expect((await call('GET', '/api2/starredfiles/')).json).toEqual([
      expect.objectContaining({ repo, path: '/star.txt', dir: false, size: 1 }),
    ]);
    expect((await call('POST', '/api2/starredfiles/', { form: { repo_id: repo, p: '/star.txt/' } })).status).toBe(400);
    expect((await call('DELETE', '/api2/starredfiles/', { query: { repo_id: repo, p: '/star.txt' } })).json).toBe(
      'success',
    );
    expect((await call('GET', '/api2/starredfiles/')).json).toEqual([]);
  });

  it('searches names', async () => {
    const r = await call('GET', '/api2/search/', { query: { q: 'STAR' } });
    expect(r.json.total).toBeGreaterThanOrEqual(1);
    expect(r.json.results[0]).toMatchObject({ repo_id: repo, name: 'star.txt', fullpath: '/star.txt' });
    expect((await call('GET', '/api2/search/')).status).toBe(400);
  });

  it('creates, lists and deletes share links and upload links', async () => {
    const s = await call('POST', '/api/v2.1/share-links/', { form: { repo_id: repo, path: '/star.txt' } });
    expect(s.json).toMatchObject({ repo_id: repo, path: '/star.txt', is_expired: false });
    expect(s.json.link).toBe(`${server.url}/f/${s.json.token}/`);
    // a second link for the path is refused, as seahub's v2.1 refuses it
    const again = await call('POST', '/api/v2.1/share-links/', { form: { repo_id: repo, path: '/star.txt' } });
    expect([again.status, again.json]).toEqual([400, { error_msg: `Share link ${s.json.token} already exists.` }]);
    const l = await call('GET', '/api/v2.1/share-links/', { query: { repo_id: repo, path: '/star.txt' } });
    expect(l.json).toHaveLength(1);
    expect(l.json[0]).toMatchObject({ obj_name: 'star.txt', is_dir: false, repo_name: 'main' });
    expect((await call('DELETE', `/api/v2.1/share-links/${s.json.token}/`)).json).toEqual({ success: true });
    expect((await call('GET', '/api/v2.1/share-links/')).json).toEqual([]);
    const u = await call('POST', '/api/v2.1/upload-links/', { form: { repo_id: repo, path: '/ops' } });
    expect(u.json.link).toContain('/u/d/');
    expect((await call('GET', '/api/v2.1/upload-links/')).json).toHaveLength(1);
    expect((await call('DELETE', `/api/v2.1/upload-links/${u.json.token}/`)).json).toEqual({ success: true });
  });
});
