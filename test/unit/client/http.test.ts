// The client against tiny misbehaving servers: retries where safe and only
// there, timeouts, refused connections, unfollowed 301s, error bodies of
// every shape, ranged downloads.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import { clientFixture, closedPort, failure, json, text } from '../../helpers/client-fixture.js';

const { servers, clients, setup } = clientFixture();

describe('retries', () => {
  it('retries a GET that fails with 500, then succeeds', async () => {
    const { srv, client } = await setup((_req, res, _b, n) => (n === 1 ? text(res, 500, 'boom') : json(res, 200, [])));
    expect(await client.listLibraries()).toEqual([]);
    expect(srv.seen.map((s) => s.method)).toEqual(['GET', 'GET']);
    expect(srv.seen[0]!.headers.authorization).toBe('Token tok');
  });

  it('tells onAttempt of each attempt with its status and time, never the URL', async () => {
    const seen: [string, string, number | string, number][] = [];
    const { client } = await setup((_req, res, _b, n) => (n === 1 ? text(res, 500, 'boom') : json(res, 200, [])), {
      onAttempt: (...a) => seen.push(a),
    });
    await client.listLibraries();
    expect(seen.map(([op, method, outcome]) => [op, method, outcome])).toEqual([
      ['list libraries', 'GET', 500],
      ['list libraries', 'GET', 200],
    ]);
    expect(seen.every(([, , , ms]) => ms >= 0 && ms < 2000)).toBe(true);
  });

  it('gives up after maxRetries with a server error', async () => {
    const { srv, client } = await setup((_req, res) => text(res, 502, '<html><title>Bad Gateway</title></html>'), {
      maxRetries: 2,
    });
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('server');
    expect(e.status).toBe(502);
    expect(e.serverMessage).toBe('Bad Gateway');
    expect(e.operation).toBe('list libraries');
    expect(srv.seen).toHaveLength(3);
  });

  it('re-sends a rename that failed with 500 only after the folder shows it was not done', async () => {
    const { srv, client } = await setup((req, res, _b, n) => {
      if (req.method === 'GET') return json(res, 200, [{ type: 'file', name: 'a.txt', id: 'x', size: 1, mtime: 1 }]);
      if (n === 1) return json(res, 500, { error_msg: 'Internal error' });
      res.writeHead(301, { location: '/x/' });
      res.end('"success"');
    });
    await client.renameFile('r1', '/a.txt', 'b.txt');
    expect(srv.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /api2/repos/r1/file/?p=%2Fa.txt',
      'GET /api2/repos/r1/dir/?p=%2F',
      'POST /api2/repos/r1/file/?p=%2Fa.txt',
    ]);
    expect(srv.seen[2]!.body.toString()).toBe('operation=rename&newname=b.txt');
  });

  it('takes a rename whose answer was lost as done when the folder shows the new name and not the old', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.method === 'GET') return json(res, 200, [{ type: 'file', name: 'b.txt', id: 'x', size: 1, mtime: 1 }]);
      req.socket.destroy(); // the server renamed, the answer is lost
    });
    await client.renameFile('r1', '/d/a.txt', 'b.txt');
    expect(srv.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /api2/repos/r1/file/?p=%2Fd%2Fa.txt',
      'GET /api2/repos/r1/dir/?p=%2Fd',
    ]);
  });

  it('reports the first failure of a checked write when the look at the folder fails too', async () => {
    const { srv, client } = await setup((req, res) =>
      req.method === 'GET' ? text(res, 404, 'gone') : json(res, 500, { error_msg: 'Internal error' }),
    );
    const e = await failure(client.mkdir('r1', '/new'));
    expect(e.kind).toBe('server');
    expect(e.serverMessage).toBe('Internal error');
    expect(srv.seen.map((s) => s.method)).toEqual(['POST', 'GET']);
  });

  it('takes a mkdir whose answer was lost as done when the folder is there (no "new (1)")', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.method === 'GET') return json(res, 200, [{ type: 'dir', name: 'new', id: '0'.repeat(40), mtime: 1 }]);
      req.socket.destroy();
    });
    await client.mkdir('r1', '/new');
    expect(srv.seen.map((s) => s.method)).toEqual(['POST', 'GET']);
  });

  it('never retries a copy (an unchecked non-idempotent POST) whose connection was reset', async () => {
    const { srv, client } = await setup((req) => req.socket.destroy());
    const e = await failure(client.copyFile('r1', '/a.txt', 'r1', '/dst'));
    expect(e.kind).toBe('network');
    expect(e.status).toBe(0);
    expect(srv.seen).toHaveLength(1);
  });

  it('retries an idempotent delete after a reset, and a 404 on the retry means done', async () => {
    const { srv, client } = await setup((req, res, _b, n) =>
      n === 1 ? req.socket.destroy() : json(res, 404, { error_msg: 'Folder /d not found.' }),
    );
    await client.deleteDir('r1', '/d');
    expect(srv.seen.map((s) => s.method)).toEqual(['DELETE', 'DELETE']);
  });

  it('waits for Retry-After on 429 and retries, even a non-idempotent write', async () => {
    let firstAt = 0;
    let secondAt = 0;
    const { srv, client } = await setup((_req, res, _b, n) => {
      if (n === 1) {
        firstAt = Date.now();
        json(res, 429, { detail: 'Request was throttled. Expected available in 1 seconds.' }, { 'retry-after': '1' });
      } else {
        secondAt = Date.now();
        res.writeHead(301, { location: '/elsewhere/' });
        res.end('"success"');
      }
    });
    await client.moveFile('r1', '/a', 'r2', '/dst');
    expect(srv.seen).toHaveLength(2);
    expect(secondAt - firstAt).toBeGreaterThanOrEqual(950);
  });

  it('caps a huge Retry-After and reports throttled once retries are spent', async () => {
    const { srv, client } = await setup(
      (_req, res) => json(res, 429, { detail: 'slow down' }, { 'retry-after': '3600' }),
      {
        maxRetries: 1,
        maxRetryAfterMs: 100,
      },
    );
    const t0 = Date.now();
    const e = await failure(client.accountInfo());
    expect(e.kind).toBe('throttled');
    expect(e.retryAfterMs).toBe(3_600_000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(srv.seen).toHaveLength(2);
  });

  it('retries link requests on 5xx but never a quota refusal', async () => {
    const { srv, client } = await setup((req, res, _b, n) => {
      if (req.url!.includes('upload-link'))
        return n === 1 ? text(res, 502, 'bad gateway') : json(res, 200, 'http://x/upload-api/t');
      json(res, 500, { error_msg: 'Out of quota.' });
    });
    expect(await client.uploadLink('r', '/')).toBe('http://x/upload-api/t');
    expect(srv.seen).toHaveLength(2);
    expect((await failure(client.updateLink('r', '/'))).kind).toBe('quota');
    expect(srv.seen).toHaveLength(3);
  });

  it('re-unlocks an encrypted library the server forgot, once, and resends the refused call', async () => {
    let unlocked = false;
    let refusals = 0;
    const { srv, client } = await setup((req, res, body) => {
      if (req.method === 'POST' && req.url === '/api2/repos/enc/') {
        unlocked = body.toString() === 'password=pw';
        return json(res, unlocked ? 200 : 400, unlocked ? 'success' : { error_msg: 'Incorrect password' });
      }
      if (!unlocked) {
        refusals++;
        return json(res, 400, { error_msg: 'Library is encrypted, please provide the password first.' });
      }
      json(res, 200, 'http://x/upload-api/t');
    });
    // no password known: the refusal comes through
    expect((await failure(client.uploadLink('enc', '/'))).kind).toBe('password_required');
    await client.unlockLibrary('enc', 'pw');
    expect(await client.uploadLink('enc', '/')).toBe('http://x/upload-api/t');
    unlocked = false; // the server forgets
    expect(await client.uploadLink('enc', '/')).toBe('http://x/upload-api/t');
    expect(srv.seen.map((r) => r.method)).toEqual(['GET', 'POST', 'GET', 'GET', 'POST', 'GET']);
    expect(refusals).toBe(2);
    // a password that stopped working: one unlock attempt, then the original refusal
    client.forgetLibraryPassword('enc');
    unlocked = false;
    expect((await failure(client.downloadLink('enc', '/f'))).kind).toBe('password_required');
  });

  it('re-sends an upload refused with 429, with the whole body again', async () => {
    const { srv, client } = await setup((_req, res, _b, n) =>
      n === 1
        ? json(res, 429, { detail: 'slow' }, { 'retry-after': '0' })
        : json(res, 200, [{ name: 'f', id: 'a'.repeat(40), size: 5 }]),
    );
    const dir = mkdtempSync(join(tmpdir(), 'seafs-up-'));
    try {
      writeFileSync(join(dir, 'f'), 'hello');
      expect(await client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), 'f')).toEqual([
        { name: 'f', id: 'a'.repeat(40), size: 5 },
      ]);
      expect(srv.seen).toHaveLength(2);
      expect(srv.seen[1]!.body.toString()).toContain('hello');
      expect(srv.seen[1]!.body.length).toBe(srv.seen[0]!.body.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does not re-send a new upload whose answer was lost when the folder shows it arrived', async () => {
    const now = Math.floor(Date.now() / 1000);
    const { srv, client } = await setup((req, res) => {
      if (req.method === 'GET')
        return json(res, 200, [{ type: 'file', name: 'f.txt', id: 'b'.repeat(40), size: 5, mtime: now }]);
      req.socket.destroy();
    });
    const dir = mkdtempSync(join(tmpdir(), 'seafs-up-'));
    try {
      writeFileSync(join(dir, 'f'), 'hello');
      expect(await client.upload(`${srv.url}/upload-api/t`, '/d', join(dir, 'f'), 'f.txt', { repoId: 'r1' })).toEqual([
        { name: 'f.txt', id: 'b'.repeat(40), size: 5 },
      ]);
      expect(srv.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
        'POST /upload-api/t?ret-json=1',
        'GET /api2/repos/r1/dir/?p=%2Fd',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('re-sends a new upload whose answer was lost when the folder does not show it, and never one it cannot check', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.method === 'GET')
        return json(res, 200, [{ type: 'file', name: 'f.txt', id: 'c'.repeat(40), size: 5, mtime: 1000 }]); // an older file
      if (srv.seen.filter((s) => s.method === 'POST').length === 1) return req.socket.destroy();
      json(res, 200, [{ name: 'f (1).txt', id: 'd'.repeat(40), size: 5 }]);
    });
    const dir = mkdtempSync(join(tmpdir(), 'seafs-up-'));
    try {
      writeFileSync(join(dir, 'f'), 'hello');
      const up = await client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), 'f.txt', { repoId: 'r1' });
      expect(up[0]!.name).toBe('f (1).txt');
      expect(srv.seen.map((s) => s.method)).toEqual(['POST', 'GET', 'POST']);
      // without the library id there is no way to look: the lost answer is reported
      srv.seen.length = 0;
      const e = await failure(client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), 'f.txt'));
      expect(e.kind).toBe('network');
      expect(srv.seen.map((s) => s.method)).toEqual(['POST']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('timeouts and connections', () => {
  it('times out on a server that never answers, and starts no second wait past the timeout', async () => {
    const { srv, client } = await setup(() => undefined, { timeoutMs: 300, maxRetries: 3 });
    const t0 = Date.now();
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('timeout');
    expect(e.status).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(srv.seen).toHaveLength(1); // the call's budget is spent: a read is not sent again
  });

  it('times out a body that stalls half-way', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('[{"name": ');
      },
      { timeoutMs: 300, maxRetries: 0 },
    );
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('timeout');
  });

  it('bounds the whole exchange: a server dripping bytes times out too', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
        res.write('[');
        const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(' ')), 50);
        res.on('close', () => clearInterval(t));
      },
      { timeoutMs: 400, maxRetries: 0 },
    );
    const t0 = Date.now();
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('times out an upload whose answer never comes, and does not resend it', async () => {
    const { srv, client } = await setup(() => undefined, { transferTimeoutMs: 300, maxRetries: 3 });
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'seafs-up-'));
    try {
      writeFileSync(join(dir, 'f'), Buffer.alloc(100_000));
      const e = await failure(client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), 'f'));
      expect(e.kind).toBe('timeout');
      expect(e.operation).toBe('upload');
      expect(srv.seen).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('does not retry a timed-out non-idempotent write', async () => {
    const { srv, client } = await setup(() => undefined, { timeoutMs: 300, maxRetries: 3 });
    const e = await failure(client.mkdir('r', '/x'));
    expect(e.kind).toBe('timeout');
    expect(srv.seen).toHaveLength(1);
  });

  it('gives up a first login to a port that refuses connections after its own retries, not after loginRetryMs', async () => {
    const port = await closedPort();
    const t0 = Date.now();
    const e = await failure(
      SeafileClient.login({ baseUrl: `http://127.0.0.1:${port}`, retryBaseMs: 5, loginRetryMs: 60_000 }, 'a@b.c', 'pw'),
    );
    expect(e.kind).toBe('network');
    expect(e.serverMessage).toMatch(/ECONNREFUSED/);
    expect(Date.now() - t0).toBeLessThan(30_000);
  });

  it('reports a refused connection as network, after retrying', async () => {
    const port = await closedPort();
    const client = new SeafileClient({ baseUrl: `http://127.0.0.1:${port}`, retryBaseMs: 5, maxRetries: 2 });
    clients.push(client);
    const e = await failure(client.ping());
    expect(e.kind).toBe('network');
    expect(e.serverMessage).toMatch(/ECONNREFUSED/);
  });
});

