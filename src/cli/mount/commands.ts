// The mount and demo commands: the mount's handler (log in, detach with
// --daemon, mount here); its option table is mount-options.ts, unmount is
// unmount-command.ts, and the mount's work is run.ts.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandModule } from 'yargs';
import { logger, printErr, printOut } from '../log.js';
import { controlPaths, runtimeDir } from '../control/control-socket.js';
import { waitForDetached } from './detach-watch.js';
import { mountNodeFlags, mountProcessEnv } from './v8-tuning.js';
import { cacheRoot, loadLogin, saveLogin } from './offline-login.js';
import { retryUnreachable, UnreachableError } from './retry-login.js';
import { applyMountOptions, mountOptions, type MountArgv } from './mount-options.js';
import { LOG_OPTIONS, setupLog, type LogArgv } from './log-options.js';
import { fail, notifyReady } from './command-exit.js';
import { readLibraryPassword, readSecrets } from './secrets.js';
import { TokenRefused, UserError } from '../user-error.js';
import { checkBinding } from './binding-check.js';
import { preflight } from './preflight.js';
import { refusedLine, useAccount } from '../accounts/account-source.js';
import type { SeafileClient } from '../../client/client.js';
import { checkTls, tlsFilesOf } from '../tls-options.js';

// The mount machinery (fuse-native, the vfs, the demo's server) is loaded only
// by the command that needs it, so `seafs serve` and `--help` stay light.
const mountRun = () => import('./run.js');

/** what a --daemon mount process runs (beside this file once built) */
const CHILD_ENTRY = fileURLToPath(new URL('./mount-child.js', import.meta.url));

/** `NAME:`: the account's default library, by id (asked once the client is logged in). */
async function pickDefaultLibrary(argv: MountArgv, client: SeafileClient): Promise<void> {
  if (!argv.defaultLibrary || argv.library !== undefined) return;
  const id = await client.defaultLibrary().catch((e: Error) => {
    throw new UserError(`cannot ask the server for the account's default library: ${e.message}`);
  });
  if (!id)
    throw new UserError(
      `the account "${argv.account}" has no default library: name one (${argv.account}:"Library name") or mount every library (${argv.account}:/)`,
    );
  argv.library = id;
  argv.defaultLibrary = false;
}

/**
 * Log in; with --retry-for, wait for a server that is not reachable yet. Still unreachable: the login an
 * earlier mount kept here (mount/offline-login.ts), and `offline` set; the mount then starts from what it kept.
 */
async function connectWithRetry(argv: MountArgv, secrets: Awaited<ReturnType<typeof readSecrets>>) {
  const { connect, log, offlineClient } = await mountRun();
  const root = cacheRoot(argv.cacheDir ? resolve(argv.cacheDir) : undefined, homedir());
  try {
    const tls = tlsFilesOf(argv);
    const c = await retryUnreachable(() => connect(argv.url, argv.user, secrets, argv.otp, argv.timeout, tls), {
      forMs: argv.retryForMs ?? 0,
      log,
    });
    // kept for a start without the server: under the user (token encrypted), and under the token (e-mail only,
    // for the --daemon child, which logs in with the token)
    await saveLogin(root, argv.url, argv.user, secrets, c)
      .then(() => (secrets.token ? undefined : saveLogin(root, argv.url, undefined, { token: c.token }, c)))
      .catch((e: unknown) => log(`cannot keep the login for a start offline: ${(e as Error).message}`));
    return { ...c, offline: false };
  } catch (e) {
    if (argv.account && e instanceof TokenRefused) throw new UserError(refusedLine(argv.account, argv.config));
    if (!(e instanceof UnreachableError) || e.answered) throw e;
    const saved = await loadLogin(root, argv.url, argv.user, secrets);
    if (!saved)
      throw new UnreachableError(`${e.message} (no earlier mount of this account here to start offline from)`);
    log(`${e.message}; mounting from what earlier mounts kept`);
    return { client: offlineClient(argv.url, saved.token, argv.timeout, tlsFilesOf(argv)), ...saved, offline: true };
  }
}

