// Regression tests for the holes of issue 13 in `seafs serve`: each probe of
// the attack as it was made, and what the server answers now.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/server/store/db.js';
import { totpAt } from '../../src/server/auth/totp.js';
import {
  apiAs,
  createUser,
  getToken,
  startTestServer,
  uploadTo,
  startServerWithUsers,
  newLibrary,
  BOB,
  type TestServer,
} from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;
let bobRepo: string;
const anon = () => apiAs(server.url, null);

beforeAll(async () => {
  // test knobs: a stalled body is dropped after 1 s; 3 wrong logins per account and minute
  ({
    server,
    admin,
    users: [bob],
  } = await startServerWithUsers([BOB], {
    extraArgs: ['--body-idle-timeout', '1', '--login-fail-limit', '3', '--login-fail-window', '60', '--verbose'],
  }));
  bobRepo = await newLibrary(bob, 'bob-lib');
});

afterAll(async () => {
  await server?.stop();
});

async function names(call: ReturnType<typeof apiAs>, repo: string, p = '/'): Promise<string[]> {
  return ((await call('GET', `/api2/repos/${repo}/dir/`, { query: { p } })).json as { name: string }[]).map(
    (e) => e.name,
  );
}

/** The server's log once it shows `want` (stderr arrives a little after the answer), or as it is after 5 s. */
async function logShowing(want: string): Promise<string> {
  for (let i = 0; i < 50 && !server.log().includes(want); i++) await new Promise((r) => setTimeout(r, 100));
  return server.log();
}

/** Follows a 302 from a share link to the file's bytes. */
async function followDownload(res: { status: number; headers: Headers }): Promise<string> {
  expect(res.status).toBe(302);
  return (await fetch(res.headers.get('location')!)).text();
}

