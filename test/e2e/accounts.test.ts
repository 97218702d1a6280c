// Mounts of a saved account (`seafs login`, then `seafs mount NAME:Library`
// and `NAME:` for the default library) through real FUSE mounts of `seafs
// serve`, and a token revoked while mounted: said once in the log and in
// `seafs status`, the file written meanwhile waits in the journal and lands
// once the account is logged in again. Every file is read back through the API.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitRemoteFile } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, run, scratchDir, sleep, testEnv } from '../helpers/mount.js';
import { apiAs, getToken } from '../helpers/server.js';

const e2e = setupE2E(['Work Files']);

function seafs(args: string[], input?: string) {
  const env = testEnv({ XDG_CONFIG_HOME: path.join(scratchDir(), 'config') });
  delete env.SEAFS_PASSWORD;
  return run(process.execPath, [CLI, ...args], { env, input, allowFail: true, timeoutMs: 60_000 });
}

function savedAccount(): { token: string; deviceId: string } {
  const file = path.join(scratchDir(), 'config', 'seafs', 'accounts.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { accounts: Record<string, never> }).accounts.e2e;
}

describe('mounts of a saved account', () => {
  it('NAME:Library mounts with the saved token; revoked while mounted, writes wait until the next login', async () => {
    const login = await seafs(
      ['login', e2e.server.url, '--user', e2e.server.adminEmail, '--name', 'e2e'],
      `${e2e.server.adminPassword}\n`,
    );
    expect(login.err).toBe('');
    expect(login.code).toBe(0);
    const first = savedAccount();
    // listings kept 1 s: the write after the revocation needs the server's listing, which the refused token
    // cannot get (without the watch's hold it failed with EACCES)
    const m = await mountLibrary(e2e.server, {
      source: 'e2e:Work Files',
      dirCacheTime: 1,
      env: { XDG_CONFIG_HOME: path.join(scratchDir(), 'config') },
    });
    writeFileSync(path.join(m.mnt, 'before.txt'), 'written with the saved token\n');
    await waitRemoteFile(
      e2e.api,
      e2e.repos['Work Files'],
      '/before.txt',
      Buffer.from('written with the saved token\n'),
    );

    // the web interface's "Unlink" of this device
    const web = apiAs(e2e.server.url, await getToken(e2e.server.url, e2e.server.adminEmail, e2e.server.adminPassword));
    const unlink = await web('DELETE', '/api2/devices/', { form: { platform: 'linux', device_id: first.deviceId } });
    expect(unlink.status).toBe(200);

    // a write after the revocation (and after the listing expired) succeeds locally and waits in the journal
    await sleep(2500);
    writeFileSync(path.join(m.mnt, 'after.txt'), 'written while the token was refused\n');
    expect(readFileSync(path.join(m.mnt, 'after.txt'), 'utf8')).toBe('written while the token was refused\n');
    let status: { tokenRefused?: { hint: string } | null }[] = [];
    for (let i = 0; i < 100; i++) {
      const st = await seafs(['status', m.mnt, '--json']);
      status = JSON.parse(st.out) as typeof status;
      if (status[0]?.tokenRefused) break;
      await sleep(200);
    }
    expect(status[0].tokenRefused?.hint).toBe('log in again: seafs login e2e (the mount then takes the new login)');
    const text = await seafs(['status', m.mnt]);
    expect(text.out).toContain('TOKEN REFUSED for ');

    const again = await seafs(['login', 'e2e'], `${e2e.server.adminPassword}\n`);
    expect(again.code).toBe(0);
    expect(savedAccount().token).not.toBe(first.token);
    await waitRemoteFile(
      e2e.api,
      e2e.repos['Work Files'],
      '/after.txt',
      Buffer.from('written while the token was refused\n'),
    );
    const un = await m.unmount();
    expect(un.code).toBe(0);
    expect(await m.exited).toBe(0);
    const said = m.output().split("the server refuses the mount's token (revoked or expired)").length - 1;
    expect(said, m.output()).toBe(1);
    expect(m.output()).toContain('the account was logged in again: the mount uses its new token');
  });

  it('NAME: mounts the default library', async () => {
    const web = apiAs(e2e.server.url, savedAccount().token);
    const def = await web('POST', '/api2/default-repo/');
    expect(def.status).toBe(200);
    const repo = (def.json as { repo_id: string }).repo_id;
    const m = await mountLibrary(e2e.server, {
      source: 'e2e:',
      env: { XDG_CONFIG_HOME: path.join(scratchDir(), 'config') },
    });
    writeFileSync(path.join(m.mnt, 'default.txt'), 'in the default library\n');
    await waitRemoteFile(e2e.api, repo, '/default.txt', Buffer.from('in the default library\n'));
    const st = JSON.parse((await seafs(['status', m.mnt, '--json'])).out) as { library: string }[];
    expect(st[0].library).toBe('My Library');
    expect((await m.unmount()).code).toBe(0);
  });
});
