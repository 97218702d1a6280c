// The saved accounts' store (src/cli/accounts/store.ts) and the mount's
// account sources (src/cli/accounts/account-source.ts): file and folder modes, atomic
// writes under a lock, clear messages for a broken or open file.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AccountStore, checkName, configDir, type Account } from '../../../src/cli/accounts/store.js';
import { parseAccountSource, refusedLine, useAccount } from '../../../src/cli/accounts/account-source.js';
import { defaultName } from '../../../src/cli/accounts/commands.js';

const account = (over: Partial<Account> = {}): Account => ({
  url: 'https://cloud.example.com',
  user: 'me@example.com',
  email: 'me@example.com',
  token: 'a'.repeat(40),
  platform: 'linux',
  deviceId: 'b'.repeat(40),
  deviceName: 'laptop',
  savedAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'seafs-accounts-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const mode = (p: string) => statSync(p).mode & 0o777;

describe('account store', () => {
  it('keeps the file 0600 in a 0700 folder, also when the folder existed open', async () => {
    const dir = path.join(tmp, 'seafs');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const store = new AccountStore(dir);
    await store.update((a) => {
      a.work = account();
    });
    expect(mode(dir)).toBe(0o700);
    expect(mode(store.file)).toBe(0o600);
    expect(await store.read()).toEqual({ work: account() });
    // nothing else left beside it: no temporary file, no lock
    expect(readdirSync(dir)).toEqual(['accounts.json']);
  });

  it('replaces the file whole: a failed change leaves the old one as it was, and releases the lock', async () => {
    const store = new AccountStore(path.join(tmp, 'seafs'));
    await store.update((a) => {
      a.work = account();
    });
    const before = readFileSync(store.file, 'utf8');
    await expect(
      store.update((a) => {
        a.home = account({ url: 'https://home.example.com' });
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(readFileSync(store.file, 'utf8')).toBe(before);
    // the lock is free again: the next update does not wait
    await store.update((a) => {
      a.home = account({ url: 'https://home.example.com' });
    });
    expect(Object.keys(await store.read()).sort()).toEqual(['home', 'work']);
    expect(readdirSync(path.dirname(store.file))).toEqual(['accounts.json']);
  });

  it('two updates at once both land (the lock orders them)', async () => {
    const store = new AccountStore(path.join(tmp, 'seafs'));
    const slow = store.update(async (a) => {
      await new Promise((r) => setTimeout(r, 100));
      a.one = account();
    });
    const other = new AccountStore(path.join(tmp, 'seafs')).update((a) => {
      a.two = account({ user: 'two@example.com' });
    });
    await Promise.all([slow, other]);
    expect(Object.keys(await store.read()).sort()).toEqual(['one', 'two']);
  });

  it('takes over a lock left by a crash', async () => {
    const dir = path.join(tmp, 'seafs');
    mkdirSync(dir, { mode: 0o700 });
    const store = new AccountStore(dir);
    writeFileSync(`${store.file}.lock`, '');
    const old = new Date(Date.now() - 60_000);
    const { utimesSync } = await import('node:fs');
    utimesSync(`${store.file}.lock`, old, old);
    await store.update((a) => {
      a.work = account();
    });
    expect(Object.keys(await store.read())).toEqual(['work']);
  });

  it('no file: no accounts; an unknown name names the saved ones and how to add it', async () => {
    const store = new AccountStore(path.join(tmp, 'seafs'));
    expect(await store.read()).toEqual({});
    await store.update((a) => {
      a.work = account();
    });
    await expect(store.get('home')).rejects.toThrow(
      `no saved account named "home" in ${store.file} (saved: work); save one with: seafs login URL --user EMAIL --name home`,
    );
  });

  it('a file others can read is refused with the chmod to run', async () => {
    const store = new AccountStore(path.join(tmp, 'seafs'));
    await store.update((a) => {
      a.work = account();
    });
    chmodSync(store.file, 0o644);
    await expect(store.read()).rejects.toThrow(
      `${store.file} can be read by other users (mode 0644): its tokens are refused; chmod 600 ${store.file}`,
    );
  });

  it.each([
    ['{"version": 1, "accounts": {', 'is not a valid accounts file: '],
    ['[]', 'not a JSON object'],
    ['{"version": 2, "accounts": {}}', 'unknown version 2'],
    ['{"version": 1}', 'no "accounts" object'],
    ['{"version": 1, "accounts": {"a:b": {}}}', 'the account name "a:b" is not valid'],
    ['{"version": 1, "accounts": {"work": {"url": "https://x"}}}', 'account "work" has no user'],
    [
      JSON.stringify({ version: 1, accounts: { work: { ...account(), tls: { caFile: 'ca.pem' } } } }),
      'account "work" has tls files that are not absolute paths',
    ],
  ])('a broken file (%s) is one clear message naming it', async (text, why) => {
    const dir = path.join(tmp, 'seafs');
    mkdirSync(dir, { mode: 0o700 });
    const store = new AccountStore(dir);
    writeFileSync(store.file, text, { mode: 0o600 });
    const err = await store.read().catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(`${store.file} is not a valid accounts file: `);
    expect((err as Error).message).toContain(why);
    expect((err as Error).message).toContain('(fix it, or remove it and log in again)');
    // an update does not overwrite what it cannot read
    await expect(store.update(() => {})).rejects.toThrow('is not a valid accounts file');
    expect(readFileSync(store.file, 'utf8')).toBe(text);
  });

  it('lives in $XDG_CONFIG_HOME/seafs, else ~/.config/seafs (a relative XDG_CONFIG_HOME is ignored)', () => {
    expect(configDir({ XDG_CONFIG_HOME: '/x/conf' })).toBe('/x/conf/seafs');
    expect(configDir({ XDG_CONFIG_HOME: 'rel' })).toBe(path.join(os.homedir(), '.config', 'seafs'));
    expect(configDir({})).toBe(path.join(os.homedir(), '.config', 'seafs'));
  });

  it('account names: no colon or slash; the default is the host name first label', () => {
    expect(checkName('work-2.x_y')).toBe('work-2.x_y');
    expect(() => checkName('a:b')).toThrow('the account name "a:b" is not valid');
    expect(() => checkName('')).toThrow('is not valid');
    expect(defaultName('https://cloud.example.com/seafile')).toBe('cloud');
    expect(defaultName('http://127.0.0.1:8000')).toBe('127.0.0.1');
    expect(defaultName('http://[::1]:8000')).toBeUndefined();
  });
});

describe('account sources of seafs mount', () => {
  it('NAME:Library, NAME: (default library), NAME:/ (every library); URLs are not accounts', () => {
    expect(parseAccountSource('work:My Library')).toEqual({ name: 'work', library: 'My Library', all: false });
    expect(parseAccountSource('work:')).toEqual({ name: 'work', all: false });
    expect(parseAccountSource('work:/')).toEqual({ name: 'work', all: true });
    expect(parseAccountSource('work:a:b')).toEqual({ name: 'work', library: 'a:b', all: false });
    expect(parseAccountSource('https://cloud.example.com#Lib')).toBeNull();
    expect(parseAccountSource('ftp://x')).toBeNull();
    expect(parseAccountSource('work')).toBeNull();
  });

  it('the refused line says how to log in again, with --config when not the default folder', () => {
    expect(refusedLine('work')).toBe(
      'the server refused the saved login "work" (revoked or expired): log in again: seafs login work',
    );
    expect(refusedLine('work', '/etc/seafs')).toMatch(/log in again: seafs login work --config \/etc\/seafs$/);
  });

  it('a mount of a saved account takes its URL and token, and refuses other credentials', async () => {
    const dir = path.join(tmp, 'seafs');
    await new AccountStore(dir).update((a) => {
      a.work = account();
    });
    const argv: Parameters<typeof useAccount>[0] = { url: 'work:', account: 'work', config: dir };
    await useAccount(argv);
    expect(argv).toMatchObject({ url: 'https://cloud.example.com', accountToken: 'a'.repeat(40) });
    await expect(useAccount({ url: 'work:', account: 'work', config: dir, user: 'x@y' })).rejects.toThrow(
      "work: is a saved account: it needs no --user (or mount with the server's URL)",
    );
  });

  it('a mount of a saved account takes the https files saved with it, each unless given: the CA alone, the client pair as a pair', async () => {
    const dir = path.join(tmp, 'seafs');
    const tls = { caFile: '/etc/seafs/ca.pem', clientCert: '/etc/seafs/me.crt', clientKey: '/etc/seafs/me.key' };
    await new AccountStore(dir).update((a) => {
      a.work = account({ tls });
    });
    const plain: Parameters<typeof useAccount>[0] = { url: 'work:', account: 'work', config: dir };
    await useAccount(plain);
    expect(plain).toMatchObject(tls);
    const ca: Parameters<typeof useAccount>[0] = {
      url: 'work:',
      account: 'work',
      config: dir,
      caFile: '/tmp/other.pem',
    };
    await useAccount(ca);
    expect(ca).toMatchObject({ ...tls, caFile: '/tmp/other.pem' });
    const pair: Parameters<typeof useAccount>[0] = {
      url: 'work:',
      account: 'work',
      config: dir,
      clientCert: '/tmp/c.crt',
      clientKey: '/tmp/c.key',
    };
    await useAccount(pair);
    expect(pair).toMatchObject({ caFile: tls.caFile, clientCert: '/tmp/c.crt', clientKey: '/tmp/c.key' });
  });
});
