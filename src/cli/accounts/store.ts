// Saved accounts (`seafs login`): one JSON file, accounts.json, in seafs's
// config folder ($XDG_CONFIG_HOME/seafs, else ~/.config/seafs). It holds each
// account's server, login name and per-device API token, never a password.
// The folder is 0700 and the file 0600; a file others can read is refused
// (as ssh refuses an open private key): its tokens would no longer be the
// user's alone. Writes go to a temporary file that is renamed over the old
// one, under a lock file, so a crash or two logins at once never leave a
// half-written or lost entry.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TlsFiles } from '../../client/tls.js';
import { UserError } from '../user-error.js';

export interface Account {
  /** the server's URL, without a trailing slash */
  url: string;
  /** the login name as given to `seafs login` (the device id is derived from it) */
  user: string;
  /** the account's e-mail as the server reports it */
  email: string;
  token: string;
  platform: string;
  deviceId: string;
  deviceName: string;
  /** ISO time of the login */
  savedAt: string;
  /** https files given at login (absolute paths), used by the account's mounts unless others are given */
  tls?: TlsFiles;
}

export type Accounts = Record<string, Account>;

interface AccountsFile {
  version: 1;
  accounts: Accounts;
}

/** seafs's config folder: $XDG_CONFIG_HOME/seafs, else ~/.config/seafs */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : undefined;
  return path.join(base ?? path.join(os.homedir(), '.config'), 'seafs');
}

/** an account name: letters, digits, `.`, `_`, `-` (no `:`, which ends it in `NAME:Library`) */
export const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function checkName(name: string): string {
  if (!ACCOUNT_NAME.test(name))
    throw new UserError(
      `the account name "${name}" is not valid: use up to 64 letters, digits, dots, dashes and underscores, starting with a letter or digit`,
    );
  return name;
}

const FIELDS = ['url', 'user', 'email', 'token', 'platform', 'deviceId', 'deviceName', 'savedAt'] as const;

export class AccountStore {
  readonly file: string;

  /** `dir`: the config folder (default configDir()) */
  constructor(readonly dir: string = configDir()) {
    this.file = path.join(dir, 'accounts.json');
  }

  /** Every saved account by name; none when the file does not exist. */
  async read(): Promise<Accounts> {
    let text: string;
    try {
      const st = await stat(this.file);
      if (st.mode & 0o077)
        throw new UserError(
          `${this.file} can be read by other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): ` +
            `its tokens are refused; chmod 600 ${this.file} (and seafs logout/login if others may have read them)`,
        );
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      if (e instanceof UserError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return {};
      throw new UserError(`cannot read ${this.file}: ${code ?? (e as Error).message}`);
    }
    return this.parse(text);
  }

  private parse(text: string): Accounts {
    const bad = (why: string) =>
      new UserError(`${this.file} is not a valid accounts file: ${why} (fix it, or remove it and log in again)`);
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw bad((e as Error).message);
    }
    const f = data as Partial<AccountsFile> | null;
    if (!f || typeof f !== 'object' || Array.isArray(f)) throw bad('not a JSON object');
    if (f.version !== 1) throw bad(`unknown version ${JSON.stringify(f.version)} (this seafs reads version 1)`);
    if (!f.accounts || typeof f.accounts !== 'object' || Array.isArray(f.accounts)) throw bad('no "accounts" object');
    for (const [name, a] of Object.entries(f.accounts)) {
      if (!ACCOUNT_NAME.test(name)) throw bad(`the account name "${name}" is not valid`);
      if (!a || typeof a !== 'object') throw bad(`account "${name}" is not an object`);
      for (const k of FIELDS)
        if (typeof (a as unknown as Record<string, unknown>)[k] !== 'string')
          throw bad(`account "${name}" has no ${k}`);
      if (!/^https?:\/\//.test(a.url)) throw bad(`account "${name}" has a url that is not http(s): ${a.url}`);
      if (!a.token) throw bad(`account "${name}" has an empty token`);
      const t = (a as { tls?: unknown }).tls;
      if (
        t !== undefined &&
        (!t || typeof t !== 'object' || Object.values(t).some((v) => typeof v !== 'string' || !path.isAbsolute(v)))
      )
        throw bad(`account "${name}" has tls files that are not absolute paths`);
    }
    return f.accounts;
  }

  /** The account `name`, or a clear error naming what is saved. */
  async get(name: string): Promise<Account> {
    const all = await this.read();
    const a = Object.hasOwn(all, name) ? all[name] : undefined;
    if (a) return a;
    const names = Object.keys(all);
    throw new UserError(
      `no saved account named "${name}" in ${this.file}` +
        (names.length ? ` (saved: ${names.join(', ')})` : '') +
        `; save one with: seafs login URL --user EMAIL --name ${name}`,
    );
  }

  /** Reads, lets `change` edit the accounts, and writes them back atomically under the lock. */
  async update<T>(change: (accounts: Accounts) => T | Promise<T>): Promise<T> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // the folder may exist from before (the device key): it holds tokens now
    await chmod(this.dir, 0o700).catch(() => {});
    const release = await this.lock();
    try {
      const accounts = await this.read();
      const out = await change(accounts);
      await this.write(accounts);
      return out;
    } finally {
      await release();
    }
  }

  private async write(accounts: Accounts): Promise<void> {
    const data: AccountsFile = { version: 1, accounts };
    const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      // 'wx' with 0600: never a moment where the tokens are readable by others
      const fh = await open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(JSON.stringify(data, null, 2) + '\n');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => {});
      throw new UserError(`cannot write ${this.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    // the rename is durable once the folder is synced
    const dh = await open(this.dir, 'r').catch(() => null);
    await dh
      ?.sync()
      .catch(() => {})
      .finally(() => dh.close());
  }

  /** An exclusive lock file beside the accounts file; one left by a crash (older than 30 s) is taken over. */
  private async lock(): Promise<() => Promise<void>> {
    const file = `${this.file}.lock`;
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const fh = await open(file, 'wx', 0o600);
        await fh.close();
        return () => rm(file, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new UserError(`cannot lock ${this.file}: ${(e as NodeJS.ErrnoException).code ?? e}`);
      }
      const st = await stat(file).catch(() => null);
      if (st && Date.now() - st.mtimeMs > 30_000) {
        await rm(file, { force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new UserError(`${file} is held by another seafs (remove it if no seafs login or logout is running)`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
