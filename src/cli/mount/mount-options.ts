// The option table of `seafs mount` (its flags, their coercions and checks),
// the settings they parse into (MountArgv), and the folding of the source's
// `#Library` and of mount(8)'s -o lists into those flags.
import type { Argv } from 'yargs';
import { DEFAULT_DELETE_GUARD } from '../../vfs/vfs.js';
import { parseAccountSource } from '../accounts/account-source.js';
import { KiB, MiB, parseBwLimit, parseSize } from '../size-units.js';
import { TLS_OPTIONS } from '../tls-options.js';
import { UserError } from '../user-error.js';
import { parseId, parseMountOptions, parseUmask, splitSource, unescapeOctal } from './fstab-options.js';
import { LOG_OPTIONS, type LogArgv } from './log-options.js';
import { parseDuration } from './retry-login.js';
import type { MountSettings } from './run.js';

/** A size flag's coercion to bytes (the last one given counts); `bareUnit`: what a plain number means. */
function lastSize(flag: string, bareUnit: number) {
  return (v: unknown) => parseSize((Array.isArray(v) ? v[v.length - 1] : v) as string, flag, bareUnit);
}

export interface MountArgv extends MountSettings, LogArgv {
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

/** The flags of `seafs mount`, as yargs is told them. */
export function mountOptions(y: Argv) {
  return y
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
      describe: 'the folder of saved accounts for NAME: sources (default $XDG_CONFIG_HOME/seafs, else ~/.config/seafs)',
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
    });
}

/** Folds the source's `#Library` and the -o options into the flags they stand for. */
export function applyMountOptions(argv: MountArgv): void {
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
