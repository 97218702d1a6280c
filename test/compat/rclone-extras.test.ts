// rclone's seafile backend against `seafs serve`, beyond the round trip in
// rclone.test.ts: overwrites, server-side copy, streamed uploads, about/link/
// cleanup, encrypted libraries (library_key), a two-factor account (rclone's
// own config flow with a one-time code), and a read-only share.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpAt } from '../../src/server/auth/totp.js';
import { adminToken, createUser, startTestServer } from '../helpers/server.js';
import { obscure, Rclone } from '../helpers/rclone.js';
import { writeSeeded } from '../helpers/tree.js';

type Server = Awaited<ReturnType<typeof startTestServer>>;

const LIB = 'extras';
const ENC_LIB = 'extras encrypted';
const ENC_KEY = 'enc key é';
const TFA_USER = 'tfa@seafs.test';
const TFA_PASSWORD = 'tfa-pass';
const TFA_SECRET = 'JBSWY3DPEHPK3PXP';
const READER = 'reader@seafs.test';
const READER_PASSWORD = 'reader-pass';
const RANGE_IGNORED = 'ignored our request of partial content';

let server: Server | undefined;
let rclone: Rclone | undefined;
let base = '';
let token = '';
let libId = '';
const rc = () => rclone!;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function api(path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    ...init,
    headers: { Authorization: `Token ${token}`, ...(init.headers ?? {}) },
    redirect: 'manual',
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

async function createLibrary(name: string, passwd?: string): Promise<string> {
  const r = await api('/api2/repos/', {
    method: 'POST',
    body: new URLSearchParams({ name, ...(passwd ? { passwd } : {}) }),
  });
  expect(r.status).toBe(200);
  return r.body.repo_id as string;
}

async function names(repo: string, p: string): Promise<string[]> {
  const r = await api(`/api2/repos/${repo}/dir/?p=${encodeURIComponent(p)}`);
  expect(r.status).toBe(200);
  return (r.body as Array<{ name: string }>).map((e) => e.name).sort();
}

/** Seeded bytes written to the sandbox, returned with their path. */
function seeded(name: string, size: number): { file: string; data: Buffer } {
  const file = join(rc().home, name);
  writeSeeded(file, size, 7, name);
  return { file, data: readFileSync(file) };
}

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/+$/, '');
  token = await adminToken(server);
  libId = await createLibrary(LIB);
  await createUser(server, TFA_USER, TFA_PASSWORD, { totp_secret: TFA_SECRET });
  await createUser(server, READER, READER_PASSWORD);
  const admin = { url: base, user: server.adminEmail, password: server.adminPassword };
  rclone = await Rclone.create([
    { name: 'ex', ...admin, library: LIB },
    { name: 'all', ...admin },
    { name: 'enc', ...admin, library: ENC_LIB },
    { name: 'tfapw', url: base, user: TFA_USER, password: TFA_PASSWORD },
    { name: 'reader', url: base, user: READER, password: READER_PASSWORD, library: LIB },
  ]);
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    rclone?.dispose();
  }
});

