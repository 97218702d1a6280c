// An https front for `seafs serve`, as nginx with a company's certificate
// would be: a private CA and the certificates it signs, made with the openssl
// CLI in a temp folder, and a TLS reverse proxy in the test process that
// forwards every request to the plain-http server with X-Forwarded-Proto:
// https and the client's Host, so the server's upload and download links
// point at the front too. It can ask for a client certificate. The proxy runs
// in the test's own process: touch a mount behind it with async calls only
// (fs/promises, sh()), never writeFileSync and the like, which would block the
// proxy the mount is waiting for.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

async function openssl(args: string[], cwd: string): Promise<void> {
  await execFileP('openssl', args, { cwd, timeout: 30_000 });
}

export interface TestPki {
  dir: string;
  /** a CA's certificate (PEM file) */
  caCert: string;
  /** the front's certificate (for DNS:localhost only) and key, signed by the CA */
  serverCert: string;
  serverKey: string;
  /** a certificate for the same name and key, signed by the CA, valid for no time at all (expired a second later) */
  expiredCert: string;
  /** a client certificate and key signed by the CA */
  clientCert: string;
  clientKey: string;
  /** another CA, which signed nothing here: trusting it does not help */
  otherCaCert: string;
  remove(): void;
}

/** An EC key and a certificate signed by `ca` (or self-signed for a CA), with these extensions. */
async function issue(
  dir: string,
  name: string,
  subject: string,
  ext: string[],
  ca?: { cert: string; key: string },
): Promise<void> {
  const extFile = path.join(dir, `${name}.ext`);
  writeFileSync(extFile, ext.join('\n') + '\n');
  const key = `${name}.key`;
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key], dir);
  if (!ca) {
    // `req -x509` takes its extensions from a config section
    writeFileSync(extFile, `[v3]\n${ext.join('\n')}\n[req]\ndistinguished_name=dn\n[dn]\n`);
    await openssl(
      ['req', '-x509', '-new', '-key', key, '-out', `${name}.crt`, '-days', '3', '-subj', subject].concat([
        '-config',
        extFile,
        '-extensions',
        'v3',
      ]),
      dir,
    );
    return;
  }
  await openssl(['req', '-new', '-key', key, '-out', `${name}.csr`, '-subj', subject], dir);
  await openssl(
    ['x509', '-req', '-in', `${name}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'].concat([
      '-out',
      `${name}.crt`,
      '-days',
      '3',
      '-extfile',
      extFile,
    ]),
    dir,
  );
}

/** Makes a CA, a server certificate for localhost, a client certificate, and an unrelated CA. */
export async function makeTestPki(): Promise<TestPki> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-pki-'));
  const caExt = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign'];
  await issue(dir, 'ca', '/CN=seafs test company CA', caExt);
  await issue(dir, 'other-ca', '/CN=seafs test other CA', caExt);
  const ca = { cert: path.join(dir, 'ca.crt'), key: path.join(dir, 'ca.key') };
  await issue(
    dir,
    'server',
    '/CN=localhost',
    ['basicConstraints=CA:FALSE', 'subjectAltName=DNS:localhost', 'extendedKeyUsage=serverAuth'],
    ca,
  );
  await issue(dir, 'client', '/CN=seafs test client', ['basicConstraints=CA:FALSE', 'extendedKeyUsage=clientAuth'], ca);
  for (const k of ['ca', 'other-ca', 'server', 'client']) chmodSync(path.join(dir, `${k}.key`), 0o600);
  await openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'].concat([
      '-out',
      'expired.crt',
      '-days',
      '0',
      '-extfile',
      'server.ext',
    ]),
    dir,
  );
  return {
    dir,
    caCert: ca.cert,
    serverCert: path.join(dir, 'server.crt'),
    serverKey: path.join(dir, 'server.key'),
    expiredCert: path.join(dir, 'expired.crt'),
    clientCert: path.join(dir, 'client.crt'),
    clientKey: path.join(dir, 'client.key'),
    otherCaCert: path.join(dir, 'other-ca.crt'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface TlsFront {
  /** https://localhost:PORT (the name the certificate is for) */
  url: string;
  port: number;
  /** requests forwarded so far */
  requests: number;
  /** TCP connections accepted so far (each attempt of a client that fails the handshake is one) */
  connections: number;
  close(): Promise<void>;
}

/**
 * An https reverse proxy on 127.0.0.1 to `target` (http://host:port); `requireClientCert`: only clients the
 * CA signed; `expired`: it shows the expired certificate.
 */
export async function startTlsFront(
  target: string,
  pki: TestPki,
  opts: { requireClientCert?: boolean; expired?: boolean } = {},
): Promise<TlsFront> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  const front = {
    url: '',
    port: 0,
    requests: 0,
    connections: 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = https.createServer(
    {
      cert: readFileSync(opts.expired ? pki.expiredCert : pki.serverCert),
      key: readFileSync(pki.serverKey),
      ...(opts.requireClientCert ? { requestCert: true, rejectUnauthorized: true, ca: readFileSync(pki.caCert) } : {}),
    },
    (req, res) => {
      front.requests++;
      const up = http.request(
        {
          host: to.hostname,
          port: to.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, 'x-forwarded-proto': 'https' },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.on('error', () => up.destroy());
      req.pipe(up);
    },
  );
  server.on('connection', (s: Socket) => {
    front.connections++;
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  // handshake failures (an untrusting client) are the tests' point, not errors of the front
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  front.port = (server.address() as AddressInfo).port;
  front.url = `https://localhost:${front.port}`;
  return front;
}

/**
 * The environment of a seafs process as on a user's machine: these test machines point
 * NODE_EXTRA_CA_CERTS and SSL_CERT_FILE at the system bundle for every process, which a
 * user's machine does not; `extra` is added after (set SSL_CERT_FILE there to test it).
 */
export function userTlsEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { NODE_EXTRA_CA_CERTS: undefined, SSL_CERT_FILE: undefined, SSL_CERT_DIR: undefined, ...extra };
}