describe('share links', () => {
  it('a link with a password serves nothing without it or with a wrong one, and the file with it; the password is stored hashed', async () => {
    const repo = await newLibrary(admin, 'links', { 'report.txt': 'quarterly numbers' });
    const link = await admin('POST', '/api/v2.1/share-links/', {
      json: { repo_id: repo, path: '/report.txt', password: 'link-pw-123' },
    });
    expect(link.status).toBe(200);
    const page = `/f/${link.json.token}/`;
    expect((await anon()('GET', page)).status).toBe(403);
    expect((await anon()('GET', page, { query: { password: 'guess-1234' } })).status).toBe(403);
    expect((await anon()('POST', page, { form: { password: 'guess-1234' } })).status).toBe(403);
    expect(await followDownload(await anon()('POST', page, { form: { password: 'link-pw-123' } }))).toBe(
      'quarterly numbers',
    );
    expect(await followDownload(await anon()('GET', page, { query: { password: 'link-pw-123' } }))).toBe(
      'quarterly numbers',
    );
    expect(readFileSync(path.join(server.dataDir, 'db.json'), 'utf8')).not.toContain('link-pw-123');
    // --verbose names the request without the link's token or the password
    const log = await logShowing('POST /f/<token>/');
    // the server's own redaction, or the logger's on top of it
    expect(log).toMatch(/GET \/f\/<token>\/\?password=(%3Credacted%3E|<redacted>)/);
    expect(log).not.toContain(link.json.token);
    expect(log).not.toContain('link-pw-123');
  });

  it('a folder link lists its folder and hands out its files only with its password, never above its folder', async () => {
    const repo = await newLibrary(admin, 'folder-link', { 'top.txt': 'above the link' });
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/pub' }, form: { operation: 'mkdir' } });
    const up = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/pub' } })).json as string;
    await uploadTo(up, '/pub', { 'inside.txt': 'inside the link' });
    const link = await admin('POST', '/api/v2.1/share-links/', {
      json: { repo_id: repo, path: '/pub', password: 'dir-pw-123' },
    });
    expect(link.json.link).toBe(`${server.url}/d/${link.json.token}/`);
    const list = `/api2/d/${link.json.token}/dir/`;
    expect((await anon()('GET', list)).status).toBe(403);
    expect((await anon()('GET', list, { query: { password: 'nope-nope' } })).status).toBe(403);
    const ok = await anon()('GET', list, { query: { password: 'dir-pw-123' } });
    expect(ok.json.map((e: { name: string }) => e.name)).toEqual(['inside.txt']);
    expect((await anon()('GET', list, { query: { password: 'dir-pw-123', p: '/..' } })).status).toBe(400);
    const file = `/d/${link.json.token}/files/`;
    expect((await anon()('GET', file, { query: { p: '/inside.txt' } })).status).toBe(403);
    expect(
      await followDownload(await anon()('GET', file, { query: { p: '/inside.txt', password: 'dir-pw-123' } })),
    ).toBe('inside the link');
    expect((await anon()('GET', file, { query: { p: '/top.txt', password: 'dir-pw-123' } })).status).toBe(404);
  });

  it('an upload link hands out an upload URL only with its password, and only while its creator may write', async () => {
    const repo = await newLibrary(admin, 'drop-box', { 'a.txt': 'a' });
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'rw' },
    });
    const link = await bob('POST', '/api/v2.1/upload-links/', {
      json: { repo_id: repo, path: '/', password: 'drop-pw-123' },
    });
    expect(link.status).toBe(200);
    const ask = `/api/v2.1/upload-links/${link.json.token}/upload/`;
    expect((await anon()('GET', ask)).status).toBe(403);
    expect((await anon()('GET', ask, { query: { password: 'wrong-pw-1' } })).status).toBe(403);
    const ok = await anon()('GET', ask, { query: { password: 'drop-pw-123' } });
    expect((await uploadTo(ok.json.upload_link, '/', { 'dropped.txt': 'dropped in' })).status).toBe(200);
    expect(await names(admin, repo)).toContain('dropped.txt');
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'r' },
    });
    expect((await anon()('GET', ask, { query: { password: 'drop-pw-123' } })).status).toBe(404);
    expect(await logShowing(`GET /api/v2.1/upload-links/<token>/upload/`)).not.toContain(link.json.token);
  });

  it('a share link made with expiration_time (what seafile-js sends) keeps it and stops serving once it passed', async () => {
    const repo = await newLibrary(admin, 'expiring', { 'soon.txt': 'short-lived', 'later.txt': 'longer' });
    // seahub takes an ISO 8601 time with any offset; with no minimum set, one already past is taken too
    const future = new Date(Date.now() + 3 * 86400_000);
    future.setUTCMilliseconds(0);
    const later = await admin('POST', '/api/v2.1/share-links/', {
      json: { repo_id: repo, path: '/later.txt', expiration_time: future.toISOString().replace('Z', '+00:00') },
    });
    expect(later.status).toBe(200);
    expect(Date.parse(later.json.expire_date)).toBe(future.getTime());
    expect(later.json.is_expired).toBe(false);
    expect(await followDownload(await anon()('GET', `/f/${later.json.token}/`))).toBe('longer');

    const past = new Date(Date.now() - 60_000).toISOString();
    const soon = await admin('POST', '/api/v2.1/share-links/', {
      json: { repo_id: repo, path: '/soon.txt', expiration_time: past },
    });
    expect(soon.status).toBe(200);
    expect(soon.json.is_expired).toBe(true);
    expect((await anon()('GET', `/f/${soon.json.token}/`)).status).toBe(404);
    const listed = (await admin('GET', '/api/v2.1/share-links/', { query: { repo_id: repo } })).json as {
      token: string;
      expire_date: string;
    }[];
    expect(listed.find((l) => l.token === soon.json.token)?.expire_date).not.toBe('');

    // a value that is not a time, or both fields at once, is refused and no link is made
    const bad = await admin('POST', '/api/v2.1/share-links/', {
      json: { repo_id: repo, path: '/soon.txt', expiration_time: 'next tuesday' },
    });
    expect(bad.status).toBe(400);
    const both = await admin('POST', '/api/v2.1/share-links/', {
      form: { repo_id: repo, path: '/later.txt', expire_days: '2', expiration_time: past },
    });
    expect(both.status).toBe(400);
    expect(
      (await admin('POST', '/api/v2.1/share-links/', { form: { repo_id: repo, path: '/', expire_days: '0' } })).status,
    ).toBe(400);
  });

  it('an upload link keeps its expiry (expiration_time or expire_days) and stops serving once it passed', async () => {
    const repo = await newLibrary(admin, 'expiring-drop', { 'a.txt': 'a' });
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/in' }, form: { operation: 'mkdir' } });
    const past = new Date(Date.now() - 60_000).toISOString();
    const gone = await admin('POST', '/api/v2.1/upload-links/', {
      json: { repo_id: repo, path: '/in', expiration_time: past, password: 'drop-pw-456' },
    });
    expect(gone.status).toBe(200);
    expect(gone.json).toMatchObject({ is_expired: true, path: '/in/' });
    const ask = `/api/v2.1/upload-links/${gone.json.token}/upload/`;
    expect((await anon()('GET', ask, { query: { password: 'drop-pw-456' } })).status).toBe(404);
    expect((await anon()('GET', `/u/d/${gone.json.token}/`)).status).toBe(404);

    const live = await admin('POST', '/api/v2.1/upload-links/', {
      form: { repo_id: repo, path: '/', expire_days: '2', password: 'drop-pw-789' },
    });
    expect(live.json.is_expired).toBe(false);
    const days = (Date.parse(live.json.expire_date) - Date.now()) / 86400_000;
    expect(days).toBeGreaterThan(1.99);
    expect(days).toBeLessThanOrEqual(2);
    const liveAsk = `/api/v2.1/upload-links/${live.json.token}/upload/`;
    expect((await anon()('GET', liveAsk)).status).toBe(403);
    expect((await anon()('GET', liveAsk, { query: { password: 'drop-pw-789' } })).status).toBe(200);
    expect(
      (await admin('POST', '/api/v2.1/upload-links/', { json: { repo_id: repo, path: '/', expiration_time: 'x' } }))
        .status,
    ).toBe(400);
  });

  it("a link stops serving once its creator's share of the library is revoked", async () => {
    const repo = await newLibrary(admin, 'revoked', { 'plan.txt': 'the plan' });
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'r' },
    });
    const link = await bob('POST', '/api/v2.1/share-links/', { json: { repo_id: repo, path: '/plan.txt' } });
    expect(link.status).toBe(200);
    expect(await followDownload(await anon()('GET', `/f/${link.json.token}/`))).toBe('the plan');
    await admin('DELETE', `/api2/shared-repos/${repo}/`, { query: { share_type: 'personal', user: 'bob@seafs.test' } });
    expect((await anon()('GET', `/f/${link.json.token}/`)).status).toBe(404);
  });
});

