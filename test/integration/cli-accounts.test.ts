// `seafs login`, `seafs accounts`, `seafs logout` and a mount of a saved
// account whose token was revoked, against `seafs serve` (no FUSE: the
// refused token is found before anything is mounted). Each CLI run gets its
// own XDG_CONFIG_HOME; the password and the two-factor code come on stdin.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totp } from '../helpers/client-setup.js';
import { CLI, run, type RunResult } from '../helpers/mount.js';
import { apiAs, createUser, getToken, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let home: string;
let n = 0;

beforeAll(async () => {
  server = await startTestServer();
  home = mkdtempSync(path.join(os.tmpdir(), 'seafs-accounts-it-'));
});
afterAll(async () => {
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

/** a fresh config folder (XDG_CONFIG_HOME) per test */
function freshConfig(): string {
  return path.join(home, `cfg${n++}`);
}

function seafs(config: string, args: string[], input = ''): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: config, SEAFS_RUNTIME_DIR: path.join(home, 'run') };
  delete env.SEAFS_PASSWORD;
  delete env.SEAFS_TOKEN;
  return run(process.execPath, [CLI, ...args], { env, input, allowFail: true, timeoutMs: 60_000 });
}

function saved(config: string): Record<string, Record<string, string>> {
  return (JSON.parse(readFileSync(path.join(config, 'seafs', 'accounts.json'), 'utf8')) as { accounts: never })
    .accounts;
}

/** the devices of `email` as the web interface lists them */
async function devices(email: string, password: string): Promise<{ device_id: string; device_name: string }[]> {
  const r = await apiAs(server.url, await getToken(server.url, email, password))('GET', '/api2/devices/');
  expect(r.status).toBe(200);
  return r.json as never;
}

describe('seafs login / accounts / logout against seafs serve', () => {
  it('login saves a token of this device (never the password), listed by accounts without it and by the server', async () => {
    await createUser(server, 'ann@seafs.test', 'ann secret pw');
    const cfg = freshConfig();
    const r = await seafs(cfg, ['login', server.url, '--user', 'ann@seafs.test', '--name', 'work'], 'ann secret pw\n');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('seafs: logged in as ann@seafs.test at ' + server.url);
    expect(r.out).toContain('seafs mount work: DIR');
    const file = path.join(cfg, 'seafs', 'accounts.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(readFileSync(file, 'utf8')).not.toContain('ann secret pw');
    const a = saved(cfg).work;
    expect(a).toMatchObject({ url: server.url, user: 'ann@seafs.test', email: 'ann@seafs.test', platform: 'linux' });
    expect(a.deviceId).toMatch(/^[0-9a-f]{40}$/);
    // the token works, and is the device's own
    expect((await apiAs(server.url, a.token)('GET', '/api2/auth/ping/')).json).toBe('pong');
    expect(a.token).not.toBe(await getToken(server.url, 'ann@seafs.test', 'ann secret pw'));
    const list = await devices('ann@seafs.test', 'ann secret pw');
    expect(list.map((d) => [d.device_id, d.device_name])).toEqual([[a.deviceId, os.hostname().slice(0, 40)]]);

    const ls = await seafs(cfg, ['accounts']);
    expect(ls.code).toBe(0);
    expect(ls.out).toMatch(/^NAME\s+ACCOUNT\s+SERVER\s+DEVICE\s+LOGGED IN\nwork\s+ann@seafs.test\s+http/);
    expect(ls.out).not.toContain(a.token);
    const json = await seafs(cfg, ['accounts', '--json']);
    expect(JSON.parse(json.out)).toEqual([
      { name: 'work', user: 'ann@seafs.test', url: server.url, device: a.deviceName, savedAt: a.savedAt },
    ]);
    expect(json.out).not.toContain(a.token);
  });

  it('a wrong password is one line, exit 1, and saves nothing', async () => {
    const cfg = freshConfig();
    const r = await seafs(cfg, ['login', server.url, '--user', 'ann@seafs.test', '--name', 'bad'], 'wrong\n');
    expect(r.code).toBe(1);
    expect(r.err).toBe('seafs: login refused: wrong user or password\n');
    expect((await seafs(cfg, ['accounts'])).out).toMatch(/^no saved accounts/);
  });

  it('two-factor: the code is asked for when the server wants one (the next stdin line), and checked', async () => {
    const secret = 'JBSWY3DPEHPK3PXP';
    await createUser(server, 'otp@seafs.test', 'otp pw', { totp_secret: secret });
    const cfg = freshConfig();
    const args = ['login', server.url, '--user', 'otp@seafs.test', '--name', 'two'];
    const none = await seafs(cfg, args, 'otp pw\n');
    expect(none.code).toBe(1);
    expect(none.err).toBe('seafs: the account uses two-factor authentication: give the current code with --otp CODE\n');
    const wrong = await seafs(cfg, [...args, '--otp', '000000'], 'otp pw\n');
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain('the two-factor code was refused');
    const ok = await seafs(cfg, args, `otp pw\n${totp(secret)}\n`);
    expect(ok.err).toBe('');
    expect(ok.code).toBe(0);
    expect((await apiAs(server.url, saved(cfg).two.token)('GET', '/api2/auth/ping/')).status).toBe(200);
  });

  it('a token revoked on the server: mount NAME: says to log in again in one line, exit 1; login NAME does', async () => {
    await createUser(server, 'rev@seafs.test', 'rev pw');
    const cfg = freshConfig();
    expect(
      (await seafs(cfg, ['login', server.url, '--user', 'rev@seafs.test', '--name', 'rev'], 'rev pw\n')).code,
    ).toBe(0);
    const a = saved(cfg).rev;
    // the web interface's "Unlink" of the device
    const api = apiAs(server.url, await getToken(server.url, 'rev@seafs.test', 'rev pw'));
    expect((await api('DELETE', '/api2/devices/', { form: { platform: 'linux', device_id: a.deviceId } })).status).toBe(
      200,
    );
    const mnt = mkdtempSync(path.join(home, 'mnt-'));
    for (const extra of [[], ['--daemon']]) {
      const m = await seafs(cfg, ['mount', 'rev:', mnt, ...extra]);
      expect(m.code).toBe(1);
      expect(m.err).toBe(
        'seafs: the server refused the saved login "rev" (revoked or expired): log in again: seafs login rev\n',
      );
    }
    // logged in again by name, the password from a file this time
    const pwFile = path.join(home, 'rev.pw');
    writeFileSync(pwFile, 'rev pw\n', { mode: 0o600 });
    const again = await seafs(cfg, ['login', 'rev', '--password-file', pwFile]);
    expect(again.code).toBe(0);
    expect(saved(cfg).rev.token).not.toBe(a.token);
    expect((await apiAs(server.url, saved(cfg).rev.token)('GET', '/api2/auth/ping/')).status).toBe(200);
    // an unknown account is its own clear line
    const unknown = await seafs(cfg, ['mount', 'nope:Lib', mnt]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('seafs: no saved account named "nope"');
  });

  it('logout revokes the token on the server and forgets it; revoked already: it says so', async () => {
    await createUser(server, 'out@seafs.test', 'out pw');
    const cfg = freshConfig();
    expect(
      (await seafs(cfg, ['login', server.url, '--user', 'out@seafs.test', '--name', 'out'], 'out pw\n')).code,
    ).toBe(0);
    const a = saved(cfg).out;
    expect((await devices('out@seafs.test', 'out pw')).length).toBe(1);
    const r = await seafs(cfg, ['logout', 'out']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('its token is deleted on the server');
    expect((await apiAs(server.url, a.token)('GET', '/api2/auth/ping/')).status).toBe(401);
    expect(await devices('out@seafs.test', 'out pw')).toEqual([]);
    expect(saved(cfg)).toEqual({});
    const twice = await seafs(cfg, ['logout', 'out']);
    expect(twice.code).toBe(1);
    expect(twice.err).toContain('no saved account named "out"');

    expect(
      (await seafs(cfg, ['login', server.url, '--user', 'out@seafs.test', '--name', 'out'], 'out pw\n')).code,
    ).toBe(0);
    // revoked meanwhile (here by the logout-device call itself)
    const tok = saved(cfg).out.token;
    expect((await apiAs(server.url, tok)('POST', '/api2/logout-device/')).status).toBe(200);
    const gone = await seafs(cfg, ['logout', 'out']);
    expect(gone.code).toBe(0);
    expect(gone.out).toContain('the server had already revoked its token');
    expect(saved(cfg)).toEqual({});
  });
});