describe('connections', () => {
  it('reuses keep-alive connections for sequential calls', async () => {
    const sockets = new Set<unknown>();
    const { client } = await setup((req, res) => {
      sockets.add(req.socket);
      json(res, 200, []);
    });
    for (let i = 0; i < 10; i++) await client.listLibraries();
    // undici's pool may open a second socket while the first is still being released
    expect(sockets.size).toBeLessThanOrEqual(2);
  });

  it('opens at most `connections` sockets per host, queueing the rest', async () => {
    const sockets = new Set<unknown>();
    let inFlight = 0;
    let peak = 0;
    const { client } = await setup(
      (req, res) => {
        sockets.add(req.socket);
        peak = Math.max(peak, ++inFlight);
        setTimeout(() => {
          inFlight--;
          json(res, 200, []);
        }, 50);
      },
      { connections: 4 },
    );
    await Promise.all(Array.from({ length: 12 }, () => client.listLibraries()));
    expect(sockets.size).toBe(4);
    expect(peak).toBe(4);
  });
});

describe('answers', () => {
  it('does not follow the 301 of rename and move', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url!.startsWith('/api2/repos/')) {
        res.writeHead(301, { location: `${srv.url}/trap/`, 'content-type': 'application/json' });
        res.end('"success"');
      } else json(res, 500, { error_msg: 'followed the redirect' });
    });
    await client.renameFile('r', '/a', 'b');
    await client.moveFile('r', '/a', 'r', '/sub');
    await client.renameDir('r', '/d', 'e');
    expect(srv.seen.map((s) => s.url.split('?')[0])).toEqual([
      '/api2/repos/r/file/',
      '/api2/repos/r/file/',
      '/api2/repos/r/dir/',
    ]);
  });

  it('treats a 301 where none is expected as a protocol error', async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(301, { location: '/x' });
      res.end();
    });
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('protocol');
    expect(e.status).toBe(301);
  });

  it('parses error bodies that are not JSON', async () => {
    const bodies: [number, string, string, string][] = [
      [400, '{"error": "Invalid file name.\n"}', 'invalid_name', 'Invalid file name.'],
      [404, '<html><body><h1>Not Found</h1></body></html>', 'not_found', 'Not Found'],
      [403, 'Permission denied', 'forbidden', 'Permission denied'],
      [401, '', 'unauthorized', ''],
      [403, '{"detail": "Invalid token"}', 'unauthorized', 'Invalid token'],
      [409, '\u0000\u00ff{{{', 'conflict', '\u0000\u00ff{{{'],
      [520, '{"error_msg": "Operation failed"}', 'server', 'Operation failed'],
    ];
    let i = 0;
    const { client } = await setup(
      (_req, res) => {
        const [status, body] = bodies[i++]!;
        text(res, status, body);
      },
      { maxRetries: 0 },
    );
    for (const [status, , kind, msg] of bodies) {
      const e = await failure(client.fileDetail('r', '/f'));
      expect([e.status, e.kind, e.serverMessage]).toEqual([status, kind, msg]);
      expect(e.message).toContain('file detail failed');
    }
  });

  it('survives raw binary garbage in an error body', async () => {
    const { client } = await setup(
      (_req, res) => {
        const junk = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x7b, 0x22, 0xc3]);
        res.writeHead(500, { 'content-type': 'application/json', 'content-length': junk.length });
        res.end(junk);
      },
      { maxRetries: 0 },
    );
    const e = await failure(client.listLibraries());
    expect([e.kind, e.status, typeof e.serverMessage]).toEqual(['server', 500, 'string']);
  });

  it('reports a success body that does not parse as protocol', async () => {
    const { client } = await setup((_req, res) => text(res, 200, '<html>maintenance</html>'));
    const e = await failure(client.listLibraries());
    expect(e.kind).toBe('protocol');
    const e2 = await failure(
      (async () => {
        servers[0]!.seen.length = 0;
        return client.getLibrary('x');
      })(),
    );
    expect(e2.kind).toBe('protocol');
  });

  it('reports a well-formed answer of the wrong shape as protocol', async () => {
    const { client } = await setup((_req, res) => json(res, 200, { not: 'a list' }));
    expect((await failure(client.listDir('r', '/'))).kind).toBe('protocol');
    expect((await failure(client.uploadLink('r', '/'))).kind).toBe('protocol');
  });

  it('maps 403 on auth ping to unauthorized and on an operation to forbidden', async () => {
    const { client } = await setup((req, res) => json(res, 403, { error_msg: 'Permission denied.' }), {
      maxRetries: 0,
    });
    expect((await failure(client.authPing())).kind).toBe('unauthorized');
    expect((await failure(client.accountInfo())).kind).toBe('unauthorized');
    expect((await failure(client.createFile('r', '/f'))).kind).toBe('forbidden');
  });

  it('maps quota on link requests, 440 and 441 on uploads', async () => {
    const answers: [number, string][] = [
      [500, '{"error_msg": "Out of quota."}'],
      [443, '{"error_msg": "Out of quota."}'],
      [440, '{"error": "Invalid filename.\n"}'],
      [441, '{"error": "File does not exist.\n"}'],
      [442, '{"error": "File size is too large.\n"}'],
    ];
    let i = 0;
    const { client, srv } = await setup(
      (_req, res) => {
        const [s, b] = answers[i++]!;
        text(res, s, b);
      },
      { maxRetries: 0 },
    );
    const { writeFileSync, mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'seafs-up-'));
    try {
      writeFileSync(join(dir, 'f'), 'x');
      expect((await failure(client.uploadLink('r', '/'))).kind).toBe('quota');
      expect((await failure(client.updateLink('r', '/'))).kind).toBe('quota');
      expect((await failure(client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), '..'))).kind).toBe(
        'invalid_name',
      );
      expect((await failure(client.update(`${srv.url}/update-api/t`, '/gone', join(dir, 'f')))).kind).toBe(
        'target_missing',
      );
      expect((await failure(client.upload(`${srv.url}/upload-api/t`, '/', join(dir, 'f'), 'big'))).kind).toBe(
        'too_large',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('detects the two-factor refusal at login and sends both OTP headers', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.headers['x-seafile-otp'] === '123456') json(res, 200, { token: 'a'.repeat(40) });
      else json(res, 400, { non_field_errors: ['Two factor auth token is missing.'] }, { 'x-seafile-otp': 'required' });
    });
    const e = await failure(client.login('u@x', 'pw'));
    expect(e.kind).toBe('otp_required');
    expect(await client.login('u@x', 'pw', '123456')).toBe('a'.repeat(40));
    expect(client.token).toBe('a'.repeat(40));
    const last = srv.seen.at(-1)!;
    expect(last.headers['x-service-otp']).toBe('123456');
    expect(last.headers.authorization).toBeUndefined();
    expect(last.body.toString()).toBe('username=u%40x&password=pw');
  });

  it('a login with a device sends platform, device_id, device_name and both versions', async () => {
    const { srv, client } = await setup((_req, res) => json(res, 200, { token: 'b'.repeat(40) }));
    const device = {
      platform: 'linux',
      deviceId: 'c'.repeat(40),
      deviceName: 'my box',
      clientVersion: 'seafs 0.1.0',
      platformVersion: '6.1.0',
    };
    expect(await client.login('u@x', 'pw', undefined, device)).toBe('b'.repeat(40));
    expect(Object.fromEntries(new URLSearchParams(srv.seen.at(-1)!.body.toString()))).toEqual({
      username: 'u@x',
      password: 'pw',
      platform: 'linux',
      device_id: 'c'.repeat(40),
      device_name: 'my box',
      client_version: 'seafs 0.1.0',
      platform_version: '6.1.0',
    });
  });

  it('reads folder listings: oid header, uptodate, normalised parent_dir', async () => {
    const { srv, client } = await setup((req, res) => {
      if (req.url!.includes('oid=abc')) json(res, 200, 'uptodate', { oid: 'abc' });
      else
        json(
          res,
          200,
          [
            { type: 'dir', name: 'a', id: '1'.repeat(40), mtime: 5, parent_dir: '/x/' },
            { type: 'file', name: 'b', id: '0'.repeat(40), size: 0, mtime: 6, parent_dir: '/x/y/' },
            { type: 'file', name: 'c', id: '2'.repeat(40), size: 3, parent_dir: '/' },
          ],
          { oid: 'def' },
        );
    });
    expect(await client.listDir('r', '/x', { oid: 'abc' })).toEqual({ uptodate: true, oid: 'abc' });
    const l = await client.listDir('r', '/x y', { type: 'd', recursive: true });
    expect(l.uptodate).toBe(false);
    if (l.uptodate) throw new Error('unreachable');
    expect(l.oid).toBe('def');
    expect(l.entries.map((e) => e.parent_dir)).toEqual(['/x', '/x/y', '/']);
    expect(l.entries[2]!.mtime).toBe(0);
    expect(srv.seen[1]!.url).toBe('/api2/repos/r/dir/?p=%2Fx%20y&t=d&recursive=1');
  });

  it('returns the oid header with a download link', async () => {
    const { srv, client } = await setup((_req, res) =>
      json(res, 200, 'http://files/files/t/a.txt', { oid: 'f'.repeat(40) }),
    );
    expect(await client.downloadLink('r', '/a.txt', { reuse: true })).toEqual({
      url: 'http://files/files/t/a.txt',
      oid: 'f'.repeat(40),
    });
    expect(srv.seen[0]!.url).toBe('/api2/repos/r/file/?p=%2Fa.txt&reuse=1');
  });
});