describe('encrypted libraries', () => {
  let enc: string;
  beforeAll(async () => {
    enc = await newLibrary(admin, 'vault', { 'secret.txt': 'plaintext secret' }, 'vault-pw');
    await createUser(server, 'carol@seafs.test', 'carol-pw');
    await admin('PUT', `/api2/shared-repos/${enc}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'rw' },
    });
  });

  it('without the password, no copy or move of its files leaves it (single, batch and sync-batch forms)', async () => {
    const tries = [
      bob('POST', `/api2/repos/${enc}/fileops/copy/`, {
        form: { p: '/', file_names: 'secret.txt', dst_repo: bobRepo, dst_dir: '/' },
      }),
      bob('POST', `/api2/repos/${enc}/fileops/move/`, {
        form: { p: '/', file_names: 'secret.txt', dst_repo: bobRepo, dst_dir: '/' },
      }),
      bob('POST', '/api/v2.1/repos/sync-batch-copy-item/', {
        json: {
          src_repo_id: enc,
          src_parent_dir: '/',
          dst_repo_id: bobRepo,
          dst_parent_dir: '/',
          src_dirents: ['secret.txt'],
        },
      }),
      bob('POST', '/api/v2.1/repos/sync-batch-move-item/', {
        json: {
          src_repo_id: enc,
          src_parent_dir: '/',
          dst_repo_id: bobRepo,
          dst_parent_dir: '/',
          src_dirents: ['secret.txt'],
        },
      }),
      bob('POST', `/api2/repos/${enc}/file/`, {
        query: { p: '/secret.txt' },
        form: { operation: 'move', dst_repo: bobRepo, dst_dir: '/' },
      }),
      bob('POST', `/api2/repos/${enc}/file/`, {
        query: { p: '/secret.txt' },
        form: { operation: 'copy', dst_repo: bobRepo, dst_dir: '/' },
      }),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.status).toBe(400);
      expect(res.json.error_msg).toMatch(/encrypted/);
    }
    expect(await names(bob, bobRepo)).not.toContain('secret.txt');
    expect(await names(admin, enc)).toContain('secret.txt');
  });

  it('without the password, history, file history, revisions and trash answer as on seahub 10.0', async () => {
    const commits = (await admin('GET', `/api2/repos/${enc}/history/`)).json.commits as { id: string }[];
    expect((await bob('GET', `/api2/repos/${enc}/history/`)).status).toBe(200);
    const v21 = await bob('GET', `/api/v2.1/repos/${enc}/history/`);
    expect(v21.status).toBe(403);
    expect(v21.json.error_msg).toBe('Library is encrypted, but password is not set in server.');
    expect((await bob('GET', `/api2/repos/${enc}/file/history/`, { query: { p: '/secret.txt' } })).status).toBe(200);
    expect((await bob('GET', `/api/v2.1/repos/${enc}/trash/`)).status).toBe(200);
    // a revision's link is given, its content refused by the file server
    const rev = await bob('GET', `/api2/repos/${enc}/file/revision/`, {
      query: { p: '/secret.txt', commit_id: commits[0].id },
    });
    expect(rev.status).toBe(200);
    const refused = await fetch(rev.json);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/^Repo is encrypted/);
    // with the password the content comes
    expect((await bob('POST', `/api2/repos/${enc}/`, { form: { password: 'vault-pw' } })).status).toBe(200);
    const again = await bob('GET', `/api2/repos/${enc}/file/revision/`, {
      query: { p: '/secret.txt', commit_id: commits[0].id },
    });
    expect(await (await fetch(again.json)).text()).toBe('plaintext secret');
  });
});

describe('request bodies', () => {
  it('an upload whose form fields add up to more than a few KiB is refused, and nothing is stored', async () => {
    const repo = await newLibrary(admin, 'fields', { 'keep.txt': 'k' });
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json as string;
    const fd = new FormData();
    for (let i = 0; i < 2000; i++) fd.append(`f${i}`, 'x'.repeat(1000));
    fd.append('parent_dir', '/');
    fd.append('file', new Blob(['payload']), 'flood.txt');
    const res = await fetch(link, { method: 'POST', body: fd });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/form fields/);
    expect(await names(admin, repo)).toEqual(['keep.txt']);
  });

  it('a request whose body never comes is dropped after the body idle time, the login included', async () => {
    const { port } = new URL(server.url);
    const sock = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => sock.once('connect', resolve));
    const closed = new Promise<string>((resolve) => {
      let got = '';
      sock.on('data', (d) => (got += d.toString()));
      sock.once('close', () => resolve(got));
    });
    sock.write(
      'POST /api2/auth-token/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n',
    );
    const outcome = await Promise.race([
      closed.then(() => 'closed'),
      new Promise((r) => setTimeout(() => r('still open'), 15_000)),
    ]);
    sock.destroy();
    expect(outcome).toBe('closed');
  });

  it('a slow upload whose bytes keep coming outlasts the body idle time and lands whole', async () => {
    const repo = await newLibrary(admin, 'slow', { 'a.txt': 'a' });
    const link = new URL(
      (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json as string,
    );
    const boundary = 'slowboundary42';
    const content = 'z'.repeat(4000);
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="parent_dir"\r\n\r\n/\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.txt"\r\n\r\n${content}\r\n--${boundary}--\r\n`,
    );
    const sock = net.connect(Number(link.port), '127.0.0.1');
    await new Promise((resolve) => sock.once('connect', resolve));
    let answer = '';
    sock.on('data', (d) => (answer += d.toString()));
    const closed = new Promise((resolve) => sock.once('close', resolve));
    sock.write(
      `POST ${link.pathname} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
        `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // 8 pieces 400 ms apart: 3.2 s in all, more than the 1 s idle time, never 1 s without a byte
    const piece = Math.ceil(body.length / 8);
    for (let off = 0; off < body.length; off += piece) {
      await new Promise((r) => setTimeout(r, 400));
      sock.write(body.subarray(off, off + piece));
    }
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const dl = await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/slow.txt' } });
    expect(await (await fetch(dl.json)).text()).toBe(content);
  });
});

describe('quota', () => {
  it('8 concurrent 1 MB uploads under a 3 MB quota: 3 land, the rest get 443, usage stays at the quota', async () => {
    await createUser(server, 'dave@seafs.test', 'dave-pw', { storage: '3' });
    const dave = apiAs(server.url, await getToken(server.url, 'dave@seafs.test', 'dave-pw'));
    const repo = (await dave('POST', '/api2/repos/', { form: { name: 'full' } })).json.repo_id;
    const links = await Promise.all(
      Array.from({ length: 8 }, () => dave('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })),
    );
    const results = await Promise.all(
      links.map((l, i) => uploadTo(l.json, '/', { [`f${i}.bin`]: Buffer.alloc(1_000_000, i) })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 443, 443, 443, 443, 443]);
    expect((await dave('GET', '/api2/account/info/')).json.usage).toBe(3_000_000);
    expect(await names(dave, repo)).toHaveLength(3);
  });
});

describe('locks', () => {
  it("a folder holding a file locked by someone else cannot be deleted or renamed; the lock follows its owner's rename", async () => {
    const repo = await newLibrary(admin, 'locked', { 'base.txt': 'b' });
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/dir' }, form: { operation: 'mkdir' } });
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/dir' } })).json as string;
    await uploadTo(link, '/dir', { 'a.txt': 'locked content' });
    expect(
      (await admin('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/dir/a.txt', operation: 'lock' } })).status,
    ).toBe(200);
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'rw' },
    });
    expect((await bob('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/dir' } })).status).toBe(403);
    expect((await bob('DELETE', `/api/v2.1/repos/${repo}/dir/`, { query: { p: '/dir' } })).status).toBe(403);
    expect(
      (await bob('POST', `/api2/repos/${repo}/fileops/delete/`, { query: { p: '/' }, form: { file_names: 'dir' } }))
        .status,
    ).toBe(403);
    expect(
      (
        await bob('POST', `/api2/repos/${repo}/dir/`, {
          query: { p: '/dir' },
          form: { operation: 'rename', newname: 'gone' },
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await bob('POST', `/api2/repos/${repo}/fileops/move/`, {
          form: { p: '/', file_names: 'dir', dst_repo: bobRepo, dst_dir: '/' },
        })
      ).status,
    ).toBe(403);
    expect(await names(admin, repo, '/dir')).toEqual(['a.txt']);
    // the owner renames the folder: the lock goes with the file, the old path is free
    expect(
      (
        await admin('POST', `/api2/repos/${repo}/dir/`, {
          query: { p: '/dir' },
          form: { operation: 'rename', newname: 'dir2' },
        })
      ).status,
    ).toBe(200);
    expect(
      (await admin('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/dir2/a.txt' } })).json.is_locked,
    ).toBe(true);
    await bob('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/dir' }, form: { operation: 'mkdir' } });
    expect(
      (await bob('POST', `/api2/repos/${repo}/file/`, { query: { p: '/dir/a.txt' }, form: { operation: 'create' } }))
        .status,
    ).toBe(201);
    expect((await bob('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/dir/a.txt' } })).status).toBe(200);
    expect((await bob('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/dir2/a.txt' } })).status).toBe(403);
  });
});

