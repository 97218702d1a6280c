// The https options of the commands that connect (mount, login): a CA file
// trusted besides the system's, and a client certificate with its key. The
// files are named, never copied: paths are made absolute (a --daemon child
// and a mount of a saved account read them later) and checked once, up front,
// so a typo is one clear line rather than a failure at the first connection.
import { resolve } from 'node:path';
import type { Options } from 'yargs';
import type { ApiError } from '../client/errors.js';
import { checkTlsFiles, TlsFileError, type TlsFiles } from '../client/tls.js';
import { UnreachableError } from './mount/retry-login.js';
import { UserError } from './user-error.js';

export const TLS_OPTIONS = {
  'ca-file': {
    type: 'string',
    describe: "PEM file of CA certificates to trust besides Node's and the system's (a company's own CA)",
  },
  'client-cert': { type: 'string', describe: 'PEM client certificate, for a server that asks for one' },
  'client-key': { type: 'string', describe: 'PEM private key of --client-cert (keep it chmod 600)' },
} satisfies Record<string, Options>;

export interface TlsArgv {
  caFile?: string;
  clientCert?: string;
  clientKey?: string;
}

/** The files given, as absolute paths; undefined when none is. */
export function tlsFilesOf(argv: TlsArgv): TlsFiles | undefined {
  const abs = (f: string | undefined) => (f ? resolve(f) : undefined);
  const files: TlsFiles = {
    caFile: abs(argv.caFile),
    clientCert: abs(argv.clientCert),
    clientKey: abs(argv.clientKey),
  };
  for (const k of Object.keys(files) as (keyof TlsFiles)[]) if (files[k] === undefined) delete files[k];
  return Object.keys(files).length ? files : undefined;
}

/** The files given, each completed from `saved` (a saved account's): the CA file alone, the client pair as a pair. */
export function withSaved(given: TlsFiles | undefined, saved: TlsFiles | undefined): TlsFiles | undefined {
  if (!saved) return given;
  const out: TlsFiles = { ...given };
  if (!out.caFile && saved.caFile) out.caFile = saved.caFile;
  if (!out.clientCert && !out.clientKey && saved.clientCert && saved.clientKey) {
    out.clientCert = saved.clientCert;
    out.clientKey = saved.clientKey;
  }
  return Object.keys(out).length ? out : undefined;
}

/** Reads the files once: a file that cannot be used is a UserError; `warn` is told of a key others can read. */
export function checkTls(files: TlsFiles | undefined, warn: (line: string) => void): void {
  if (!files) return;
  try {
    for (const w of checkTlsFiles(files)) warn(w);
  } catch (e) {
    if (e instanceof TlsFileError) throw new UserError(e.message);
    throw e;
  }
}

/**
 * A refused certificate (ApiError kind `certificate`) as the line the user reads. Waiting
 * does not change a certificate, so it fails at once, with one exception: a certificate
 * "not valid yet" at boot is most often a clock not yet set (no RTC, NTP still to come),
 * which --retry-for waits out (never an offline start: the server did answer).
 */
export function certificateError(e: ApiError): UserError {
  const code = (e as ApiError & { code?: string }).code;
  return code === 'CERT_NOT_YET_VALID' ? new UnreachableError(e.serverMessage, true) : new UserError(e.serverMessage);
}
