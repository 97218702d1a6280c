// Whom https connections trust (src/client/tls.ts) and how a failed handshake
// is told (src/client/tls-errors.ts, http.ts's transportError). The system
// store is read from a temporary bundle here: the test never writes /etc.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transportError } from '../../../src/client/http.js';
import {
  checkTlsFiles,
  pemCertificates,
  systemCaFile,
  TlsFileError,
  extraCertificates,
  TlsTrust,
} from '../../../src/client/tls.js';
import { tlsProblem } from '../../../src/client/tls-errors.js';
import { makeTestPki, type TestPki } from '../../helpers/tls-front.js';

let pki: TestPki;
let dir: string;

beforeAll(async () => {
  pki = await makeTestPki();
  dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-tls-unit-'));
}, 60_000);

afterAll(() => {
  pki?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const read = (f: string) => readFileSync(f, 'utf8');
const file = (name: string, text: string, mode = 0o644) => {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  chmodSync(f, mode);
  return f;
};
const body = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, '');

/** Connects to a TLS server made with the test's certificate and answers the verification error's code, or 'ok'. */
async function handshake(trust: TlsTrust, servername = 'localhost'): Promise<string> {
  const server = tls.createServer({ cert: read(pki.serverCert), key: read(pki.serverKey) }, (s) => s.end());
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    return await new Promise<string>((resolve) => {
      const s = tls.connect({
        host: '127.0.0.1',
        port: (server.address() as AddressInfo).port,
        servername,
        secureContext: trust.context(),
      });
      s.once('secureConnect', () => {
        s.destroy();
        resolve('ok');
      });
      s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    });
  } finally {
    server.close();
  }
}

describe('the system CA bundle', () => {
  it('is SSL_CERT_FILE when set, else the first bundle that exists on this system', () => {
    const a = file('a.pem', read(pki.caCert));
    const b = file('b.pem', read(pki.otherCaCert));
    const missing = path.join(dir, 'missing.pem');
    expect(systemCaFile({}, [missing, a, b])).toBe(a);
    expect(systemCaFile({}, [missing, b, a])).toBe(b);
    expect(systemCaFile({}, [missing])).toBeUndefined();
    expect(systemCaFile({ SSL_CERT_FILE: b }, [a])).toBe(b);
  });

  it("a CA in it is trusted besides Node's roots; without it the handshake fails as untrusted", async () => {
    const bundle = file('system.pem', `# a comment, as bundles have\n${read(pki.otherCaCert)}\n${read(pki.caCert)}`);
    expect(await handshake(new TlsTrust({}, {}, [bundle]))).toBe('ok');
    expect(await handshake(new TlsTrust({}, {}, [path.join(dir, 'none.pem')]))).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    // a name the certificate is not for
    expect(await handshake(new TlsTrust({}, {}, [bundle]), 'cloud.example.com')).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    // SSL_CERT_FILE, NODE_EXTRA_CA_CERTS and --ca-file each bring it too
    expect(await handshake(new TlsTrust({}, { SSL_CERT_FILE: pki.caCert }, []))).toBe('ok');
    expect(await handshake(new TlsTrust({}, { NODE_EXTRA_CA_CERTS: pki.caCert }, []))).toBe('ok');
    expect(await handshake(new TlsTrust({ caFile: pki.caCert }, {}, []))).toBe('ok');
    expect(await handshake(new TlsTrust({ caFile: pki.otherCaCert }, {}, []))).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
  });

  it("adds to Node's roots only what they lack, once, whatever the line wrapping of a bundle repeating them", () => {
    const root = tls.rootCertificates[0];
    const rewrapped = `-----BEGIN CERTIFICATE-----\n${body(root).replace(/(.{76})/g, '$1\n')}\n-----END CERTIFICATE-----\n`;
    const bundle = file('dup.pem', rewrapped + read(pki.caCert));
    const extra = extraCertificates(pki.caCert, { NODE_EXTRA_CA_CERTS: bundle }, [bundle]);
    expect(extra.map(body)).toEqual([body(read(pki.caCert))]);
  });

  it('reads only certificates from a PEM text', () => {
    expect(pemCertificates(read(pki.clientKey))).toEqual([]);
    expect(pemCertificates(`junk\n${read(pki.caCert)}junk\n${read(pki.otherCaCert)}`)).toHaveLength(2);
  });
});

