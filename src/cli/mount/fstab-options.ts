// The mount(8) side of `seafs mount`: a source written `URL#Library`, and
// `-o a=b,c` options as fstab and `mount -t fuse.seafs` hand them over. Each
// seafs option maps to one command-line flag; the generic mount options are
// passed to the kernel mount (the few libfuse 2 knows) or ignored, as FUSE
// file systems do; anything else is one clear error.
import { parseDuration } from './retry-login.js';
import { UserError } from '../user-error.js';
import { KiB, MiB, parseBwLimit, parseSize } from '../size-units.js';

/** The command-line flags (camelCase, as yargs names them) that -o can set. */
export interface OptionSettings {
  library?: string;
  user?: string;
  passwordFile?: string;
  libraryPasswordFile?: string;
  tokenFile?: string;
  cacheDir?: string;
  readOnly?: boolean;
  allowOther?: boolean;
  attrTimeout?: number;
  dirCacheTime?: number;
  /** bytes (a plain number given is MiB) */
  cacheMaxSize?: number;
  /** bytes (a plain number given is KiB) */
  readAhead?: number;
  /** as given (size-units.ts parseBwLimit reads it) */
  bwlimit?: string;
  retryFor?: string;
  timeout?: number;
  logFile?: string;
  logLevel?: string;
  uid?: number;
  gid?: number;
  /** octal text, as on the command line (parseUmask reads it) */
  umask?: string;
  xattrs?: boolean;
  cacheStreams?: boolean;
  officeLocks?: boolean;
  links?: boolean;
  thumbnails?: boolean;
  /** the folder of saved accounts (`NAME:Library` sources) */
  config?: string;
  deleteGuard?: number;
  caFile?: string;
  clientCert?: string;
  clientKey?: string;
}

type Kind = 'string' | 'number' | 'duration' | 'id' | 'octal' | 'size-mib' | 'size-kib' | 'bwlimit';

/** -o name (dashes read as underscores) -> flag, for options with a value */
const VALUED: Record<string, { key: keyof OptionSettings; kind: Kind }> = {
  library: { key: 'library', kind: 'string' },
  // `user=` belongs to mount(8): it marks a user mount, and mount rewrites it to `user=<login>`
  username: { key: 'user', kind: 'string' },
  password_file: { key: 'passwordFile', kind: 'string' },
  library_password_file: { key: 'libraryPasswordFile', kind: 'string' },
  token_file: { key: 'tokenFile', kind: 'string' },
  cache_dir: { key: 'cacheDir', kind: 'string' },
  config: { key: 'config', kind: 'string' },
  attr_timeout: { key: 'attrTimeout', kind: 'number' },
  dir_cache_time: { key: 'dirCacheTime', kind: 'number' },
  cache_max_size: { key: 'cacheMaxSize', kind: 'size-mib' },
  read_ahead: { key: 'readAhead', kind: 'size-kib' },
  bwlimit: { key: 'bwlimit', kind: 'bwlimit' },
  delete_guard: { key: 'deleteGuard', kind: 'number' },
  retry_for: { key: 'retryFor', kind: 'duration' },
  timeout: { key: 'timeout', kind: 'number' },
  log_file: { key: 'logFile', kind: 'string' },
  log_level: { key: 'logLevel', kind: 'string' },
  uid: { key: 'uid', kind: 'id' },
  gid: { key: 'gid', kind: 'id' },
  umask: { key: 'umask', kind: 'octal' },
  ca_file: { key: 'caFile', kind: 'string' },
  client_cert: { key: 'clientCert', kind: 'string' },
  client_key: { key: 'clientKey', kind: 'string' },
};

/** -o name -> boolean flag set to true */
const SWITCHES: Record<string, keyof OptionSettings> = {
  cache_streams: 'cacheStreams',
  links: 'links',
  allow_other: 'allowOther',
  read_only: 'readOnly',
};

/** -o name -> boolean flag set to false */
const OFF_SWITCHES: Record<string, keyof OptionSettings> = {
  noxattr: 'xattrs',
  nocache_streams: 'cacheStreams',
  nooffice_locks: 'officeLocks',
  nothumbnails: 'thumbnails',
};

/** generic options libfuse 2 passes on to the kernel mount */
const KERNEL = new Set([
  'nosuid',
  'suid',
  'nodev',
  'dev',
  'noexec',
  'exec',
  'sync',
  'async',
  'atime',
  'noatime',
  'dirsync',
  'default_permissions',
]);

/** generic options that only mean something to mount(8), systemd or the kernel's defaults */
const IGNORED = new Set([
  'rw',
  'defaults',
  'auto',
  'noauto',
  '_netdev',
  'nofail',
  'user',
  'users',
  'nouser',
  'owner',
  'group',
  'relatime',
  'norelatime',
  'strictatime',
  'nostrictatime',
  'lazytime',
  'nolazytime',
  'diratime',
  'nodiratime',
  'loud',
  'silent',
]);

