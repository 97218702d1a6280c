import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
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
});
