// A server behind an https front whose certificate comes from a private CA
// (test/helpers/tls-front.ts), as a new user meets it. The mount processes get
// the environment of a user's machine: no NODE_EXTRA_CA_CERTS and no
// SSL_CERT_FILE (these machines set both to the system bundle). The seahub API
// and the fileserver links both go through the front.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRemoteFile, remoteBytes } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, run, scratchDir, testEnv } from '../helpers/mount.js';
import type { TestServer } from '../helpers/server.js';
import { makeTestPki, startTlsFront, userTlsEnv, type TestPki, type TlsFront } from '../helpers/tls-front.js';

const e2e = setupE2E(['Secure']);
let pki: TestPki;
let front: TlsFront;
let certFront: TlsFront;

beforeAll(async () => {
  pki = await makeTestPki();
  front = await startTlsFront(e2e.server.url, pki);
  certFront = await startTlsFront(e2e.server.url, pki, { requireClientCert: true });
}, 60_000);

afterAll(async () => {
  await front?.close();
  await certFront?.close();
  pki?.remove();
});

/** The test server as seen through a front (mountLibrary mounts `url`). */
const via = (url: string): TestServer => ({ ...e2e.server, url });

/** `seafs mount URL DIR` expected to fail: its exit code and what it printed. */
async function failingMount(url: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const mnt = mkdtempSync(path.join(scratchDir(), 'mnt-'));
  const cache = mkdtempSync(path.join(scratchDir(), 'cache-'));
  // a hang would end in the run's own kill (and a failed test), never a wait for --timeout's 30 s retries
  return run(
    process.execPath,
    [CLI, 'mount', url, mnt, '--user', e2e.server.adminEmail, '--library', 'Secure', '--cache-dir', cache, ...args],
    {
      allowFail: true,
      timeoutMs: 25_000,
      env: testEnv({ SEAFS_PASSWORD: e2e.server.adminPassword, ...userTlsEnv(env) }),
    },
  );
}

