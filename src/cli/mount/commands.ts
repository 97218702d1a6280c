// The mount, unmount and demo commands (yargs wiring; the work is in mount-*.ts).
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandModule, Options } from 'yargs';
import { LOG_LEVELS, logger, printErr, printOut, type LogLevel } from '../log.js';
import { controlPaths, requestUnmount, runtimeDir } from '../control/control-socket.js';
import { waitForDetached } from './detach-watch.js';
import { mountNodeFlags, mountProcessEnv } from './v8-tuning.js';
import { cacheRoot, loadLogin, saveLogin } from './offline-login.js';
import { parseId, parseMountOptions, parseUmask, splitSource, unescapeOctal } from './fstab-options.js';
import { parseDuration, retryUnreachable, UnreachableError } from './retry-login.js';
import type { MountSettings } from './run.js';
import { DEFAULT_DELETE_GUARD } from '../../vfs/vfs.js';
import { readLibraryPassword, readSecrets } from './secrets.js';
import { TokenRefused, UserError } from '../user-error.js';
import { checkBinding } from './binding-check.js';
import { preflight } from './preflight.js';
import { parseAccountSource, refusedLine, useAccount } from '../accounts/account-source.js';
import type { SeafileClient } from '../../client/client.js';
import { checkTls, TLS_OPTIONS, tlsFilesOf } from '../tls-options.js';
import { KiB, MiB, parseBwLimit, parseSize } from '../size-units.js';

/** A size flag's coercion to bytes (the last one given counts); `bareUnit`: what a plain number means. */
function lastSize(flag: string, bareUnit: number) {
  return (v: unknown) => parseSize((Array.isArray(v) ? v[v.length - 1] : v) as string, flag, bareUnit);
}

// The mount machinery (fuse-native, the vfs, the demo's server) is loaded only
// by the command that needs it, so `seafs serve` and `--help` stay light.
const mountRun = () => import('./run.js');

/** what a --daemon mount process runs (beside this file once built) */
const CHILD_ENTRY = fileURLToPath(new URL('./mount-child.js', import.meta.url));

/** The log options of mount and demo. */
interface LogArgv {
  logLevel?: LogLevel;
  logFile?: string;
  verbose?: boolean;
}

const LOG_OPTIONS = {
  'log-level': { choices: LOG_LEVELS, describe: 'least important messages logged (default info)' },
  'log-file': {
    type: 'string',
    describe: 'append timestamped log lines to this file instead of stderr (kept under 10 MiB, then F.1)',
  },
  verbose: { alias: 'v', type: 'boolean', describe: 'the same as --log-level debug' },
} satisfies Record<string, Options>;

