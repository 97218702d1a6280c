// Encrypted libraries through the mount: the password of a --library comes
// from SEAFS_LIBRARY_PASSWORD or --library-password-file (never argv), a wrong
// one is one error line with nothing mounted, and the mount unlocks again by
// itself when the server forgets the unlock (a short --unlock-ttl here, and a
// restart of the server): as on real servers, the web API keeps answering and
// only the file server refuses (downloads 400, uploads 500), and the mount also
// sends the password again on a timer (SEAFS_UNLOCK_REFRESH_SEC). In all-libraries mode an encrypted library answers
// EACCES until `seafs unlock MOUNTPOINT LIBRARY` hands its password over.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { expectRemoteFile, remoteBytes, waitRemoteFile } from '../helpers/api-check.js';
import {
  CLI,
  cleanupMounts,
  isMountpoint,
  mountLibrary,
  q,
  run,
  scratchDir,
  sh,
  sleep,
  testEnv,
} from '../helpers/mount.js';
import { createUser, startTestServer, type TestServer } from '../helpers/server.js';

const VAULT_PW = 'vault pass, with spaces';
const SAFE_PW = 'safe-pass-2';
const TTL_SEC = 2;
const CHECKER = 'checker@seafs.test';
const CHECKER_PW = 'checker-secret-pw';

let server: TestServer;
let api: SeafileClient;
let src: string;
const repos: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer({ extraArgs: ['--unlock-ttl', String(TTL_SEC)] });
  const { client: owner } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword);
  try {
    repos.Vault = (await owner.createLibrary('Vault', { password: VAULT_PW })).repo_id;
    repos.Safe = (await owner.createLibrary('Safe', { password: SAFE_PW })).repo_id;
    repos.Plain = (await owner.createLibrary('Plain')).repo_id;
    // unlocks are per account: the checks go through another account, so that
    // only the mount (the owner's account) unlocks the owner's access
    await createUser(server, CHECKER, CHECKER_PW);
    for (const r of [repos.Vault, repos.Safe]) await owner.shareLibrary(r, [CHECKER], 'rw');
  } finally {
    await owner.close();
  }
  ({ client: api } = await SeafileClient.login({ baseUrl: server.url }, CHECKER, CHECKER_PW));
  // the checking client unlocks its own access (and again by itself after the expiry or the restart)
  await api.unlockLibrary(repos.Vault, VAULT_PW);
  await api.unlockLibrary(repos.Safe, SAFE_PW);
  src = mkdtempSync(path.join(os.tmpdir(), 'seafs-e2e-enc-'));
});

/** background mount processes (--daemon) this file started: killed by PID if a test leaves one */
const daemons = new Set<number>();

afterAll(async () => {
  for (const pid of daemons) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  try {
    await cleanupMounts();
  } finally {
    await api?.close().catch(() => {});
    await server?.stop();
  }
});

/** `seafs mount URL MNT --library Vault` as a child that is expected to fail before mounting. */
async function mountExpectingFailure(env: NodeJS.ProcessEnv, extra: string[] = []) {
  const mnt = mkdtempSync(path.join(scratchDir(), 'enc-fail-'));
  const r = await run(
    process.execPath,
    [CLI, 'mount', server.url, mnt, '--user', server.adminEmail, '--library', 'Vault', ...extra],
    {
      env: testEnv({ SEAFS_PASSWORD: server.adminPassword, SEAFS_LIBRARY_PASSWORD: '', ...env }),
      allowFail: true,
      timeoutMs: 60_000,
    },
  );
  return { ...r, mnt };
}