/** The token of a saved account, else the secrets of the options and environment. */
async function mountSecrets(argv: MountArgv): Promise<Awaited<ReturnType<typeof readSecrets>>> {
  return argv.accountToken ? { token: argv.accountToken } : readSecrets(argv);
}

/** Re-spawn detached with the token in the environment; return once the child has mounted. */
async function daemonize(argv: MountArgv): Promise<never> {
  const secrets = await mountSecrets(argv);
  const { client, token, offline } = await connectWithRetry(argv, secrets);
  // the child has no terminal: an encrypted library's password is asked here and passed in its environment
  let libraryPassword: string | undefined;
  try {
    await pickDefaultLibrary(argv, client);
    const lib =
      argv.library === undefined || offline
        ? undefined
        : (await client.listLibraries()).find((l) => l.id === argv.library || l.name === argv.library);
    if (lib?.encrypted) {
      libraryPassword = await readLibraryPassword(argv, lib.name);
      // a wrong password is told here, in one line, rather than by the child's log
      const { LibraryLocks, WrongLibraryPassword } = await import('../../vfs/vfs.js');
      await new LibraryLocks(client, () => {}, null).unlock(lib, libraryPassword).catch((e: unknown) => {
        throw e instanceof WrongLibraryPassword ? new UserError(e.message.replace(/^EACCES: /, '')) : e;
      });
    }
  } finally {
    await client.close();
  }
  const mnt = resolve(argv.mountpoint);
  mkdirSync(runtimeDir(), { recursive: true, mode: 0o700 });
  // the child logs with timestamps to the user's log file, or to one beside its control socket;
  // what it prints outside the log (a crash) goes to the same file
  const logFile = argv.logFile ? resolve(argv.logFile) : controlPaths(mnt).log;
  const out = openSync(logFile, 'a', 0o600);
  // the child gets the command line as parsed here (no yargs in a process that lives as long as the
  // mount: about 5 MiB of resident memory); its own arguments only name it for ps and tools
  const settings: MountArgv = {
    ...argv,
    mountpoint: mnt,
    cacheDir: argv.cacheDir ? resolve(argv.cacheDir) : undefined,
    libraryPasswordFile: argv.libraryPasswordFile ? resolve(argv.libraryPasswordFile) : undefined,
    logFile,
    logLevel: logger.level,
    verbose: false,
  };
  // the credentials travel as the token (SEAFS_TOKEN) alone
  for (const k of ['otp', 'passwordFile', 'password-file', 'tokenFile', 'token-file', 'accountToken'])
    delete (settings as unknown as Record<string, unknown>)[k];
  const args = [CHILD_ENTRY, 'mount', argv.url, mnt];
  const env = mountProcessEnv({
    ...process.env,
    SEAFS_TOKEN: token,
    SEAFS_READY_FD: '3',
    SEAFS_MOUNT_ARGV: JSON.stringify(settings),
  });
  delete env.SEAFS_PASSWORD;
  if (libraryPassword !== undefined) env.SEAFS_LIBRARY_PASSWORD = libraryPassword;
  const child = spawn(process.execPath, [...mountNodeFlags(), ...args], {
    detached: true,
    stdio: ['ignore', out, out, 'pipe'],
    env,
  });
  closeSync(out);
  const pipe = child.stdio[3] as NodeJS.ReadableStream;
  pipe.setEncoding('utf8');
  const answer = await new Promise<string>((res) => {
    let buf = '';
    pipe.on('data', (d: string) => {
      buf += d;
      if (buf.includes('\n')) res(buf.split('\n')[0]);
    });
    child.once('exit', (code) => res(`err the mount process exited (${code}) before the mount was ready`));
    setTimeout(() => res('err the mount was not ready within 120 s'), 120_000).unref();
  });
  if (answer.startsWith('ok ')) {
    printOut(`${answer.slice(3)} (pid ${child.pid}, log ${logFile})\n`);
    child.unref();
    (pipe as unknown as { destroy(): void }).destroy();
    process.exit(0);
  }
  let tail = '';
  try {
    tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    // no log
  }
  child.unref();
  throw new UserError(`${answer.replace(/^err /, '')}${tail ? `\n${tail}` : ''}`);
}