/** Sends the log where the options say; a log file that cannot be opened is a clear error. */
function setupLog(argv: LogArgv): void {
  const file = argv.logFile ? resolve(argv.logFile) : undefined;
  try {
    logger.configure({ level: argv.logLevel ?? (argv.verbose ? 'debug' : 'info'), file });
  } catch (e) {
    throw new UserError(
      `cannot open the log file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}

interface MountArgv extends MountSettings, LogArgv {
  user?: string;
  passwordFile?: string;
  tokenFile?: string;
  otp?: string;
  daemon?: boolean;
  /** -o lists, as mount(8) passes them */
  options?: string[];
  retryFor?: string;
  retryForMs?: number;
  /** a saved account's token (this process only) and whether `NAME:` asked for its default library */
  accountToken?: string;
  defaultLibrary?: boolean;
}

/** Folds the source's `#Library` and the -o options into the flags they stand for. */
function applyMountOptions(argv: MountArgv): void {
  // `NAME:Library` (a saved account: accounts/account-source.ts) or `URL#Library`
  const account = parseAccountSource(unescapeOctal(argv.url));
  const src = account ? { url: argv.url, library: account.library } : splitSource(argv.url);
  const { settings, kernel } = parseMountOptions(argv.options ?? []);
  const names = [argv.library, src.library, settings.library].filter((l): l is string => l !== undefined);
  if (new Set(names).size > 1)
    throw new UserError(`the library is named twice, differently: ${names.map((n) => `"${n}"`).join(' and ')}`);
  Object.assign(argv, settings);
  argv.url = src.url;
  argv.library = names[0];
  argv.kernelOptions = kernel;
  argv.retryForMs = argv.retryFor ? parseDuration(argv.retryFor) : 0;
  if (account) {
    argv.account = account.name;
    argv.defaultLibrary = !account.all && argv.library === undefined;
  }
}

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

function fail(e: unknown): never {
  const msg = e instanceof UserError ? e.message : ((e as Error)?.stack ?? String(e));
  if (logger.file) logger.error(msg);
  printErr(`seafs: ${msg}\n`);
  notifyReady(`err ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

/** In a --daemon child: tell the waiting parent how the mount went. */
function notifyReady(line: string): void {
  const fd = Number(process.env.SEAFS_READY_FD);
  if (!fd) return;
  delete process.env.SEAFS_READY_FD;
  try {
    writeSync(fd, line.replace(/\n/g, ' ') + '\n');
    closeSync(fd);
  } catch {
    // the parent is gone
  }
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
  builder: (y) =>
    y
      .positional('url', {
        type: 'string',
        demandOption: true,
        describe:
          'server URL, e.g. https://cloud.example.com; URL#Library names the library; or a saved account (seafs login): NAME:Library, NAME: (its default library), NAME:/ (every library)',
      })
      .positional('mountpoint', { type: 'string', demandOption: true, describe: 'an existing empty folder' })
      .option('library', { type: 'string', describe: 'library name or id (default: the root lists every library)' })
      .option('user', {
        type: 'string',
        describe: 'account e-mail (password from SEAFS_PASSWORD, --password-file or a prompt)',
      })
      .option('password-file', { type: 'string', describe: 'file whose first line is the password' })
      .option('library-password-file', {
        type: 'string',
        describe:
          'file whose first line is the password of an encrypted --library (or set SEAFS_LIBRARY_PASSWORD; default: a prompt)',
      })
      .option('token-file', { type: 'string', describe: 'file whose first line is an API token (or set SEAFS_TOKEN)' })
      .option('otp', { type: 'string', describe: 'current two-factor code' })
      .option('config', {
        type: 'string',
        describe:
          'the folder of saved accounts for NAME: sources (default $XDG_CONFIG_HOME/seafs, else ~/.config/seafs)',
      })
      .option('read-only', { type: 'boolean', default: false, describe: 'refuse every write (EROFS)' })
      .option('allow-other', { type: 'boolean', default: false, describe: 'let other users access the mount' })
      .option('uid', { type: 'number', describe: 'owner shown for every file and folder (default: the mounting user)' })
      .option('gid', {
        type: 'number',
        describe: "group shown for every file and folder (default: the mounting user's group)",
      })
      .option('umask', {
        type: 'string',
        describe: 'octal mask taken from 777 (folders) and 666 (files) (default 022)',
      })
      .option('cache-dir', { type: 'string', describe: 'cache dir (default ~/.cache/seafs)' })
      .option('attr-timeout', {
        type: 'number',
        describe: 'seconds the kernel keeps attributes and names, taken from --dir-cache-time (default: half of it)',
      })
      .option('dir-cache-time', {
        type: 'number',
        default: 10,
        describe:
          'seconds a change on the server may take to show: folder listings are revalidated after this less --attr-timeout',
      })
      .option('cache-max-size', {
        type: 'string',
        describe:
          'what the cache dir may hold: downloaded data, and files being written (writes wait for uploads past it): a size such as 10G or 512M, a plain number is MiB (default 4G; 0: no disk cache, no limit)',
        coerce: lastSize('--cache-max-size', MiB),
      })
      .option('cache-streams', {
        type: 'boolean',
        describe:
          'keep what a front-to-back read downloads in the disk cache, whatever the file size (default: files up to 256 MiB; --no-cache-streams: none)',
      })
      .option('office-locks', {
        type: 'boolean',
        default: true,
        describe:
          "while LibreOffice's .~lock.NAME# or Word's ~$NAME exists, lock NAME on the server so that others see it read-only (servers with locks; --no-office-locks: never)",
      })
      .option('links', {
        alias: 'l',
        type: 'boolean',
        default: false,
        describe:
          'symbolic links: each is kept on the server as a file NAME.rclonelink holding its target, as rclone --links keeps them (off: ln -s fails, .rclonelink files show as files)',
      })
      .option('thumbnails', {
        type: 'boolean',
        default: true,
        describe:
          "fill the desktop's thumbnail cache (~/.cache/thumbnails) with the server's thumbnails of the pictures in the folders listed, so that file managers show them without downloading the pictures (--no-thumbnails: never)",
      })
      .option('read-ahead', {
        type: 'string',
        describe:
          'how far the kernel reads ahead in a file: a size such as 1M, a plain number is KiB (default 512; needs root; 0: the kernel default, 128)',
        coerce: lastSize('--read-ahead', KiB),
      })
      .option('bwlimit', {
        type: 'string',
        describe:
          'bandwidth limit of file uploads and downloads, as rclone: 10M (both ways, bytes/s; a plain number is KiB/s), UP:DOWN (1M:off, 512k:4M) or off (default); changed while mounted by `seafs bwlimit MOUNTPOINT RATE`',
        coerce: (v: unknown) => {
          const text = String(Array.isArray(v) ? v[v.length - 1] : v);
          parseBwLimit(text);
          return text;
        },
      })
      .option('timeout', {
        type: 'number',
        default: 30,
        describe: 'seconds a server request may wait for an answer (or between two chunks), retries included',
      })
      .option('xattrs', {
        type: 'boolean',
        default: true,
        describe:
          'extended attributes user.seafile.* (getfattr/setfattr); --no-xattrs turns them off, which spares the kernel a question before every write',
      })
      .option('delete-guard', {
        type: 'number',
        default: DEFAULT_DELETE_GUARD,
        describe:
          'after this many files deleted within 60 s, further deletes are refused (EPERM) until `seafs confirm-delete MOUNTPOINT` (0: off)',
      })
      .option('daemon', { type: 'boolean', default: false, describe: 'run in the background; return once mounted' })
      .option('options', {
        alias: 'o',
        type: 'string',
        array: true,
        nargs: 1,
        describe:
          'mount options a=b,c as in fstab: library=, username=, password_file=, library_password_file=, token_file=, cache_dir=, allow_other, ro, uid=, gid=, umask=, attr_timeout=, dir_cache_time=, cache_max_size=, delete_guard=, read_ahead=, bwlimit=, retry_for=, noxattr, links, nothumbnails, and the generic ones (nosuid, noexec, _netdev, noauto, x-systemd.*, ...)',
      })
      .option('retry-for', {
        type: 'string',
        describe: 'keep trying to reach the server this long before giving up (e.g. 60s, 5m; for mounts at boot)',
      })
      .option('debug', { type: 'boolean', default: false, hidden: true })
      .options(TLS_OPTIONS)
      .options(LOG_OPTIONS)
      .check((a) => {
        for (const k of ['attr-timeout', 'dir-cache-time', 'delete-guard'] as const) {
          const v = a[k] as number | undefined;
          if (v !== undefined && !(Number.isFinite(v) && v >= 0))
            throw new UserError(`--${k} takes a number of 0 or more`);
        }
        if (!(Number.isFinite(a.timeout) && (a.timeout as number) > 0))
          throw new UserError('--timeout takes a number of seconds above 0');
        if (a.uid !== undefined) parseId(a.uid as number, '--uid');
        if (a.gid !== undefined) parseId(a.gid as number, '--gid');
        if (a.umask !== undefined) parseUmask(a.umask as string, '--umask');
        return true;
      }) as never,
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

export const unmountCommand: CommandModule<object, { mountpoint: string; force?: boolean }> = {
  command: 'unmount <mountpoint>',
  describe: 'Unmount, after every pending upload is on the server',
  builder: (y) =>
    y.positional('mountpoint', { type: 'string', demandOption: true }).option('force', {
      type: 'boolean',
      describe:
        'detach at once (lazily), without asking the mount process: for a stale mount left by a crash or a mount whose process hangs',
    }) as never,
  handler: async (argv) => {
    const mnt = resolve(argv.mountpoint);
    if (argv.force) {
      const { forceUnmount } = await import('./unmount-force.js');
      await forceUnmount(mnt).then((line) => printOut(`seafs: ${line}\n`), fail);
      process.exit(0);
    }
    const r = await requestUnmount(mnt, (l) => printOut(`${l.startsWith('seafs:') ? '' : 'seafs: '}${l}\n`));
    if (r === true) process.exit(0);
    if (r === false)
      fail(
        new UserError(`unmounting ${mnt} did not complete: some files are not on the server (kept for the next mount)`),
      );
    const { clearStaleMount, isMounted } = await import('../../fuse/mount.js');
    if (await isMounted(mnt)) {
      // another user's mount: its socket is not in this user's runtime dir, and it is not stale
      const { foreignMountProblem, readProcMounts, staleProblem } = await import('./preflight.js');
      const foreign = foreignMountProblem(mnt, process.getuid?.() ?? 0, readProcMounts());
      if (foreign) fail(new UserError(foreign));
      await clearStaleMount(mnt).catch((e: unknown) =>
        fail(new UserError(staleProblem(mnt, `clearing it failed: ${(e as Error).message}`))),
      );
      printOut(`seafs: cleared a stale mount at ${mnt} (its process was gone)\n`);
      process.exit(0);
    }
    fail(new UserError(`nothing is mounted at ${mnt}`));
  },
};

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