describe('encrypted libraries', () => {
  it('a wrong library password is one error line and a non-zero exit, with nothing mounted', async () => {
    const r = await mountExpectingFailure({ SEAFS_LIBRARY_PASSWORD: 'not the password' });
    expect(r.code).toBe(1);
    expect(r.err.trim()).toBe('seafs: wrong password for the encrypted library "Vault"');
    expect(r.out).not.toContain('mounted');
    expect(await isMountpoint(r.mnt)).toBe(false);
  });

  it('without a terminal and without a password the mount says where the password can come from', async () => {
    const r = await mountExpectingFailure({});
    expect(r.code).toBe(1);
    expect(r.err.trim()).toBe(
      'seafs: the library "Vault" is encrypted: give its password through SEAFS_LIBRARY_PASSWORD or --library-password-file',
    );
    expect(await isMountpoint(r.mnt)).toBe(false);
  });

  it('mounts with the password from a file and unlocks again by itself after the expiry and a server restart', async () => {
    const pwFile = path.join(src, 'vault.pw');
    writeFileSync(pwFile, `${VAULT_PW}\n`);
    chmodSync(pwFile, 0o600);
    const m = await mountLibrary(server, {
      library: 'Vault',
      dirCacheTime: 1,
      attrTimeout: 0,
      extraArgs: ['--library-password-file', pwFile],
    });
    expect(m.output()).toContain('seafs: mounted Vault');
    const repo = repos.Vault;

    const a = path.join(src, 'a.txt');
    writeFileSync(a, 'first file, written while unlocked\n');
    await sh(`cp ${q(a)} ${q(m.mnt)}/a.txt`);
    await waitRemoteFile(api, repo, '/a.txt', a);

    // the server forgets the unlock after TTL_SEC: reads and writes go on
    await sleep((TTL_SEC + 1) * 1000);
    await api.upload(
      await api.uploadLink(repo, '/'),
      '/',
      writeTmp('from-api-1.txt', 'put through the API after the expiry\n'),
      'from-api-1.txt',
      { repoId: repo },
    );
    await sleep(1500);
    expect((await sh(`cat ${q(m.mnt)}/from-api-1.txt`)).out).toBe('put through the API after the expiry\n');
    const b = path.join(src, 'b.txt');
    writeFileSync(b, 'second file, written after the expiry\n');
    await sh(`cp ${q(b)} ${q(m.mnt)}/b.txt`);
    await waitRemoteFile(api, repo, '/b.txt', b);

    // a restart forgets every unlock (and every upload link); the same port: the mount reaches it again
    await server.restart({ samePort: true });
    const c = path.join(src, 'c.txt');
    writeFileSync(c, 'third file, written after the restart\n');
    await sh(`cp ${q(c)} ${q(m.mnt)}/c.txt`);
    await sh(`echo appended >> ${q(m.mnt)}/a.txt`);
    await api.upload(
      await api.uploadLink(repo, '/'),
      '/',
      writeTmp('from-api-2.txt', 'put through the API after the restart\n'),
      'from-api-2.txt',
      { repoId: repo },
    );
    await sleep(1500);
    expect((await sh(`cat ${q(m.mnt)}/from-api-2.txt`)).out).toBe('put through the API after the restart\n');

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect(await m.exited).toBe(0);
    await expectRemoteFile(api, repo, '/b.txt', b);
    await expectRemoteFile(api, repo, '/c.txt', c);
    expect((await remoteBytes(api, repo, '/a.txt')).toString()).toBe('first file, written while unlocked\nappended\n');
    // unlocking again was silent: no failed upload, no locked library
    expect(m.output()).not.toMatch(/upload of .* failed|is encrypted and locked/);
    expect(m.output()).not.toContain(VAULT_PW);
  });

  it('reads files no cache holds and writes new and overwritten files across several expiries; the timer re-sends the password', async () => {
    const repo = repos.Vault;
    // files only the server has: each read below is the first of its file (no cache holds it)
    const seeded: Buffer[] = [];
    for (let i = 0; i < 4; i++) {
      seeded.push(randomBytes(300_000 + i * 4099));
      await api.upload(await api.uploadLink(repo, '/'), '/', writeTmp(`seed${i}.bin`, seeded[i]), `seed${i}.bin`, {
        repoId: repo,
        replace: true,
      });
      await api.upload(await api.uploadLink(repo, '/'), '/', writeTmp(`over${i}.txt`, `old ${i}\n`), `over${i}.txt`, {
        repoId: repo,
        replace: true,
      });
    }
    const REFRESH_SEC = 6; // longer than the gaps below: until the idle end, only refusals unlock again
    const m = await mountLibrary(server, {
      library: 'Vault',
      libraryPassword: VAULT_PW,
      dirCacheTime: 1,
      attrTimeout: 0,
      extraArgs: ['--log-level', 'debug'],
      env: { SEAFS_UNLOCK_REFRESH_SEC: String(REFRESH_SEC) },
    });
    const expiry = () => sleep((TTL_SEC + 0.5) * 1000);
    // three rounds, each step the first use of the library after the server forgot its password
    for (let i = 0; i < 3; i++) {
      await expiry();
      const got = await readFile(path.join(m.mnt, `seed${i}.bin`));
      expect(got.equals(seeded[i]), `seed${i}.bin read back`).toBe(true);
      await expiry();
      const made = writeTmp(`new${i}.txt`, `new file ${i}, written after an expiry\n`);
      await sh(`cp ${q(made)} ${q(m.mnt)}/new${i}.txt`);
      await waitRemoteFile(api, repo, `/new${i}.txt`, made);
      await expiry();
      const over = writeTmp(`over${i}.local`, `overwritten ${i} after an expiry\n`);
      await sh(`cp ${q(over)} ${q(m.mnt)}/over${i}.txt`);
      await waitRemoteFile(api, repo, `/over${i}.txt`, over);
    }
    // every step met a refusal and unlocked again (the debug log shows each unlock: the one at the mount,
    // then one per step at least, reads and uploads alike), and the log said so once, not once per step
    const lines = m.output().split('\n');
    expect(lines.filter((l) => l.includes('api POST unlock library: 200')).length, m.output()).toBeGreaterThan(9);
    expect(
      lines.filter((l) => l.includes('the server had forgotten its password')),
      m.output(),
    ).toEqual([
      'seafs: library "Vault": the server had forgotten its password (an hour after it was given, or a restart); sent it again',
    ]);
    // left alone longer than the interval, the mount sends the password by its timer
    const timed = 'library "Vault": its password sent again, before the server forgets it';
    for (let waited = 0; !m.output().includes(timed) && waited < (REFRESH_SEC + 10) * 1000; waited += 250)
      await sleep(250);
    expect(m.output()).toContain(timed);
    expect((await readFile(path.join(m.mnt, 'seed3.bin'))).equals(seeded[3])).toBe(true);

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    for (let i = 0; i < 3; i++) {
      expect((await remoteBytes(api, repo, `/new${i}.txt`)).toString()).toBe(
        `new file ${i}, written after an expiry\n`,
      );
      expect((await remoteBytes(api, repo, `/over${i}.txt`)).toString()).toBe(`overwritten ${i} after an expiry\n`);
    }
    expect((await remoteBytes(api, repo, '/over3.txt')).toString()).toBe('old 3\n');
    expect(m.output()).not.toMatch(/upload of .* failed|is encrypted and locked|sending its password again failed/);
    expect(m.output()).not.toContain(VAULT_PW);
  });

  it('in all-libraries mode an encrypted library answers EACCES until seafs unlock gives its password', async () => {
    const m = await mountLibrary(server, { dirCacheTime: 1, attrTimeout: 0 });
    const safe = path.join(m.mnt, 'Safe');
    for (let i = 0; i < 2; i++) {
      const ls = await sh(`ls ${q(safe)}`, { allowFail: true });
      expect(ls.code).not.toBe(0);
      expect(ls.err).toMatch(/Permission denied/);
    }
    expect((await sh(`ls ${q(m.mnt)}/Plain`)).code).toBe(0);

    const wrong = await run(process.execPath, [CLI, 'unlock', m.mnt, 'Safe'], {
      env: testEnv({ SEAFS_LIBRARY_PASSWORD: 'wrong' }),
      allowFail: true,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.err.trim()).toBe('seafs: wrong password for the encrypted library "Safe"');
    expect((await sh(`ls ${q(safe)}`, { allowFail: true })).code).not.toBe(0);

    const pwFile = path.join(src, 'safe.pw');
    writeFileSync(pwFile, `${SAFE_PW}\n`);
    chmodSync(pwFile, 0o600);
    const ok = await run(process.execPath, [CLI, 'unlock', m.mnt, 'Safe', '--library-password-file', pwFile], {
      env: testEnv(),
    });
    expect(ok.out.trim()).toBe(`seafs: unlocked "Safe" at ${m.mnt}`);

    const f = path.join(src, 'safe.txt');
    writeFileSync(f, 'into the unlocked library\n');
    await sh(`cp ${q(f)} ${q(safe)}/safe.txt && ls ${q(safe)}`);
    // past the expiry, the mount unlocks again with the password it holds
    await sleep((TTL_SEC + 1) * 1000);
    const g = path.join(src, 'safe2.txt');
    writeFileSync(g, 'after the expiry\n');
    await sh(`cp ${q(g)} ${q(safe)}/safe2.txt`);
    expect((await sh(`cat ${q(safe)}/safe.txt`)).out).toBe('into the unlocked library\n');

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    await expectRemoteFile(api, repos.Safe, '/safe.txt', f);
    await expectRemoteFile(api, repos.Safe, '/safe2.txt', g);
    // the log said once how to unlock it, and never showed the password
    const told = m
      .output()
      .split('\n')
      .filter((l) => l.includes('library "Safe" is encrypted and locked'));
    expect(told, m.output()).toHaveLength(1);
    expect(told[0]).toContain(`seafs unlock ${m.mnt} 'Safe'`);
    expect(m.output()).not.toContain(SAFE_PW);
  });

  it('seafs unlock of a library that is not encrypted, or of a mount that is not there, is one error line', async () => {
    const m = await mountLibrary(server, {});
    const plain = await run(process.execPath, [CLI, 'unlock', m.mnt, 'Plain'], {
      env: testEnv({ SEAFS_LIBRARY_PASSWORD: 'x' }),
      allowFail: true,
    });
    expect(plain.code).toBe(1);
    expect(plain.err.trim()).toBe('seafs: the library "Plain" is not encrypted');
    const none = mkdtempSync(path.join(scratchDir(), 'none-'));
    const nobody = await run(process.execPath, [CLI, 'unlock', none, 'Safe'], {
      env: testEnv({ SEAFS_LIBRARY_PASSWORD: 'x' }),
      allowFail: true,
    });
    expect(nobody.code).toBe(1);
    expect(nobody.err.trim()).toBe(`seafs: no seafs mount answers at ${none}`);
    expect((await m.unmount()).code).toBe(0);
  });
});

describe('encrypted libraries: --daemon and the prompt', () => {
  it('--daemon asks the password before detaching: a wrong one is one line, the right one mounts', async () => {
    const mnt = mkdtempSync(path.join(scratchDir(), 'enc-daemon-'));
    const cache = mkdtempSync(path.join(scratchDir(), 'cache-'));
    const args = [
      CLI,
      'mount',
      `${server.url}#Vault`,
      mnt,
      '--user',
      server.adminEmail,
      '--cache-dir',
      cache,
      '--daemon',
    ];
    const wrong = await run(process.execPath, args, {
      env: testEnv({ SEAFS_PASSWORD: server.adminPassword, SEAFS_LIBRARY_PASSWORD: 'nope' }),
      allowFail: true,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.err.trim()).toBe('seafs: wrong password for the encrypted library "Vault"');
    expect(await isMountpoint(mnt)).toBe(false);

    const up = await run(process.execPath, args, {
      env: testEnv({ SEAFS_PASSWORD: server.adminPassword, SEAFS_LIBRARY_PASSWORD: VAULT_PW }),
    });
    const pid = Number(/\(pid (\d+),/.exec(up.out)?.[1]);
    daemons.add(pid);
    expect(up.out).toContain(`seafs: mounted Vault at ${mnt}`);
    try {
      await sh(`echo 'from the daemon' > ${q(mnt)}/daemon.txt`);
      const un = await run(process.execPath, [CLI, 'unmount', mnt], { env: testEnv(), allowFail: true });
      expect(un.code, un.out + un.err).toBe(0);
      await expectRemoteFile(api, repos.Vault, '/daemon.txt', Buffer.from('from the daemon\n'));
    } finally {
      if (await isMountpoint(mnt)) await run('fusermount', ['-uz', mnt], { allowFail: true });
    }
  });

  it('seafs unlock asks for the password on a terminal when no other source gives it', async () => {
    const m = await mountLibrary(server, {});
    // `script` gives the command a terminal; the password is typed on it once the prompt shows
    const cmd = [process.execPath, CLI, 'unlock', m.mnt, 'Safe'].map(q).join(' ');
    const term = spawn('script', ['-q', '-e', '-c', cmd, '/dev/null'], {
      env: testEnv({ SEAFS_LIBRARY_PASSWORD: '' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let typed = false;
    term.stdout!.setEncoding('utf8');
    term.stdout!.on('data', (d: string) => {
      out += d;
      if (!typed && out.includes('Password of the encrypted library "Safe": ')) {
        typed = true;
        // the prompt turned echo off before it showed
        term.stdin!.write(`${SAFE_PW}\r`);
      }
    });
    const timer = setTimeout(() => term.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((r) => term.once('exit', (c) => r(c)));
    clearTimeout(timer);
    expect(code, out).toBe(0);
    expect(out).toContain(`seafs: unlocked "Safe" at ${m.mnt}`);
    // typed without echo
    expect(out).not.toContain(SAFE_PW);
    await sh(`echo typed > ${q(m.mnt)}/Safe/typed.txt`);
    expect((await m.unmount()).code).toBe(0);
    await expectRemoteFile(api, repos.Safe, '/typed.txt', Buffer.from('typed\n'));
  });
});

function writeTmp(name: string, text: string | Buffer): string {
  const f = path.join(src, name);
  writeFileSync(f, text);
  return f;
}
