// The client against `seafs serve`: session, account, two-factor, quota and size limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { FAST, LocalFiles, adminClient, expectApiError, newUser, totp } from '../helpers/client-setup.js';

let server: TestServer;
let admin: SeafileClient;
const files = new LocalFiles();
const clients: SeafileClient[] = [];

beforeAll(async () => {
  server = await startTestServer({ extraArgs: ['--max-upload-mb', '5'] });
  admin = await adminClient(server);
  clients.push(admin);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
  files.cleanup();
});

function anon(token?: string): SeafileClient {
  const c = new SeafileClient({ baseUrl: server.url, token, ...FAST });
  clients.push(c);
  return c;
}

describe('session', () => {
  it('pings without a token and checks a token with auth ping', async () => {
    await anon().ping();
    await admin.authPing();
    await expectApiError(anon().authPing(), 'unauthorized', 403);
    await expectApiError(anon('0'.repeat(40)).authPing(), 'unauthorized', 401);
  });

  it('logs in (static and instance), the same token every time', async () => {
    const { client, token } = await SeafileClient.login(
      { baseUrl: server.url },
      server.adminEmail,
      server.adminPassword,
    );
    clients.push(client);
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect(client.token).toBe(token);
    const c = anon();
    expect(await c.login(server.adminEmail, server.adminPassword)).toBe(token);
    await c.authPing();
  });

  it('a login naming its device gets a token of that device, listed under the devices and revocable', async () => {
    const laptop = { platform: 'linux', deviceId: 'a'.repeat(40), deviceName: 'laptop', clientVersion: 'seafs 0.1.0' };
    const v1 = await anon().login(server.adminEmail, server.adminPassword);
    const t1 = await anon().login(server.adminEmail, server.adminPassword, undefined, laptop);
    expect(t1).toMatch(/^[0-9a-f]{40}$/);
    expect(t1).not.toBe(v1);
    // the same device again: the same token, its name updated; another device: another token
    expect(
      await anon().login(server.adminEmail, server.adminPassword, undefined, { ...laptop, deviceName: 'lap2' }),
    ).toBe(t1);
    const t2 = await anon().login(server.adminEmail, server.adminPassword, undefined, {
      ...laptop,
      deviceId: 'b'.repeat(40),
      deviceName: 'desk',
    });
    expect(t2).not.toBe(t1);
    await anon(t1).authPing();
    const devices = async (token: string) =>
      (await (await fetch(`${server.url}/api2/devices/`, { headers: { authorization: `Token ${token}` } })).json()) as {
        device_id: string;
        device_name: string;
        platform: string;
        client_version: string;
      }[];
    const listed = await devices(v1);
    expect(listed.map((d) => [d.platform, d.device_id, d.device_name]).sort()).toEqual([
      ['linux', 'a'.repeat(40), 'lap2'],
      ['linux', 'b'.repeat(40), 'desk'],
    ]);
    expect(listed.find((d) => d.device_name === 'lap2')!.client_version).toBe('seafs 0.1.0');
    // revoked (as in the web interface): that token is refused, the others still work
    const del = await fetch(`${server.url}/api2/devices/`, {
      method: 'DELETE',
      headers: { authorization: `Token ${t2}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: `platform=linux&device_id=${'a'.repeat(40)}`,
    });
    expect([del.status, await del.json()]).toEqual([200, { success: true }]);
    await expectApiError(anon(t1).authPing(), 'unauthorized', 401);
    await anon(t2).authPing();
    await anon(v1).authPing();
    // the server's checks of the fields, as seahub's
    const e1 = await expectApiError(
      anon().login(server.adminEmail, server.adminPassword, undefined, { ...laptop, deviceId: 'short' }),
      'bad_request',
      400,
    );
    expect(e1.serverMessage).toBe('invalid device id');
    const e2 = await expectApiError(
      anon().login(server.adminEmail, server.adminPassword, undefined, { ...laptop, platform: 'seafs' }),
      'bad_request',
      400,
    );
    expect(e2.serverMessage).toBe('invalid platform');
  });

  it('refuses bad credentials as unauthorized, with the server message', async () => {
    const e = await expectApiError(anon().login(server.adminEmail, 'wrong'), 'unauthorized', 400);
    expect(e.serverMessage).toMatch(/unable to log ?in/i);
    expect(e.operation).toBe('login');
    await expectApiError(anon().login('nobody@seafs.test', 'x'), 'unauthorized', 400);
  });

  it('treats an invalid token (401) and a missing one (403) alike', async () => {
    await expectApiError(anon('f'.repeat(40)).listLibraries(), 'unauthorized', 401);
    await expectApiError(anon().listLibraries(), 'unauthorized', 403);
    await expectApiError(anon('f'.repeat(40)).accountInfo(), 'unauthorized');
  });

  it('reads server info without a token, and account info', async () => {
    const info = await anon().serverInfo();
    expect(typeof info.version).toBe('string');
    expect(info.features).toContain('seafile-basic');
    const acct = await admin.accountInfo();
    expect(acct.email).toBe(server.adminEmail);
    expect(acct.total).toBe(-2);
    expect(typeof acct.usage).toBe('number');
  });
});

describe('two-factor authentication', () => {
  const secret = 'JBSWY3DPEHPK3PXPJBSWY3DP';

  it('asks for the code, refuses a wrong one, accepts the right one', async () => {
    await admin.putAccount('otp@seafs.test', { password: 'otp-pw', totp_secret: secret });
    const e = await expectApiError(anon().login('otp@seafs.test', 'otp-pw'), 'otp_required', 400);
    expect(e.serverMessage).toMatch(/two factor/i);
    const right = totp(secret);
    const wrong = String((Number(right) + 500_000) % 1_000_000).padStart(6, '0');
    await expectApiError(anon().login('otp@seafs.test', 'otp-pw', wrong), 'otp_required', 400);
    const c = anon();
    const token = await c.login('otp@seafs.test', 'otp-pw', right);
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect((await c.accountInfo()).email).toBe('otp@seafs.test');
  });
});

describe('quota and size limits', () => {
  it('reports quota on an upload over quota, and too_large over the size limit', async () => {
    const user = await newUser(server, admin, 'quota@seafs.test', { storage: 1 }); // 1 MB
    clients.push(user);
    expect((await user.accountInfo()).total).toBe(1_000_000);
    const lib = await user.createLibrary('q');
    const link = await user.uploadLink(lib.repo_id, '/');
    const small = files.write(Buffer.alloc(600_000, 1));
    await user.upload(link, '/', small, 'a.bin');
    const e = await expectApiError(user.upload(link, '/', small, 'b.bin'), 'quota', 443);
    expect(e.operation).toBe('upload');
    const big = files.write(Buffer.alloc(6_000_000, 2));
    await expectApiError(
      admin.upload(await admin.uploadLink((await admin.createLibrary('big')).repo_id, '/'), '/', big, 'big.bin'),
      'too_large',
      442,
    );
  });

  it('refuses an upload link once the account is full', async () => {
    const user = await newUser(server, admin, 'full@seafs.test', { storage: 1 });
    clients.push(user);
    const lib = await user.createLibrary('f');
    const link = await user.uploadLink(lib.repo_id, '/');
    await user.upload(link, '/', files.write(Buffer.alloc(999_999, 3)), 'x.bin');
    await user.upload(link, '/', files.write(Buffer.alloc(1, 3)), 'y.bin');
    await expectApiError(user.uploadLink(lib.repo_id, '/'), 'quota');
    await expectApiError(user.updateLink(lib.repo_id, '/'), 'quota');
  });
});