/** options that mount(8) or systemd own: `user=<login>`, `comment=`, and `x-*` with or without a value */
function ownedByMount(name: string, hasValue: boolean): boolean {
  return /^x-/i.test(name) || (hasValue && (name === 'user' || name === 'comment'));
}

const ALL_NAMES = [
  ...Object.keys(VALUED).map((k) => `${k}=`),
  ...Object.keys(OFF_SWITCHES),
  ...Object.keys(SWITCHES),
  'ro',
];

/** fstab's octal escapes (`\040` for a space, `\011` tab, `\134` backslash) */
export function unescapeOctal(s: string): string {
  return s.replace(/\\([0-3][0-7]{2})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** `https://host#My Library` -> url and library; a URL never carries a fragment to the server. */
export function splitSource(source: string): { url: string; library?: string } {
  const s = unescapeOctal(source);
  const i = s.indexOf('#');
  if (i < 0) return { url: s };
  const library = s.slice(i + 1);
  return library ? { url: s.slice(0, i), library } : { url: s.slice(0, i) };
}

export interface ParsedOptions {
  settings: OptionSettings;
  /** generic options for the kernel mount (nosuid, noexec, ro, ...) */
  kernel: string[];
}

/** Parses the -o strings (each a comma-separated list); throws a UserError naming the first bad option. */
export function parseMountOptions(lists: string[]): ParsedOptions {
  const settings: OptionSettings = {};
  const kernel: string[] = [];
  for (const list of lists) {
    for (const raw of list.split(',')) {
      const item = raw.trim();
      if (!item) continue;
      const eq = item.indexOf('=');
      const given = eq < 0 ? item : item.slice(0, eq);
      const name = given.replace(/-/g, '_').toLowerCase();
      const value = eq < 0 ? undefined : unescapeOctal(item.slice(eq + 1));
      if (value === undefined && (KERNEL.has(name) || IGNORED.has(name))) {
        if (KERNEL.has(name) && !kernel.includes(name)) kernel.push(name);
        continue;
      }
      if (ownedByMount(given, value !== undefined)) continue;
      if (name === 'ro' && value === undefined) {
        settings.readOnly = true;
        if (!kernel.includes('ro')) kernel.push('ro');
        continue;
      }
      if (name === 'password' || name === 'token' || name === 'library_password') {
        throw new UserError(
          `-o ${name}= is refused: a secret in mount options is visible to every user (ps, /proc); use ${name}_file=FILE (first line, readable by root only)`,
        );
      }
      const sw = SWITCHES[name] ?? OFF_SWITCHES[name];
      if (sw) {
        if (value !== undefined) throw new UserError(`-o ${given} takes no value (got ${item})`);
        (settings as Record<string, unknown>)[sw] = SWITCHES[name] !== undefined;
        continue;
      }
      const v = VALUED[name];
      if (!v)
        throw new UserError(
          `unknown mount option "${given}" (seafs takes ${ALL_NAMES.join(', ')} and the generic mount options)`,
        );
      if (value === undefined || value === '') throw new UserError(`-o ${given} needs a value: ${given}=...`);
      if (v.kind === 'id') {
        (settings as Record<string, unknown>)[v.key] = parseId(value, `-o ${given}`);
      } else if (v.kind === 'octal') {
        parseUmask(value, `-o ${given}`);
        (settings as Record<string, unknown>)[v.key] = value;
      } else if (v.kind === 'size-mib' || v.kind === 'size-kib') {
        (settings as Record<string, unknown>)[v.key] = parseSize(
          value,
          `-o ${given}`,
          v.kind === 'size-mib' ? MiB : KiB,
        );
      } else if (v.kind === 'bwlimit') {
        parseBwLimit(value, `-o ${given}`);
        (settings as Record<string, unknown>)[v.key] = value;
      } else if (v.kind === 'number') {
        const n = Number(value);
        if (!Number.isFinite(n) || n < 0) throw new UserError(`-o ${given} takes a number of 0 or more (got ${value})`);
        (settings as Record<string, unknown>)[v.key] = n;
      } else {
        if (v.kind === 'duration') parseDuration(value);
        (settings as Record<string, unknown>)[v.key] = value;
      }
    }
  }
  return { settings, kernel };
}

/** A user or group id: a whole number from 0 to 2^32-2. */
export function parseId(value: string | number, what: string): number {
  const n = typeof value === 'number' ? value : /^\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0 || n >= 0xffffffff)
    throw new UserError(`${what} takes a numeric id (got ${value})`);
  return n;
}

/** A umask in octal (022, 0027, 7): the permission bits taken away from every entry. */
export function parseUmask(value: string | number, what: string): number {
  const text = String(value).trim();
  if (!/^[0-7]{1,4}$/.test(text)) throw new UserError(`${what} takes an octal mask such as 022 or 077 (got ${value})`);
  return parseInt(text, 8) & 0o777;
}
