// `seafs login`, `seafs logout` and `seafs accounts`: saved accounts, as
// rclone keeps named remotes. A login asks for the password (and the
// two-factor code when the server wants one), gets a token of this machine's
// own (platform, device_id, device_name: listed under the account's devices in
// the web interface, revocable there) and keeps it in accounts/store.ts's
// file; never the password. `seafs mount NAME:Library DIR` then mounts with it
// (accounts/account-source.ts). Logout deletes the token on the server
// (POST /api2/logout-device/, what seahub's desktop client calls) and here.
// The client is loaded by the command that uses it (`--help` and `serve` stay light).
import path from 'node:path';
import type { CommandModule } from 'yargs';
import type { SeafileClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import { AccountStore, checkName, configDir, type Account } from './store.js';
import { exitAfterOutput, printErr, printOut } from '../log.js';
import { firstLine, promptHidden } from '../mount/secrets.js';
import { UserError } from '../user-error.js';
import { certificateError, checkTls, TLS_OPTIONS, tlsFilesOf, withSaved, type TlsArgv } from '../tls-options.js';

interface ConfigArgv {
  config?: string;
}

const CONFIG_OPTION = {
  config: {
    type: 'string',
    describe: 'the folder of saved accounts (default $XDG_CONFIG_HOME/seafs, else ~/.config/seafs)',
  },
} as const;

export function storeOf(argv: ConfigArgv): AccountStore {
  return new AccountStore(argv.config ? path.resolve(argv.config) : configDir());
}

function fail(e: unknown): never {
  printErr(`seafs: ${e instanceof UserError ? e.message : ((e as Error)?.stack ?? String(e))}\n`);
  process.exit(1);
}

/** A default name from the server's host: its first label (cloud.example.com: cloud), an address as it is. */
export function defaultName(url: string): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  const name = /^[\d.]+$/.test(host) ? host : host.split('.')[0];
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name) ? name : undefined;
}

/** Lines piped to stdin (no terminal): the password, then the two-factor code if asked. */
async function stdinLines(): Promise<string[]> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/);
}

interface LoginArgv extends ConfigArgv, TlsArgv {
  source: string;
  user?: string;
  name?: string;
  passwordFile?: string;
  otp?: string;
  timeout: number;
}

function loginError(e: unknown, url: string, withOtp: boolean): Error {
  if (!(e instanceof ApiError)) return e as Error;
  switch (e.kind) {
    case 'network':
    case 'timeout':
      return new UserError(`cannot reach the server at ${url}: ${e.message}`);
    case 'certificate':
      return certificateError(e);
    case 'otp_required':
      return new UserError(
        withOtp
          ? 'the two-factor code was refused (wrong, or used already): try again with the next one'
          : 'the account uses two-factor authentication: give the current code with --otp CODE (or on the terminal)',
      );
    case 'unauthorized':
    case 'bad_request':
      return new UserError('login refused: wrong user or password');
    case 'throttled':
      return new UserError('the server refuses logins for now (too many attempts): try again in a minute');
    default:
      return new UserError(`the server at ${url} answered: ${e.message}`);
  }
}

