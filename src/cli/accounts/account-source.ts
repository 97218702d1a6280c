// A mount of a saved account (`seafs login`): the source `NAME:Library`,
// `NAME:` (the account's default library, "My Library" on a new account) or
// `NAME:/` (every library). The account gives the server's URL and the token;
// its folder is --config / -o config= (default: the config folder of the user
// the mount runs as, so a mount at boot by root reads root's unless told).
import path from 'node:path';
import { AccountStore, ACCOUNT_NAME, configDir } from './store.js';
import { UserError } from '../user-error.js';
import { tlsFilesOf, withSaved } from '../tls-options.js';

export interface AccountSource {
  name: string;
  /** the library named after the colon; undefined: the default library, or every one with `all` */
  library?: string;
  all: boolean;
}

/** `NAME:...` as a saved account's source; null for a URL (or anything else). */
export function parseAccountSource(source: string): AccountSource | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) return null;
  const i = source.indexOf(':');
  if (i < 0) return null;
  const name = source.slice(0, i);
  if (!ACCOUNT_NAME.test(name)) return null;
  const rest = source.slice(i + 1);
  if (rest === '/') return { name, all: true };
  return rest ? { name, library: rest, all: false } : { name, all: false };
}

/** `seafs login NAME`, with `--config DIR` when the accounts are not in the default folder */
export function loginAgain(name: string, config?: string): string {
  const dir = config ? path.resolve(config) : undefined;
  return `seafs login ${name}${dir && dir !== configDir() ? ` --config ${dir}` : ''}`;
}

/** The one line of a mount whose saved login the server refuses. */
export function refusedLine(name: string, config?: string): string {
  return `the server refused the saved login "${name}" (revoked or expired): log in again: ${loginAgain(name, config)}`;
}

export interface AccountArgv {
  url: string;
  user?: string;
  passwordFile?: string;
  tokenFile?: string;
  /** the saved account's name (set from the source) */
  account?: string;
  /** the folder of saved accounts */
  config?: string;
  /** its token, for this process only (never passed on in argv or settings) */
  accountToken?: string;
  /** https files: those given, else the ones saved with the account */
  caFile?: string;
  clientCert?: string;
  clientKey?: string;
}

/** Fills in the account's URL and token; an account source with other credentials is refused. */
export async function useAccount(argv: AccountArgv): Promise<void> {
  const name = argv.account!;
  const given = [
    argv.user && '--user',
    argv.passwordFile && '--password-file',
    argv.tokenFile && '--token-file',
  ].filter(Boolean);
  if (given.length)
    throw new UserError(
      `${name}: is a saved account: it needs no ${given.join(', ')} (or mount with the server's URL)`,
    );
  // absolute: a --daemon child reads it again after a refusal
  if (argv.config) argv.config = path.resolve(argv.config);
  const store = new AccountStore(argv.config ?? configDir());
  const a = await store.get(name);
  argv.url = a.url;
  argv.accountToken = a.token;
  Object.assign(argv, withSaved(tlsFilesOf(argv), a.tls));
}

/** The saved token of `name` now (a running mount looks again after a refusal: the user may have logged in again). */
export async function savedToken(name: string, config?: string): Promise<string | undefined> {
  const store = new AccountStore(config ? path.resolve(config) : configDir());
  return (await store.read())[name]?.token;
}