describe('accounts and logins', () => {
  it('__proto__, constructor and toString are not accounts', async () => {
    expect((await admin('PUT', '/api2/accounts/__proto__/', { form: { name: 'x', is_active: 'true' } })).status).toBe(
      400,
    );
    expect((await admin('GET', '/api2/accounts/toString/')).status).toBe(404);
    expect((await admin('GET', '/api2/accounts/constructor/')).status).toBe(404);
    expect((await admin('GET', '/api2/accounts/__proto__/')).status).toBe(404);
    const login = await anon()('POST', '/api2/auth-token/', {
      form: { username: 'constructor', password: 'anything' },
    });
    expect(login.status).toBe(400);
    expect(login.json.token).toBeUndefined();
  });

  it('wrong passwords past the limit get 429 for that account, the right one too, while other accounts log in', async () => {
    await createUser(server, 'erin@seafs.test', 'erin-pw');
    for (let i = 0; i < 3; i++) {
      expect(
        (await anon()('POST', '/api2/auth-token/', { form: { username: 'erin@seafs.test', password: `wrong-${i}` } }))
          .status,
      ).toBe(400);
    }
    const blocked = await anon()('POST', '/api2/auth-token/', {
      form: { username: 'erin@seafs.test', password: 'erin-pw' },
    });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(
      (await anon()('POST', '/api2/auth-token/', { form: { username: 'bob@seafs.test', password: BOB.password } }))
        .status,
    ).toBe(200);
  });

  it('a two-factor code works once', async () => {
    const secret = 'JBSWY3DPEHPK3PXPJBSWY3DP';
    await createUser(server, 'otp@seafs.test', 'otp-pw', { totp_secret: secret });
    const form = { username: 'otp@seafs.test', password: 'otp-pw' };
    const code = totpAt(secret, Date.now());
    expect((await anon()('POST', '/api2/auth-token/', { form, headers: { 'X-Seafile-OTP': code } })).status).toBe(200);
    const again = await anon()('POST', '/api2/auth-token/', { form, headers: { 'X-Seafile-OTP': code } });
    expect(again.status).toBe(400);
    expect(again.json.non_field_errors[0]).toMatch(/invalid/);
  });
});