async function login(argv: LoginArgv): Promise<void> {
  const store = storeOf(argv);
  let url: string;
  let user = argv.user;
  let name = argv.name;
  let tls = tlsFilesOf(argv);
  if (/^https?:\/\//i.test(argv.source)) {
    url = argv.source.replace(/\/+$/, '');
    if (!user) throw new UserError('name the account to log in with: --user EMAIL');
    name ??= defaultName(url);
    if (!name) throw new UserError(`give the account a name with --name NAME (none follows from ${url})`);
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(argv.source)) {
    throw new UserError(`the server URL must start with http:// or https:// (got ${argv.source})`);
  } else {
    // `seafs login NAME`: the saved account again (its token was revoked or expired)
    const saved = await store.get(checkName(argv.source.replace(/:$/, '')));
    if (name && name !== argv.source.replace(/:$/, ''))
      throw new UserError('--name renames nothing: log in with the URL to save another account');
    if (user && user.toLowerCase() !== saved.user.toLowerCase())
      throw new UserError(`"${argv.source}" is saved for ${saved.user}; log in with the URL to save another account`);
    name = argv.source.replace(/:$/, '');
    url = saved.url;
    user = saved.user;
    tls = withSaved(tls, saved.tls);
  }
  checkTls(tls, (l) => printErr(`seafs: ${l}\n`));
  checkName(name);
  // the same name or the same account saved differently: one clear line before the password is asked
  const before = await store.read();
  const clash = (accounts: Record<string, Account>) => {
    const same = accounts[name];
    if (Object.hasOwn(accounts, name) && (same.url !== url || same.user.toLowerCase() !== user.toLowerCase()))
      throw new UserError(
        `an account named "${name}" is saved already (${same.user} at ${same.url}): choose another --name, or seafs logout ${name} first`,
      );
    for (const [other, a] of Object.entries(accounts))
      if (other !== name && a.url === url && a.user.toLowerCase() === user.toLowerCase())
        throw new UserError(`${user} at ${url} is saved already as "${other}" (seafs login ${other} logs in again)`);
  };
  clash(before);

  let lines: string[] | null = null;
  let password: string;
  if (argv.passwordFile) password = await firstLine(argv.passwordFile, 'password');
  else if (process.env.SEAFS_PASSWORD) password = process.env.SEAFS_PASSWORD;
  else if (process.stdin.isTTY) password = await promptHidden(`Password for ${user} at ${url}: `);
  else {
    lines = await stdinLines();
    password = lines[0] ?? '';
  }
  if (!password)
    throw new UserError('no password given (type it at the prompt, or pipe it to stdin, or set SEAFS_PASSWORD)');

  // the device id of the password mounts (accounts/device.ts): one device per machine and account
  const [{ SeafileClient }, { loginDevice }] = await Promise.all([
    import('../../client/client.js'),
    import('./device.js'),
  ]);
  const device = loginDevice(url, user);
  const opts = { baseUrl: url, timeoutMs: Math.round(argv.timeout * 1000), loginRetryMs: 0, tls };
  let otp = argv.otp;
  let client: SeafileClient;
  let token: string;
  try {
    ({ client, token } = await SeafileClient.login(opts, user, password, otp, device));
  } catch (e) {
    if (!(e instanceof ApiError && e.kind === 'otp_required' && otp === undefined)) throw loginError(e, url, !!otp);
    // the server wants the two-factor code: the next piped line, or the terminal
    const noCode = 'the account uses two-factor authentication: give the current code with --otp CODE';
    otp = lines ? lines[1]?.trim() : await promptHidden(`Two-factor code for ${user}: `, noCode);
    if (!otp) throw new UserError(noCode);
    try {
      ({ client, token } = await SeafileClient.login(opts, user, password, otp, device));
    } catch (e2) {
      throw loginError(e2, url, true);
    }
  }
  let email: string;
  try {
    email = (await client.accountInfo()).email || user;
  } catch (e) {
    throw loginError(e, url, false);
  } finally {
    await client.close();
  }
  const account: Account = {
    url,
    user,
    email,
    token,
    platform: device.platform,
    deviceId: device.deviceId,
    deviceName: device.deviceName,
    savedAt: new Date().toISOString(),
    ...(tls ? { tls } : {}),
  };
  await store.update((accounts) => {
    clash(accounts);
    accounts[name] = account;
  });
  printOut(
    `seafs: logged in as ${email} at ${url} (this machine shows as "${device.deviceName}" among the account's devices); ` +
      `saved as "${name}" in ${store.file}\n` +
      `mount it with: seafs mount ${name}: DIR (the default library), ${name}:"Library name" DIR, or ${name}:/ DIR (every library)\n`,
  );
}

export const loginCommand: CommandModule<object, LoginArgv> = {
  command: 'login <source>',
  describe: 'Log in to a server and save the account (a token of this machine, never the password)',
  builder: (y) =>
    y
      .positional('source', {
        type: 'string',
        demandOption: true,
        describe: 'server URL (https://cloud.example.com), or the name of a saved account to log in again',
      })
      .option('user', { type: 'string', describe: 'account e-mail (or login name)' })
      .option('name', {
        type: 'string',
        describe: "the account's name for seafs mount NAME: (default: the host's first label)",
      })
      .option('password-file', {
        type: 'string',
        describe:
          'file whose first line is the password (else SEAFS_PASSWORD, the terminal, or the first line of stdin)',
      })
      .option('otp', { type: 'string', describe: 'the current two-factor code (else asked when the server wants one)' })
      .option('timeout', { type: 'number', default: 30, describe: 'seconds the server may take to answer' })
      .options(TLS_OPTIONS)
      .options(CONFIG_OPTION) as never,
  handler: async (argv) => {
    try {
      await login(argv);
      await exitAfterOutput(0);
    } catch (e) {
      fail(e);
    }
  },
};

