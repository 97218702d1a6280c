import { createCipheriv, randomBytes, scryptSync } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadLogin, saveLogin } from '../../../src/cli/mount/offline-login.js';

const roots: string[] = [];
afterEach(async () => {
  for (const d of roots.splice(0)) await rm(d, { recursive: true, force: true });
});
async function root(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'seafs-login-'));
  roots.push(d);
  return d;
}

const URL = 'https://cloud.example.com/';
const TOKEN = '0123456789abcdef0123456789abcdef01234567';

describe('the login kept for a start offline', () => {
  it('after a password login: the token comes back with the same password only, and is not on disk in clear', async () => {
    const r = await root();
    await saveLogin(r, URL, 'me@example.com', { password: 'pw 1' }, { email: 'me@example.com', token: TOKEN });
    expect(await loadLogin(r, 'https://cloud.example.com', 'me@example.com', { password: 'pw 1' })).toEqual({
      email: 'me@example.com',
      token: TOKEN,
    });
    await expect(loadLogin(r, URL, 'me@example.com', { password: 'pw 2' })).rejects.toThrow(/password does not match/);
    expect(await loadLogin(r, URL, 'other@example.com', { password: 'pw 1' })).toBeNull();
    expect(await loadLogin(r, 'https://elsewhere.example.com', 'me@example.com', { password: 'pw 1' })).toBeNull();
    const [name] = await readdir(join(r, 'logins'));
    const file = join(r, 'logins', name);
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain('pw 1');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(r, 'logins'))).mode & 0o777).toBe(0o700);
  });

  it('after a token login: the e-mail, found by the same token only', async () => {
    const r = await root();
    await saveLogin(r, URL, undefined, { token: TOKEN }, { email: 'me@example.com', token: TOKEN });
    expect(await loadLogin(r, URL, undefined, { token: TOKEN })).toEqual({ email: 'me@example.com', token: TOKEN });
    expect(await loadLogin(r, URL, undefined, { token: 'f'.repeat(40) })).toBeNull();
    const [name] = await readdir(join(r, 'logins'));
    expect(await readFile(join(r, 'logins', name), 'utf8')).not.toContain(TOKEN);
  });

  it('nothing kept, or a file that does not parse: null (the mount then fails as before)', async () => {
    const r = await root();
    expect(await loadLogin(r, URL, 'me@example.com', { password: 'x' })).toBeNull();
  });

  /** The one file of the store, parsed, and a function writing it back changed. */
  async function stored(r: string) {
    const [name] = await readdir(join(r, 'logins'));
    const file = join(r, 'logins', name);
    const j = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    return { j, put: (changes: Record<string, unknown>) => writeFile(file, JSON.stringify({ ...j, ...changes })) };
  }

  it('a file whose authentication tag was cut short is refused (a 4-byte tag was accepted)', async () => {
    const r = await root();
    await saveLogin(r, URL, 'me@example.com', { password: 'pw 1' }, { email: 'me@example.com', token: TOKEN });
    const { j, put } = await stored(r);
    await put({
      tag: Buffer.from(j.tag as string, 'base64')
        .subarray(0, 4)
        .toString('base64'),
    });
    await expect(loadLogin(r, URL, 'me@example.com', { password: 'pw 1' })).rejects.toThrow(/damaged.*mount once/);
  });

  it('a file edited to name another e-mail is refused, after a password login and after a token login', async () => {
    const r = await root();
    await saveLogin(r, URL, 'me', { password: 'pw 1' }, { email: 'me@example.com', token: TOKEN });
    await (await stored(r)).put({ email: 'boss@example.com' });
    await expect(loadLogin(r, URL, 'me', { password: 'pw 1' })).rejects.toThrow(/altered/);

    const t = await root();
    await saveLogin(t, URL, undefined, { token: TOKEN }, { email: 'me@example.com', token: TOKEN });
    await (await stored(t)).put({ email: 'boss@example.com' });
    await expect(loadLogin(t, URL, undefined, { token: TOKEN })).rejects.toThrow(/altered/);
  });

  it("a file of the previous version (nothing binds its e-mail) is read when the e-mail is the login's, else refused with what to do", async () => {
    // written as version 1 did: AES-256-GCM, the scrypt key of the password, no authenticated data
    const v1 = async (r: string, user: string, email: string) => {
      await saveLogin(r, URL, user, { password: 'pw 1' }, { email, token: TOKEN }); // the file's name and salt
      const { j, put } = await stored(r);
      const salt = Buffer.from(j.salt as string, 'base64');
      const key = scryptSync('pw 1', salt, 32, { N: 1 << 15, r: 8, p: 1, maxmem: 64 << 20 });
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([c.update(TOKEN, 'utf8'), c.final()]);
      await put({
        v: 1,
        iv: iv.toString('base64'),
        tag: c.getAuthTag().toString('base64'),
        token: data.toString('base64'),
      });
    };
    const same = await root();
    await v1(same, 'me@example.com', 'me@example.com');
    expect(await loadLogin(same, URL, 'me@example.com', { password: 'pw 1' })).toEqual({
      email: 'me@example.com',
      token: TOKEN,
    });
    const other = await root();
    await v1(other, 'me', 'me@example.com');
    await expect(loadLogin(other, URL, 'me', { password: 'pw 1' })).rejects.toThrow(/older seafs.*mount once/);
  });
});