export const mountCommand: CommandModule<object, MountArgv> = {
  command: 'mount <url> <mountpoint>',
  describe: 'Mount a library (or every library) of a server as a local folder',
  builder: (y) => mountOptions(y) as never,
  handler: async (argv) => {
    try {
      applyMountOptions(argv);
      setupLog(argv);
      const problem = preflight(argv);
      if (problem) throw new UserError(problem);
      const warning = checkBinding(argv);
      if (warning) printErr(`seafs: ${warning}\n`);
      if (argv.account) await useAccount(argv);
      // absolute for the --daemon child; a file that cannot be used fails here, in one line
      Object.assign(argv, tlsFilesOf(argv));
      checkTls(tlsFilesOf(argv), (l) => printErr(`seafs: ${l}\n`));
      // a seafs detached from this mount point and still uploading: waited for here, where the user sees it
      const busy = await waitForDetached(resolve(argv.mountpoint), (l) => printErr(`seafs: ${l}\n`));
      if (busy) throw new UserError(busy);
      // a --daemon child: its stdout is the log file, the parent prints the "mounted" line
      if (argv.daemon) await daemonize(argv);
      await mountHere(argv, false);
    } catch (e) {
      fail(e);
    }
  },
};

/** The --daemon child (mount/mount-child.ts): mounts with the settings its parent parsed. */
export async function mountChild(): Promise<void> {
  try {
    const raw = process.env.SEAFS_MOUNT_ARGV;
    delete process.env.SEAFS_MOUNT_ARGV;
    if (!raw || !process.env.SEAFS_READY_FD) throw new UserError('this entry is started by `seafs mount --daemon`');
    const argv = JSON.parse(raw) as MountArgv;
    setupLog(argv);
    await mountHere(argv, true);
  } catch (e) {
    fail(e);
  }
}

/** Mount in this process and serve until unmounted; `daemonChild`: the parent prints the "mounted" line. */
async function mountHere(argv: MountArgv, daemonChild: boolean): Promise<never> {
  const { handleSignals, startMount } = await mountRun();
  const secrets = await mountSecrets(argv);
  logger.addSecret(secrets.password);
  logger.addSecret(secrets.token);
  logger.addSecret(argv.otp);
  logger.addSecret(process.env.SEAFS_LIBRARY_PASSWORD);
  const { client, email, token } = await connectWithRetry(argv, secrets);
  logger.addSecret(token);
  await pickDefaultLibrary(argv, client).catch(async (e: unknown) => {
    await client.close();
    throw e;
  });
  const m = await startMount(argv, client, email);
  handleSignals(m);
  const line = `seafs: mounted ${m.label} at ${m.mountpoint}`;
  if (!daemonChild) printOut(line + '\n');
  if (logger.file) logger.info(`mounted ${m.label} at ${m.mountpoint} (pid ${process.pid})`);
  notifyReady(`ok ${line}`);
  process.exit(await m.finished);
}

export const demoCommand: CommandModule<object, { mountpoint: string } & LogArgv> = {
  command: 'demo [mountpoint]',
  describe: 'Start a local server with a sample library and mount it (default ./seafs-demo)',
  builder: (y) => y.positional('mountpoint', { type: 'string', default: 'seafs-demo' }).options(LOG_OPTIONS) as never,
  handler: async (argv) => {
    try {
      setupLog(argv);
      const { runDemo } = await import('./demo.js');
      process.exit(await runDemo(argv.mountpoint));
    } catch (e) {
      fail(e);
    }
  },
};