describe('ranged downloads', () => {
  const content = Buffer.from('0123456789abcdefghij');
  async function body(r: { body: NodeJS.ReadableStream }): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of r.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString();
  }

  it('reads a 206 range, a 200 that ignored the range, and a 416', async () => {
    const { srv, client } = await setup((req, res) => {
      const m = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
      if (req.url === '/files/enc/f') {
        res.writeHead(200, { 'content-length': content.length, etag: '"e1"' });
        res.end(content);
      } else if (m && Number(m[1]) >= content.length) {
        res.writeHead(416, { 'content-range': `bytes */${content.length}` });
        res.end();
      } else if (m) {
        const a = Number(m[1]);
        const b = m[2] ? Number(m[2]) : content.length - 1;
        res.writeHead(206, {
          'content-range': `bytes ${a}-${b}/${content.length}`,
          'content-length': b - a + 1,
          etag: '"e2"',
        });
        res.end(content.subarray(a, b + 1));
      } else {
        res.writeHead(200, { 'content-length': content.length });
        res.end(content);
      }
    });
    const r1 = await client.download(`${srv.url}/files/t/f`, { start: 5, end: 9 });
    expect([r1.status, r1.start, r1.totalSize, r1.etag]).toEqual([206, 5, 20, 'e2']);
    expect(await body(r1)).toBe('56789');
    const r2 = await client.download(`${srv.url}/files/enc/f`, { start: 5, end: 9 });
    expect([r2.status, r2.start, r2.totalSize, r2.etag]).toEqual([200, 0, 20, 'e1']);
    expect(await body(r2)).toBe(content.toString());
    const r3 = await client.download(`${srv.url}/files/t/f`, { start: 25 });
    expect([r3.status, r3.start, r3.totalSize]).toEqual([416, 25, 20]);
    expect(await body(r3)).toBe('');
    const r4 = await client.download(`${srv.url}/files/t/f`);
    expect([r4.status, r4.start]).toEqual([200, 0]);
    expect(srv.seen.map((s) => s.headers.range)).toEqual(['bytes=5-9', 'bytes=5-9', 'bytes=25-', undefined]);
  });

  it('maps a spent link (403, plain text) to an error and does not retry it', async () => {
    const { srv, client } = await setup((_req, res) => text(res, 403, 'Bad access token'));
    const e = await failure(client.download(`${srv.url}/files/t/f`));
    expect([e.status, e.kind, e.serverMessage]).toEqual([403, 'forbidden', 'Bad access token']);
    expect(srv.seen).toHaveLength(1);
  });

  it('surfaces a download body that stalls as an ApiError on the stream', async () => {
    const { srv, client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-length': '1000' });
        res.write('partial');
      },
      { transferTimeoutMs: 300 },
    );
    const r = await client.download(`${srv.url}/files/t/f`);
    const e = await failure(body(r));
    expect(e.kind).toBe('timeout');
  });

  it('can abandon a download by destroying its body', async () => {
    const big = Buffer.alloc(8 << 20, 1);
    const { srv, client } = await setup((_req, res) => {
      res.writeHead(200, { 'content-length': big.length });
      res.end(big);
    });
    const r = await client.download(`${srv.url}/files/t/f`);
    const first = await new Promise<Buffer>((resolve) => r.body.once('data', resolve));
    expect(first.length).toBeGreaterThan(0);
    r.body.destroy();
    await new Promise((resolve) => r.body.once('close', resolve));
    expect(r.body.destroyed).toBe(true);
  });
});