describe('the files given', () => {
  it('a CA file that is missing or holds no certificate is an error naming it', () => {
    const missing = path.join(dir, 'nope.pem');
    expect(() => extraCertificates(missing, {}, [])).toThrow(
      new TlsFileError(`cannot read the CA file ${missing}: ENOENT`),
    );
    const empty = file('empty.pem', 'nothing here\n');
    expect(() => checkTlsFiles({ caFile: empty })).toThrow(`the CA file ${empty} holds no PEM certificate`);
  });

  it('a client certificate needs its key, and the other way round', () => {
    expect(() => checkTlsFiles({ clientCert: pki.clientCert })).toThrow(
      '--client-cert needs its key: --client-key FILE',
    );
    expect(() => new TlsTrust({ clientKey: pki.clientKey })).toThrow('--client-key needs --client-cert FILE');
  });

  it('a key other users can read earns a warning; a key of another certificate is refused without showing it', () => {
    expect(checkTlsFiles({ clientCert: pki.clientCert, clientKey: pki.clientKey })).toEqual([]);
    const open = file('open.key', read(pki.clientKey), 0o644);
    expect(checkTlsFiles({ clientCert: pki.clientCert, clientKey: open })).toEqual([
      `the client key ${open} can be read by other users (mode 644): chmod 600 it`,
    ]);
    const wrongKey = path.join(pki.dir, 'other-ca.key');
    let err: Error | undefined;
    try {
      checkTlsFiles({ clientCert: pki.clientCert, clientKey: wrongKey });
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(TlsFileError);
    expect(err!.message).toMatch(
      new RegExp(`^the client certificate ${pki.clientCert} and key ${wrongKey} cannot be used: .*key values mismatch`),
    );
    const keyLine = read(wrongKey).split('\n')[1];
    expect(err!.message).not.toContain(keyLine);
    const locked = path.join(dir, 'locked.key');
    execFileSync('openssl', ['pkey', '-in', pki.clientKey, '-aes256', '-passout', 'pass:secret', '-out', locked]);
    expect(() => checkTlsFiles({ clientCert: pki.clientCert, clientKey: locked })).toThrow(
      `the client key ${locked} is protected by a passphrase: give it unencrypted`,
    );
  });
});

describe('TLS failures in words', () => {
  it('names the cause and the fix of each verification error', () => {
    const h = 'cloud.example.com:443';
    const trustFix =
      'install its CA in the system store (/usr/local/share/ca-certificates/, then update-ca-certificates) or pass --ca-file FILE';
    expect(tlsProblem('UNABLE_TO_VERIFY_LEAF_SIGNATURE', h)).toBe(
      `the certificate of ${h} is issued by a CA this machine does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE): ${trustFix}`,
    );
    expect(tlsProblem('UNABLE_TO_GET_ISSUER_CERT_LOCALLY', h)).toContain('does not trust');
    for (const code of ['SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT'])
      expect(tlsProblem(code, h)).toBe(
        `the certificate of ${h} is self-signed or issued by a CA this machine does not trust (${code}): ${trustFix}`,
      );
    expect(tlsProblem('CERT_HAS_EXPIRED', h)).toBe(
      `the certificate of ${h} has expired (CERT_HAS_EXPIRED): the server's administrator must renew it (or this machine's clock is wrong)`,
    );
    expect(tlsProblem('CERT_NOT_YET_VALID', h)).toContain("check this machine's clock");
    expect(tlsProblem('ERR_TLS_CERT_ALTNAME_INVALID', h)).toBe(
      `the certificate of ${h} is for another host name (ERR_TLS_CERT_ALTNAME_INVALID): use the name the certificate is made for in the URL, or have it reissued for cloud.example.com`,
    );
    expect(tlsProblem('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', h)).toContain(
      'asks for a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED): pass --client-cert FILE --client-key FILE',
    );
    expect(tlsProblem('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', h)).toContain("refused this machine's client certificate");
    expect(tlsProblem('ERR_SSL_WRONG_VERSION_NUMBER', h)).toContain('does not answer https on this port');
    expect(tlsProblem('CERT_REVOKED', h)).toBe(
      `the certificate of ${h} is revoked (CERT_REVOKED): the server's administrator must replace it`,
    );
    expect(tlsProblem('ERR_SSL_TLSV1_ALERT_SOMETHING_NEW', h)).toBe(
      `the TLS connection to ${h} failed (ERR_SSL_TLSV1_ALERT_SOMETHING_NEW)`,
    );
    for (const code of [
      undefined,
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'UND_ERR_SOCKET',
      'ERR_TLS_HANDSHAKE_TIMEOUT',
      'ERR_SSL_DECRYPTION_FAILED_OR_BAD_RECORD_MAC',
    ])
      expect(tlsProblem(code, h)).toBeNull();
  });

  it('transportError makes them kind certificate, also when the alert is the cause of a socket error', () => {
    const expired = Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' });
    const e = transportError(expired, 'login', 'cloud.example.com');
    expect(e.kind).toBe('certificate');
    expect(e.message).toBe(
      "login failed: the certificate of cloud.example.com has expired (CERT_HAS_EXPIRED): the server's administrator must renew it (or this machine's clock is wrong)",
    );
    const alert = Object.assign(new Error('tlsv13 alert certificate required'), {
      code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED',
    });
    const closed = Object.assign(new Error('other side closed', { cause: alert }), { code: 'UND_ERR_SOCKET' });
    expect(transportError(closed, 'ping', 'h:1').kind).toBe('certificate');
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(transportError(refused, 'ping', 'h:1').kind).toBe('network');
    expect(transportError(new TlsFileError('cannot read the CA file /x: ENOENT'), 'ping').serverMessage).toBe(
      'cannot read the CA file /x: ENOENT',
    );
  });
});
