// Smoke tests of the real mount: `seafs mount` as a child process against
// `seafs serve`, driven with ordinary tools, checked through the API.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { remoteBytes, sha256 as sha } from '../helpers/api-check.js';
import { CLI, cleanupMounts, mountLibrary, scratchDir, sh, testEnv, type MountOptions } from '../helpers/mount.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** `seafs mount` of one library at an existing folder, with its own cache dir; resolves once the mount answers. */
function mount(server: TestServer, mnt: string, cacheDir: string, library: string, extra: string[] = []) {
  mkdirSync(cacheDir, { recursive: true });
  const opts: MountOptions = { library, mountpoint: mnt, cacheDir, extraArgs: extra };
  return mountLibrary(server, opts);
}

describe('seafs mount (e2e smoke)', () => {
  let server: TestServer;
  let api: SeafileClient;
  let repo: string;
  let work: string;

  beforeAll(async () => {
    server = await startTestServer();
    ({ client: api } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword));
    repo = (await api.createLibrary('Smoke')).repo_id;
    await api.createLibrary('Other');
    // under the mount helper's scratch dir: cleanupMounts() detaches every mount there, even the daemon's
    work = mkdtempSync(path.join(scratchDir(), 'work-'));
  });

  afterAll(async () => {
    await cleanupMounts();
    await api?.close();
    await server?.stop();
  });

  const remote = (p: string) => remoteBytes(api, repo, p);

  it('mounts, and cp, cat, ls, mv, rm, mkdir, rmdir behave; unmount waits for uploads', async () => {
    const mnt = path.join(work, 'm1');
    mkdirSync(mnt);
    const m = await mount(server, mnt, path.join(work, 'cache'), 'Smoke');
    expect(m.output()).toContain(`seafs: mounted Smoke at ${mnt}`);
    expect((await sh(`mount | grep ' ${mnt} '`)).out).toContain('seafs:Smoke');
    // the tests run as root, so the mount raises the kernel's readahead from 128 to 512 KiB
    const dev = (await sh(`mountpoint -d ${mnt}`)).out.trim();
    expect((await sh(`cat /sys/class/bdi/${dev}/read_ahead_kb`)).out.trim()).toBe('512');

    const src = path.join(work, 'src');
    mkdirSync(src);
    const small = Buffer.from('hello seafs\n');
    const big = randomBytes(5 * 1024 * 1024 + 17);
    writeFileSync(path.join(src, 'small.txt'), small);
    writeFileSync(path.join(src, 'empty'), '');
    writeFileSync(path.join(src, 'big.bin'), big);
    await sh(`cp ${src}/small.txt ${src}/empty ${src}/big.bin ${mnt}/`);
    expect((await sh(`cat ${mnt}/small.txt`)).out).toBe(small.toString());
    expect((await sh(`ls ${mnt}`)).out.split('\n').filter(Boolean).sort()).toEqual(['big.bin', 'empty', 'small.txt']);
    expect((await sh(`stat -c %s ${mnt}/big.bin`)).out.trim()).toBe(String(big.length));
    expect((await sh(`sha256sum < ${mnt}/big.bin`)).out.split(' ')[0]).toBe(sha(big));

    await sh(
      `mkdir -p ${mnt}/dir/sub && mv ${mnt}/small.txt ${mnt}/dir/sub/moved.txt && mv ${mnt}/empty ${mnt}/empty-renamed`,
    );
    const rm = await sh(`rmdir ${mnt}/dir`, { allowFail: true });
    expect(rm.code).not.toBe(0);
    expect(rm.err).toMatch(/not empty/i);
    await sh(`cp ${src}/big.bin ${mnt}/dir/gone.bin && rm ${mnt}/dir/gone.bin`);
    expect((await sh(`ls -R ${mnt}`)).out).not.toContain('gone.bin');
    // an append and an overwrite in place
    await sh(
      `echo more >> ${mnt}/dir/sub/moved.txt && printf 'HELLO' | dd of=${mnt}/dir/sub/moved.txt conv=notrunc status=none`,
    );
    expect((await sh(`cat ${mnt}/dir/sub/moved.txt`)).out).toBe('HELLO seafs\nmore\n');

    // one more large file right before unmounting: unmount must wait for it
    const last = randomBytes(20 * 1024 * 1024);
    writeFileSync(path.join(src, 'last.bin'), last);
    await sh(`cp ${src}/last.bin ${mnt}/last.bin`);
    const un = await m.unmount();
    expect(un.out).toContain('every upload is on the server');
    expect(await m.exited).toBe(0);
    expect((await sh(`mount | grep ' ${mnt} '`, { allowFail: true })).out).toBe('');

    expect(sha(await remote('/big.bin'))).toBe(sha(big));
    expect(sha(await remote('/last.bin'))).toBe(sha(last));
    expect((await remote('/empty-renamed')).length).toBe(0);
    expect((await remote('/dir/sub/moved.txt')).toString()).toBe('HELLO seafs\nmore\n');
    const names = (await api.listDir(repo, '/dir')) as { uptodate: false; entries: { name: string }[] };
    expect(names.entries.map((e) => e.name)).toEqual(['sub']);
  });

  it('after kill -9, the next mount clears the dead mount and uploads every closed file', async () => {
    // a distant server, so that uploads are still pending when the mount is killed
    const slow = await startTestServer({ latencyMs: 150 });
    try {
      await crashAndRecover(slow);
    } finally {
      await slow.stop();
    }
  });

  async function crashAndRecover(server: TestServer) {
    const { client: api } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword);
    const repo = (await api.createLibrary('Smoke')).repo_id;
    const remote = (p: string) => remoteBytes(api, repo, p);
    const mnt = path.join(work, 'm2');
    mkdirSync(mnt);
    const cache = path.join(work, 'cache2');
    const m = await mount(server, mnt, cache, 'Smoke');
    const src = path.join(work, 'many');
    mkdirSync(src);
    const want = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const b = randomBytes(1000 + i * 3000);
      writeFileSync(path.join(src, `f${i}.bin`), b);
      want.set(`f${i}.bin`, sha(b));
    }
    await sh(`mkdir ${mnt}/crash && cp ${src}/* ${mnt}/crash/`);
    await m.kill9();
    const stale = await sh(`ls ${mnt}`, { allowFail: true });
    expect(stale.code).not.toBe(0); // a dead mount: ENOTCONN

    const again = await mount(server, mnt, cache, 'Smoke');
    expect((await sh(`ls ${mnt}/crash | wc -l`)).out.trim()).toBe('30');
    const un = await again.unmount();
    expect(un.code).toBe(0);
    expect(await again.exited).toBe(0);
    expect(again.output()).toMatch(/recovered \d+ file/);
    for (const [name, h] of want) expect(sha(await remote(`/crash/${name}`)), name).toBe(h);
    await api.close();
  }

  it('all-libraries mode lists libraries and refuses changes at the root; --daemon returns once usable', async () => {
    try {
      await allLibraries();
    } catch (e) {
      // the daemon's log (in the runtime dir): what it was doing when a step hung or failed
      const run = testEnv().SEAFS_RUNTIME_DIR!;
      for (const f of readdirSync(run).filter((n) => n.endsWith('.log')))
        console.log(`--- ${f}\n${readFileSync(path.join(run, f), 'utf8').slice(-4000)}`);
      throw e;
    }
  });

  async function allLibraries() {
    // each step ends well before the test's own timeout, so that a hang shows where (and the log above)
    const step: typeof sh = (cmd, opts = {}) => sh(cmd, { timeoutMs: 50_000, ...opts });
    const mnt = path.join(work, 'm3');
    mkdirSync(mnt);
    const pwFile = path.join(work, 'pw');
    writeFileSync(pwFile, server.adminPassword + '\n');
    const r = await step(
      `env -u SEAFS_PASSWORD node ${CLI} mount ${server.url} ${mnt} --user ${server.adminEmail} --password-file ${pwFile} --cache-dir ${work}/cache3 --daemon && ls ${mnt}`,
      { env: testEnv() },
    );
    expect(r.out).toContain(`seafs: mounted all libraries at ${mnt}`);
    expect(r.out.split('\n')).toEqual(expect.arrayContaining(['Other', 'Smoke']));
    // the serving process runs the mount alone (mount-child.js, no command-line parser), with the settings its
    // parent parsed: its cache is in the --cache-dir given; its command line names the mount, never the password file
    const cmd = (await step(`pgrep -af 'mount-child.js mount .* ${mnt}$'`)).out.trim();
    expect(cmd).toMatch(/mount-child\.js mount /);
    expect(cmd).not.toContain(pwFile);
    expect(readdirSync(`${work}/cache3`).length).toBeGreaterThan(0);
    const mk = await step(`mkdir ${mnt}/NewLib`, { allowFail: true });
    expect(mk.code).not.toBe(0);
    expect(mk.err).toMatch(/not permitted/i);
    await step(`echo cross > ${mnt}/Other/x.txt && mv ${mnt}/Other/x.txt ${mnt}/Smoke/x.txt`);
    expect((await step(`cat ${mnt}/Smoke/x.txt`)).out).toBe('cross\n');
    expect((await step(`node ${CLI} unmount ${mnt}`, { env: testEnv() })).code).toBe(0);
    expect((await remote('/x.txt')).toString()).toBe('cross\n');
  }

  it('explains a wrong password, an unknown library and a missing mount point', async () => {
    const base = `node ${CLI} mount ${server.url}`;
    // an empty mount point: a folder with content is refused before the login (mount-preflight.ts)
    const mp = path.join(work, 'empty-mp');
    mkdirSync(mp, { recursive: true });
    const wrong = await sh(`SEAFS_PASSWORD=nope ${base} ${mp} --user ${server.adminEmail} --cache-dir ${work}/c4`, {
      allowFail: true,
    });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain('wrong user or password');
    const lib = await sh(
      `SEAFS_PASSWORD=${server.adminPassword} ${base} ${mp} --user ${server.adminEmail} --library Nope --cache-dir ${work}/c4`,
      { allowFail: true },
    );
    expect(lib.code).toBe(1);
    expect(lib.err).toContain('no library named or with id "Nope"');
    const missing = await sh(
      `SEAFS_PASSWORD=${server.adminPassword} ${base} ${work}/does-not-exist --user ${server.adminEmail} --cache-dir ${work}/c4`,
      { allowFail: true },
    );
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('does not exist');
    const down = await sh(
      `SEAFS_PASSWORD=x node ${CLI} mount http://127.0.0.1:1 ${mp} --user a@b.c --cache-dir ${work}/c4`,
      { allowFail: true },
    );
    expect(down.code).toBe(1);
    expect(down.err).toContain('cannot reach the server');
  });

  it('refuses bad option values and a missing account with one clear line, no stack', async () => {
    const mp = path.join(work, 'empty-mp');
    mkdirSync(mp, { recursive: true });
    const base = `SEAFS_PASSWORD=x node ${CLI} mount ${server.url} ${mp} --cache-dir ${work}/c5`;
    for (const [flag, value, says] of [
      ['--attr-timeout', 'abc', 'takes a number of 0 or more'],
      ['--read-ahead', '-1', 'takes a size: a number with an optional unit B, K, M, G or T'],
      ['--cache-max-size', 'lots', 'takes a size: a number with an optional unit B, K, M, G or T'],
      ['--bwlimit', 'fast', 'takes off, a rate in bytes per second'],
    ]) {
      const r = await sh(`${base} --user a@b.c ${flag} ${value}`, { allowFail: true });
      expect(r.code).toBe(2);
      expect(r.err).toContain(`${flag} ${says}`);
      expect(r.err).not.toMatch(/\n\s+at /);
    }
    const noUser = await sh(`env -u SEAFS_TOKEN ${base}`, { allowFail: true });
    expect(noUser.code).toBe(1);
    expect(noUser.err.trim()).toBe(
      'seafs: name the account with --user EMAIL or -o username=EMAIL (or give a token through SEAFS_TOKEN or --token-file)',
    );
  });

  it('with --read-ahead 0 the kernel keeps its own readahead', async () => {
    const mnt = path.join(work, 'm5');
    mkdirSync(mnt);
    const m = await mount(server, mnt, path.join(work, 'cache5'), 'Smoke', ['--read-ahead', '0']);
    const dev = (await sh(`mountpoint -d ${mnt}`)).out.trim();
    expect((await sh(`cat /sys/class/bdi/${dev}/read_ahead_kb`)).out.trim()).toBe('128');
    expect((await m.unmount()).code).toBe(0);
    expect(await m.exited).toBe(0);
  });
});
