// `seafs login` and `seafs logout` against the real Seafile CE server: the
// login's token is a device of the account (seahub's TokenV2, listed by
// GET /api2/devices/ as the web interface shows it), and logout deletes it
// there (POST /api2/logout-device/). SEAFS_SKIP_REAL_SERVER=1 leaves it out, loudly.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, run } from '../helpers/mount.js';
import { realServerSkipped, startRealServer } from '../helpers/real-server.js';
import { apiAs, getToken, type TestServer } from '../helpers/server.js';

const skipped = realServerSkipped();

describe.skipIf(skipped)('saved accounts on the real Seafile server', () => {
  let server: TestServer;
  let home: string;
  beforeAll(async () => {
    server = await startRealServer();
    home = mkdtempSync(path.join(os.tmpdir(), 'seafs-real-accounts-'));
  }, 300_000);
  afterAll(async () => {
    await server?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const seafs = (args: string[], input = '') => {
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
    delete env.SEAFS_PASSWORD;
    return run(process.execPath, [CLI, ...args], { env, input, allowFail: true, timeoutMs: 60_000 });
  };

  it("login's device is in the account's device list; logout removes it and its token", async () => {
    const login = await seafs(
      ['login', server.url, '--user', server.adminEmail, '--name', 'real'],
      `${server.adminPassword}\n`,
    );
    expect(login.err).toBe('');
    expect(login.code).toBe(0);
    const saved = (
      JSON.parse(readFileSync(path.join(home, 'seafs', 'accounts.json'), 'utf8')) as {
        accounts: Record<string, { token: string; deviceId: string; deviceName: string }>;
      }
    ).accounts.real;
    const web = apiAs(server.url, await getToken(server.url, server.adminEmail, server.adminPassword));
    const before = (await web('GET', '/api2/devices/')).json as {
      device_id: string;
      device_name: string;
      platform: string;
    }[];
    expect(before.map((d) => [d.platform, d.device_id, d.device_name])).toContainEqual([
      'linux',
      saved.deviceId,
      os.hostname().slice(0, 40),
    ]);

    const out = await seafs(['logout', 'real']);
    expect(out.err).toBe('');
    expect(out.code).toBe(0);
    expect(out.out).toContain('its token is deleted on the server');
    const after = (await web('GET', '/api2/devices/')).json as { device_id: string }[];
    expect(after.map((d) => d.device_id)).not.toContain(saved.deviceId);
    expect((await apiAs(server.url, saved.token)('GET', '/api2/auth/ping/')).status).toBe(401);
  });
});