/** A file written through the mount, read back through the API (over plain http, straight to the server). */
async function writeAndCheck(mnt: string, name: string): Promise<void> {
  const body = randomBytes(3 * 1024 * 1024 + 5);
  await writeFile(path.join(mnt, name), body);
  expect((await readFile(path.join(mnt, name))).equals(body)).toBe(true);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const got = await remoteBytes(e2e.api, e2e.repos.Secure, `/${name}`).catch(() => null);
    if (got?.equals(body)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await expectRemoteFile(e2e.api, e2e.repos.Secure, `/${name}`, body);
}

describe('https with a private CA', () => {
  it('--ca-file: the mount works, and a file written through it reads back through the API', async () => {
    const before = front.requests;
    const m = await mountLibrary(via(front.url), {
      library: 'Secure',
      extraArgs: ['--ca-file', pki.caCert],
      env: userTlsEnv(),
    });
    await writeAndCheck(m.mnt, 'ca-file.bin');
    expect((await m.unmount()).code).toBe(0);
    // the upload went through the front too: its link is https://localhost:PORT/seafhttp/...
    expect(front.requests - before).toBeGreaterThan(3);
  });

  it('-o ca_file= as fstab gives it, relative, to a --daemon mount: the background process reads it too', async () => {
    const mnt = mkdtempSync(path.join(scratchDir(), 'mnt-'));
    const cache = mkdtempSync(path.join(scratchDir(), 'cache-'));
    const pw = path.join(pki.dir, 'pw');
    writeFileSync(pw, `${e2e.server.adminPassword}\n`, { mode: 0o600 });
    const up = await run(
      process.execPath,
      [
        CLI,
        'mount',
        `${front.url}#Secure`,
        mnt,
        '--daemon',
        '-o',
        `username=${e2e.server.adminEmail},password_file=${pw},cache_dir=${cache},ca_file=ca.crt`,
      ],
      { cwd: pki.dir, env: testEnv(userTlsEnv()), allowFail: true, timeoutMs: 60_000 },
    );
    expect(up.code, up.err).toBe(0);
    expect(up.out).toContain(`seafs: mounted Secure at ${mnt}`);
    await writeAndCheck(mnt, 'daemon.bin');
    const un = await run(process.execPath, [CLI, 'unmount', mnt], { env: testEnv(), allowFail: true });
    expect(un.code, un.out + un.err).toBe(0);
  });

  it('the CA in the system bundle (SSL_CERT_FILE names it): no option needed', async () => {
    const m = await mountLibrary(via(front.url), { library: 'Secure', env: userTlsEnv({ SSL_CERT_FILE: pki.caCert }) });
    await writeAndCheck(m.mnt, 'system-store.bin');
    expect((await m.unmount()).code).toBe(0);
  });

  it('an untrusted CA: the mount fails at once with one line naming the cause and the fix', async () => {
    const r = await failingMount(front.url, ['--retry-for', '60s']);
    expect(r.code).toBe(1);
    const lines = r.err.trim().split('\n');
    expect(lines, r.err).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^seafs: the certificate of localhost:${front.port} is issued by a CA this machine does not trust \\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\\): install its CA in the system store .* or pass --ca-file FILE$`,
      ),
    );
    // trusting another CA does not help
    const other = await failingMount(front.url, ['--ca-file', pki.otherCaCert]);
    expect(other.code).toBe(1);
    expect(other.err).toContain('does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE)');
  });

  it('a name the certificate is not for: the message says so', async () => {
    const r = await failingMount(`https://127.0.0.1:${front.port}`, ['--ca-file', pki.caCert]);
    expect(r.code).toBe(1);
    expect(r.err.trim()).toBe(
      `seafs: the certificate of 127.0.0.1:${front.port} is for another host name (ERR_TLS_CERT_ALTNAME_INVALID): ` +
        'use the name the certificate is made for in the URL, or have it reissued for 127.0.0.1',
    );
  });

  it('a front that asks for a client certificate: works with --client-cert/--client-key, a clear line without', async () => {
    const without = await failingMount(certFront.url, ['--ca-file', pki.caCert]);
    expect(without.code).toBe(1);
    expect(without.err.trim()).toBe(
      `seafs: localhost:${certFront.port} asks for a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED): ` +
        'pass --client-cert FILE --client-key FILE',
    );
    const m = await mountLibrary(via(certFront.url), {
      library: 'Secure',
      extraArgs: ['--ca-file', pki.caCert, '--client-cert', pki.clientCert, '--client-key', pki.clientKey],
      env: userTlsEnv(),
    });
    await writeAndCheck(m.mnt, 'client-cert.bin');
    expect((await m.unmount()).code).toBe(0);
  });

  it('seafs login: refused in one line without the CA; with --ca-file, saved with the account, whose mounts use it', async () => {
    const config = mkdtempSync(path.join(scratchDir(), 'config-'));
    const login = (args: string[]) => {
      const env = testEnv({ XDG_CONFIG_HOME: config, ...userTlsEnv() });
      delete env.SEAFS_PASSWORD;
      return run(
        process.execPath,
        [CLI, 'login', front.url, '--user', e2e.server.adminEmail, '--name', 'tls', ...args],
        { env, input: `${e2e.server.adminPassword}\n`, allowFail: true, timeoutMs: 25_000 },
      );
    };
    const refused = await login([]);
    expect(refused.code).toBe(1);
    expect(refused.err.trim()).toMatch(
      new RegExp(
        `^seafs: the certificate of localhost:${front.port} is issued by a CA this machine does not trust \\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\\): .* or pass --ca-file FILE$`,
      ),
    );
    const ok = await login(['--ca-file', pki.caCert]);
    expect(ok.err).toBe('');
    expect(ok.code).toBe(0);
    const m = await mountLibrary(via(front.url), {
      source: 'tls:Secure',
      env: { XDG_CONFIG_HOME: config, ...userTlsEnv() },
    });
    await writeAndCheck(m.mnt, 'saved-account.bin');
    expect((await m.unmount()).code).toBe(0);
  });

  it('a client key other users can read: a warning, and the key never in the output', async () => {
    const key = path.join(pki.dir, 'open.key');
    const text = await readFile(pki.clientKey, 'utf8');
    writeFileSync(key, text, { mode: 0o644 });
    const m = await mountLibrary(via(certFront.url), {
      library: 'Secure',
      extraArgs: ['--ca-file', pki.caCert, '--client-cert', pki.clientCert, '--client-key', key],
      env: userTlsEnv(),
    });
    expect(m.output()).toContain(`seafs: the client key ${key} can be read by other users (mode 644): chmod 600 it`);
    const keyBody = text.split('\n').find((l) => l.length > 40)!;
    expect(m.output()).not.toContain(keyBody);
    expect((await m.unmount()).code).toBe(0);
  });
});