describe('data at rest', () => {
  it('db.json holds no API token, and the data dir and its folders are 0700', async () => {
    const token = await getToken(server.url, 'bob@seafs.test', 'bob-pw');
    expect(readFileSync(path.join(server.dataDir, 'db.json'), 'utf8')).not.toContain(token);
    for (const d of ['', 'tmp', 'heads', 'objects', 'objects/00', 'objects/ff']) {
      expect((statSync(path.join(server.dataDir, d)).mode & 0o777).toString(8)).toBe('700');
    }
  });

  it('a db.json with plain tokens and link passwords from before is converted: the old token still works, the same at login', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-old-db-'));
    const oldToken = 'ab'.repeat(20);
    const user = {
      id: 2,
      email: 'old@seafs.test',
      name: 'old',
      note: '',
      passwordHash: hashPassword('old-pw'),
      isStaff: false,
      isActive: true,
      quota: -2,
      totpSecret: '',
      token: oldToken,
      createTime: 1,
    };
    const link = {
      token: 'cafe'.repeat(5),
      username: 'old@seafs.test',
      repoId: 'none',
      path: '/x',
      isDir: false,
      ctime: 1,
      expire: null,
      password: 'old-link-pw',
      viewCnt: 0,
    };
    writeFileSync(
      path.join(dir, 'db.json'),
      JSON.stringify({
        nextUserId: 3,
        users: { 'old@seafs.test': user },
        repos: {},
        shares: [],
        shareLinks: [link],
        uploadLinks: [],
        starred: [],
        locks: {},
      }),
    );
    const old = await startTestServer({ dataDir: dir });
    try {
      expect((await apiAs(old.url, oldToken)('GET', '/api2/auth/ping/')).json).toBe('pong');
      expect(await getToken(old.url, 'old@seafs.test', 'old-pw')).toBe(oldToken);
      const text = readFileSync(path.join(dir, 'db.json'), 'utf8');
      expect(text).not.toContain(oldToken);
      expect(text).not.toContain('old-link-pw');
    } finally {
      await old.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--verbose logs no download or upload token', async () => {
    const repo = await newLibrary(admin, 'logged', { 'l.txt': 'logged' });
    const dl = (await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/l.txt' } })).json as string;
    expect(await (await fetch(dl)).text()).toBe('logged');
    const up = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json as string;
    await uploadTo(up, '/', { 'm.txt': 'm' });
    const log = await logShowing('/seafhttp/upload-api/<token>');
    expect(log).toContain('/seafhttp/files/<token>/');
    expect(log).not.toContain(new URL(dl).pathname.split('/')[3]);
    expect(log).not.toContain(new URL(up).pathname.split('/')[3]);
  });
});