interface LogoutArgv extends ConfigArgv {
  name: string;
  forget: boolean;
}

/** Deletes the account's token on the server; what happened, in a few words. */
async function revoke(a: Account): Promise<string> {
  const { SeafileClient } = await import('../../client/client.js');
  const client = new SeafileClient({ baseUrl: a.url, token: a.token, timeoutMs: 15_000, tls: a.tls });
  try {
    await client.logoutDevice();
    return 'its token is deleted on the server';
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    if (e.kind === 'unauthorized') return 'the server had already revoked its token';
    // a server without logout-device: unlink the device as the web interface does
    if (e.kind !== 'not_found') throw e;
    await client.unlinkDevice(a.platform, a.deviceId);
    return 'its device is unlinked on the server';
  } finally {
    await client.close();
  }
}

async function logout(argv: LogoutArgv): Promise<void> {
  const store = storeOf(argv);
  const name = argv.name.replace(/:$/, '');
  const a = await store.get(name);
  let outcome: string;
  try {
    outcome = await revoke(a);
  } catch (e) {
    const why = e instanceof ApiError ? e.message : (e as Error).message;
    if (!argv.forget)
      throw new UserError(
        `could not revoke the token of "${name}" on ${a.url} (${why}); it stays saved. Try again, or ` +
          `seafs logout ${name} --forget to forget it here only (then unlink the device "${a.deviceName}" in the web interface)`,
      );
    outcome = `its token could NOT be revoked on the server (${why}): unlink the device "${a.deviceName}" in the web interface`;
  }
  await store.update((accounts) => {
    // a login meanwhile saved a new token: that one stays
    if (accounts[name]?.token === a.token) delete accounts[name];
  });
  printOut(`seafs: logged out of "${name}" (${a.email} at ${a.url}): ${outcome}; forgotten here\n`);
}

export const logoutCommand: CommandModule<object, LogoutArgv> = {
  command: 'logout <name>',
  describe: "Revoke a saved account's token on the server and forget it",
  builder: (y) =>
    y
      .positional('name', { type: 'string', demandOption: true, describe: 'the saved account' })
      .option('forget', {
        type: 'boolean',
        default: false,
        describe: 'forget it here even when the server cannot be reached to revoke the token',
      })
      .options(CONFIG_OPTION) as never,
  handler: async (argv) => {
    try {
      await logout(argv);
      await exitAfterOutput(0);
    } catch (e) {
      fail(e);
    }
  },
};

interface AccountsArgv extends ConfigArgv {
  json: boolean;
}

export const accountsCommand: CommandModule<object, AccountsArgv> = {
  command: 'accounts',
  describe: 'List the saved accounts (never their tokens)',
  builder: (y) =>
    y
      .option('json', { type: 'boolean', default: false, describe: 'print them as JSON' })
      .options(CONFIG_OPTION) as never,
  handler: async (argv) => {
    try {
      const store = storeOf(argv);
      const all = Object.entries(await store.read()).map(([name, a]) => ({
        name,
        user: a.email,
        url: a.url,
        device: a.deviceName,
        savedAt: a.savedAt,
      }));
      if (argv.json) printOut(JSON.stringify(all, null, 2) + '\n');
      else if (!all.length) printOut(`no saved accounts in ${store.file} (seafs login URL --user EMAIL saves one)\n`);
      else {
        const rows = [
          ['NAME', 'ACCOUNT', 'SERVER', 'DEVICE', 'LOGGED IN'],
          ...all.map((a) => [a.name, a.user, a.url, a.device, a.savedAt.slice(0, 16).replace('T', ' ')]),
        ];
        const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
        printOut(
          rows
            .map((r) =>
              r
                .map((c, i) => c.padEnd(widths[i]))
                .join('  ')
                .trimEnd(),
            )
            .join('\n') + '\n',
        );
      }
      await exitAfterOutput(0);
    } catch (e) {
      fail(e);
    }
  },
};
