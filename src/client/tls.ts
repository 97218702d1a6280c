// Whom https connections trust, and the client certificate they show. Node
// trusts only its own copy of Mozilla's roots; a company's CA installed the
// usual way (update-ca-certificates, update-ca-trust) is in the system's
// bundle, which curl and rclone read. So every connection of the client
// (seahub, and the fileserver, which may be another host) trusts Node's roots,
// the system's bundle, NODE_EXTRA_CA_CERTS and --ca-file. Built once, on the
// first https connection (measured: 25-30 ms and 2.2 MB resident, against
// 17-26 ms and 1.6 MB for Node's default context; plain-http mounts build none).
import { readFileSync, statSync } from 'node:fs';
import tls, { type SecureContext } from 'node:tls';

/** The system's CA bundle on the common distributions; the first that exists is read. */
export const SYSTEM_CA_FILES = [
  '/etc/ssl/certs/ca-certificates.crt', // Debian, Ubuntu, Arch, Gentoo
  '/etc/pki/tls/certs/ca-bundle.crt', // Fedora, RHEL, CentOS
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem', // RHEL 7 and later, without the compatibility link
  '/etc/ssl/cert.pem', // Alpine, macOS
  '/etc/ssl/ca-bundle.pem', // openSUSE
];

/** The files an https connection reads besides Node's own roots. */
export interface TlsFiles {
  /** more CA certificates (PEM) to trust */
  caFile?: string;
  /** a client certificate (PEM, may hold its chain) and its key, for servers that ask for one */
  clientCert?: string;
  clientKey?: string;
}

/** A problem with a TLS file, for the user as it stands. */
export class TlsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFileError';
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM text (anything between them, such as comments, is left out). */
export function pemCertificates(text: string): string[] {
  return text.match(PEM_CERT) ?? [];
}

/** The system's bundle: SSL_CERT_FILE when set (as OpenSSL and Go read it), else the first of `candidates` that exists. */
export function systemCaFile(
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = SYSTEM_CA_FILES,
): string | undefined {
  if (env.SSL_CERT_FILE) return env.SSL_CERT_FILE;
  return candidates.find((f) => {
    try {
      return statSync(f).isFile();
    } catch {
      return false;
    }
  });
}

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new TlsFileError(`cannot read ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/** A certificate's identity for de-duplication: its base64 body without line breaks. */
const bodyOf = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, '');

/**
 * The CA certificates to trust besides Node's roots: the system's bundle,
 * NODE_EXTRA_CA_CERTS and `caFile`, each once, without those Node has. A
 * system bundle that cannot be read is skipped (Node's roots remain); a
 * `caFile` that cannot be read, or holds no certificate, is an error.
 */
export function extraCertificates(
  caFile: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = SYSTEM_CA_FILES,
): string[] {
  const seen = new Set(tls.rootCertificates.map(bodyOf));
  const out: string[] = [];
  const add = (pems: readonly string[]) => {
    for (const p of pems) {
      const k = bodyOf(p);
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(p);
    }
  };
  for (const f of [systemCaFile(env, candidates), env.NODE_EXTRA_CA_CERTS]) {
    if (!f) continue;
    try {
      add(pemCertificates(readFileSync(f, 'utf8')));
    } catch {
      // no such bundle here: Node's roots and the others remain
    }
  }
  if (caFile) {
    const pems = pemCertificates(readText(caFile, 'the CA file'));
    if (!pems.length) throw new TlsFileError(`the CA file ${caFile} holds no PEM certificate (BEGIN CERTIFICATE)`);
    add(pems);
  }
  return out;
}

/** Checks the client certificate options: both or neither. */
function checkPair(files: TlsFiles): void {
  if (!!files.clientCert !== !!files.clientKey)
    throw new TlsFileError(
      files.clientCert ? '--client-cert needs its key: --client-key FILE' : '--client-key needs --client-cert FILE',
    );
}

/**
 * Warnings about the files given (never their content): a client key that other
 * users may read. Throws TlsFileError for a file that cannot be read or used.
 */
export function checkTlsFiles(files: TlsFiles): string[] {
  checkPair(files);
  const warnings: string[] = [];
  if (files.caFile) extraCertificates(files.caFile, {}, []);
  if (files.clientCert && files.clientKey) {
    let mode: number;
    try {
      mode = statSync(files.clientKey).mode;
    } catch (e) {
      throw new TlsFileError(
        `cannot read the client key ${files.clientKey}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    if (mode & 0o077)
      warnings.push(
        `the client key ${files.clientKey} can be read by other users (mode ${(mode & 0o777).toString(8)}): chmod 600 it`,
      );
    clientContext(files);
  }
  return warnings;
}

/** Builds a context with the client certificate alone, to check that the pair loads. */
function clientContext(files: TlsFiles): void {
  const cert = readText(files.clientCert!, 'the client certificate');
  const key = readText(files.clientKey!, 'the client key');
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key))
    throw new TlsFileError(
      `the client key ${files.clientKey} is protected by a passphrase: give it unencrypted (openssl pkey -in KEY -out NEW, then chmod 600 NEW)`,
    );
  try {
    tls.createSecureContext({ cert, key });
  } catch (e) {
    // OpenSSL's words name the problem (no PEM, a key of another certificate) and never the key itself
    throw new TlsFileError(
      `the client certificate ${files.clientCert} and key ${files.clientKey} cannot be used: ${(e as Error).message}`,
    );
  }
}

/** The TLS settings of one client: a secure context built on the first https connection. */
export class TlsTrust {
  private ctx: SecureContext | undefined;

  constructor(
    readonly files: TlsFiles = {},
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly candidates: readonly string[] = SYSTEM_CA_FILES,
  ) {
    checkPair(files);
  }

  /** The context every https connection uses; throws TlsFileError when a file given cannot be used. */
  context(): SecureContext {
    if (this.ctx) return this.ctx;
    const extra = extraCertificates(this.files.caFile, this.env, this.candidates);
    const cert = this.files.clientCert ? readText(this.files.clientCert, 'the client certificate') : undefined;
    const key = this.files.clientKey ? readText(this.files.clientKey, 'the client key') : undefined;
    try {
      // Node's roots as Node holds them (a copy of its shared store, the certificates themselves shared), the
      // others added: measured, 1.0 MB less resident memory and 50-80 ms less than passing every root again as
      // `ca`, which parses them all anew. Node's internal addCACert, used by Node itself for `ca`; should a later
      // Node drop it, the whole list is passed instead.
      const ctx = tls.createSecureContext({ cert, key });
      const native = (ctx as { context?: { addCACert?: (pem: string) => void } }).context;
      if (typeof native?.addCACert === 'function') for (const pem of extra) native.addCACert(pem);
      this.ctx = native?.addCACert
        ? ctx
        : tls.createSecureContext({ ca: [...tls.rootCertificates, ...extra], cert, key });
    } catch (e) {
      throw new TlsFileError(`cannot use the TLS files given: ${(e as Error).message}`);
    }
    return this.ctx;
  }
}