describe('rclone extras', () => {
  it('re-uploading replaces the file in place (no "name (1)" copies)', async () => {
    const v1 = seeded('v1.bin', 1000);
    const v2 = seeded('v2.bin', 2500);
    const v3 = seeded('v3.bin', 2500); // same size as v2: rclone needs --ignore-times to send it
    await rc().ok(['copyto', v1.file, 'ex:over/file é.bin']);
    await rc().ok(['copyto', v2.file, 'ex:over/file é.bin']);
    expect(sha((await rc().ok(['cat', 'ex:over/file é.bin'])).stdout)).toBe(sha(v2.data));
    await rc().ok(['copyto', v3.file, 'ex:over/file é.bin', '--ignore-times']);
    expect(sha((await rc().ok(['cat', 'ex:over/file é.bin'])).stdout)).toBe(sha(v3.data));
    expect(await names(libId, '/over')).toEqual(['file é.bin']);
  });

  it('server-side copy and streamed upload (rcat) of unknown size', async () => {
    const src = seeded('src.bin', 70_000);
    await rc().ok(['copyto', src.file, 'ex:copy/src.bin']);
    const r = await rc().ok(['copyto', 'ex:copy/src.bin', 'ex:copy/other dir/dst ü.bin', '-v']);
    expect(r.stderr).toContain('server-side copy');
    // onto an existing name: the server auto-renames, rclone puts it back in place
    await rc().ok(['copyto', 'ex:copy/src.bin', 'ex:copy/other dir/dst ü.bin', '--ignore-times']);
    expect(await names(libId, '/copy/other dir')).toEqual(['dst ü.bin']);
    expect(sha((await rc().ok(['cat', 'ex:copy/other dir/dst ü.bin'])).stdout)).toBe(sha(src.data));
    // above --streaming-upload-cutoff (100 KiB) rcat streams with no known size
    const big = seeded('stream.bin', 3 * 1024 * 1024 + 17);
    await rc().ok(['rcat', 'ex:copy/streamed.bin'], { input: big.data });
    const detail = await api(`/api2/repos/${libId}/file/detail/?p=${encodeURIComponent('/copy/streamed.bin')}`);
    expect(detail.body.size).toBe(big.data.length);
    expect(sha((await rc().ok(['cat', 'ex:copy/streamed.bin'])).stdout)).toBe(sha(big.data));
  });

  it('about, link and cleanup', async () => {
    const about = JSON.parse((await rc().ok(['about', 'ex:', '--json'])).stdout.toString()) as { used?: number };
    expect(about.used).toBeGreaterThan(3 * 1024 * 1024);

    const link1 = (await rc().ok(['link', 'ex:copy/src.bin'])).stdout.toString().trim();
    expect(link1.startsWith(base + '/f/')).toBe(true);
    const link2 = (await rc().ok(['link', 'ex:copy/src.bin'])).stdout.toString().trim();
    expect(link2).toBe(link1); // the existing link is listed and reused

    await rc().ok(['deletefile', 'ex:copy/src.bin']);
    const trash = await api(`/api/v2.1/repos/${libId}/trash/`);
    expect(trash.status).toBe(200);
    expect((trash.body.data as Array<{ obj_name: string }>).map((e) => e.obj_name)).toContain('src.bin');
    await rc().ok(['cleanup', 'ex:']);
    expect((await api(`/api/v2.1/repos/${libId}/trash/`)).body.data).toEqual([]);
  });

  it('encrypted library: refused without the key, usable with it (ranges done by rclone)', async () => {
    const encId = await createLibrary(ENC_LIB, ENC_KEY);
    const f = seeded('secret.bin', 2 * 1024 * 1024 + 5);
    // no key: nothing can be written or read
    expect((await rc().run(['copyto', f.file, 'enc:s/secret.bin'])).code).not.toBe(0);
    // a wrong key is refused at startup
    const wrong = await rc().run(
      ['lsjson', 'enc:'],
      {},
      { RCLONE_CONFIG_ENC_LIBRARY_KEY: await obscure('wrong', rc().home) },
    );
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('incorrect password');

    const withKey = { RCLONE_CONFIG_ENC_LIBRARY_KEY: await obscure(ENC_KEY, rc().home) };
    expect((await rc().run(['copyto', f.file, 'enc:s/secret.bin'], {}, withKey)).code).toBe(0);
    expect(await names(encId, '/s')).toEqual(['secret.bin']);
    const whole = await rc().run(['cat', 'enc:s/secret.bin'], {}, withKey);
    expect(whole.code).toBe(0);
    expect(sha(whole.stdout)).toBe(sha(f.data));
    // encrypted libraries answer 200 to a Range request; rclone skips to the offset itself
    const part = await rc().run(['cat', 'enc:s/secret.bin', '--offset', '1000003', '--count', '4097'], {}, withKey);
    expect(part.code).toBe(0);
    expect(part.stdout.equals(f.data.subarray(1000003, 1000003 + 4097))).toBe(true);
    expect(part.stderr).toContain(RANGE_IGNORED);
  });

  it('two-factor account: the password alone is refused; the OTP config flow stores a working token', async () => {
    const refused = await rc().run(['lsjson', 'tfapw:']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Two factor auth token is missing');

    // rclone's own 2FA flow: state machine driven non-interactively, code sent as X-Seafile-OTP
    writeFileSync(
      rc().configFile,
      `[tfa]\ntype = seafile\nurl = ${base}\nuser = ${TFA_USER}\npass = ${await obscure(TFA_PASSWORD, rc().home)}\n2fa = true\ncreate_library = true\n`,
    );
    try {
      const ask = JSON.parse(
        (await rc().ok(['config', 'update', 'tfa', '2fa=true', '--non-interactive'])).stdout.toString(),
      );
      expect(ask.State).toBe('2fa_do');
      const bad = JSON.parse(
        (
          await rc().ok([
            'config',
            'update',
            'tfa',
            '--continue',
            '--state',
            '2fa_do',
            '--result',
            '000000',
            '--non-interactive',
          ])
        ).stdout.toString(),
      );
      expect(bad.State).toBe('2fa_error'); // rclone offers to try again
      const code = totpAt(TFA_SECRET, Date.now());
      const done = JSON.parse(
        (
          await rc().ok([
            'config',
            'update',
            'tfa',
            '--continue',
            '--state',
            '2fa_do',
            '--result',
            code,
            '--non-interactive',
          ])
        ).stdout.toString(),
      );
      expect(done.Error).toBe('');
      expect(readFileSync(rc().configFile, 'utf8')).toMatch(/auth_token = [0-9a-f]{40}/);
      await rc().ok(['mkdir', 'tfa:tfa library']);
      expect((await rc().lsjson('tfa:')).map((l) => l.Path)).toEqual(['tfa library']);
    } finally {
      writeFileSync(rc().configFile, '');
    }
  });

  it('read-only share: listing and reading work, every write is refused', async () => {
    const share = await api(`/api2/repos/${libId}/dir/shared_items/?p=/&share_type=user`, {
      method: 'PUT',
      body: new URLSearchParams({ username: READER, permission: 'r', share_type: 'user' }),
    });
    expect(share.status).toBe(200);
    const listed = await rc().lsjson('reader:', ['-R']);
    expect(listed.map((i) => i.Path)).toContain('over/file é.bin');
    expect((await rc().ok(['cat', 'reader:over/file é.bin'])).stdout.length).toBe(2500);

    const f = seeded('intruder.bin', 10);
    for (const args of [
      ['copyto', f.file, 'reader:over/intruder.bin'],
      ['mkdir', 'reader:new dir'],
      ['deletefile', 'reader:over/file é.bin'],
      ['moveto', 'reader:over/file é.bin', 'reader:over/renamed.bin'],
      ['purge', 'reader:over'],
    ]) {
      const r = await rc().run(args);
      expect(r.code, args.join(' ')).not.toBe(0);
    }
    expect(await names(libId, '/over')).toEqual(['file é.bin']);
    expect(await names(libId, '/')).not.toContain('new dir');
  });

  it('after a server restart rclone finds the same files and contents', async () => {
    const before = await rc().lsjson('ex:', ['-R']);
    const content = (await rc().ok(['cat', 'ex:copy/streamed.bin'])).stdout;
    await server!.restart();
    base = server!.url.replace(/\/+$/, '');
    const again = await Rclone.create([
      { name: 'ex', url: base, user: server!.adminEmail, password: server!.adminPassword, library: LIB },
    ]);
    try {
      const after = await again.lsjson('ex:', ['-R']);
      const key = (items: typeof before) => items.map((i) => `${i.Path} ${i.IsDir ? 'dir' : i.Size}`).sort();
      expect(key(after)).toEqual(key(before));
      expect((await again.ok(['cat', 'ex:copy/streamed.bin'])).stdout.equals(content)).toBe(true);
    } finally {
      again.dispose();
    }
  });
});
