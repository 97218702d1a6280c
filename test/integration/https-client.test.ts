// The client over https with a private CA (test/helpers/tls-front.ts in front
// of `seafs serve`): the API, the fileserver's upload and download links and
// the streaming upload's own socket all trust the same CAs and show the same
// client certificate; a certificate refused fails at once, in words.
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { ApiError } from '../../src/client/errors.js';
import { openUploadStream } from '../../src/client/stream-upload.js';
import { TlsTrust } from '../../src/client/tls.js';
import { FAST, fetchFile, startWithLibrary } from '../helpers/client-setup.js';
import type { TestServer } from '../helpers/server.js';
import { makeTestPki, startTlsFront, type TestPki, type TlsFront } from '../helpers/tls-front.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let server: TestServer;
let admin: SeafileClient;
let repo: string;
let pki: TestPki;
let front: TlsFront;
let certFront: TlsFront;

beforeAll(async () => {
  ({ server, client: admin, repo } = await startWithLibrary('tls'));
  pki = await makeTestPki();
  front = await startTlsFront(server.url, pki);
  certFront = await startTlsFront(server.url, pki, { requireClientCert: true });
}, 60_000);

afterAll(async () => {
  await admin?.close().catch(() => {});
  await front?.close();
  await certFront?.close();
  await server?.stop();
  pki?.remove();
});

/** A login through `url`; these test machines' NODE_EXTRA_CA_CERTS and SSL_CERT_FILE name the system bundle, without the test's CA. */
function login(url: string, tls?: ConstructorParameters<typeof TlsTrust>[0]) {
  return SeafileClient.login({ baseUrl: url, ...FAST, tls }, server.adminEmail, server.adminPassword);
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ApiError);
  return e as ApiError;
}

/** Uploads through the client's links, and through a streaming upload (its own TLS socket); reads both back. */
async function roundTrip(c: SeafileClient, name: string, via: TlsFront): Promise<void> {
  const link = await c.uploadLink(repo, '/');
  expect(link.startsWith(`${via.url}/seafhttp/`)).toBe(true);
  const data = randomBytes(300_000);
  const up = await c.startUploadStream!(
    link,
    [
      ['parent_dir', '/'],
      ['replace', '1'],
    ],
    name,
  );
  await up.write(data);
  await up.finish();
  const dl = await c.downloadLink(repo, `/${name}`);
  expect(dl.url.startsWith(`${via.url}/seafhttp/`)).toBe(true);
  expect(sha(await fetchFile(c, repo, `/${name}`))).toBe(sha(data));
  // and the server's copy, read over plain http
  expect(sha(await fetchFile(admin, repo, `/${name}`))).toBe(sha(data));
}

describe('https with a private CA', () => {
  it('--ca-file trusts it for the API, the fileserver links and streaming uploads', async () => {
    const { client } = await login(front.url, { caFile: pki.caCert });
    try {
      await roundTrip(client, 'ca.bin', front);
    } finally {
      await client.close();
    }
  });

  it('an untrusted certificate fails once (no retry) as kind certificate, naming cause and fix', async () => {
    const before = front.connections;
    const e = await failure(login(front.url));
    expect(e.kind).toBe('certificate');
    expect(e.serverMessage).toBe(
      `the certificate of localhost:${front.port} is issued by a CA this machine does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE): ` +
        'install its CA in the system store (/usr/local/share/ca-certificates/, then update-ca-certificates) or pass --ca-file FILE',
    );
    expect(front.connections - before).toBe(1);
  });

  it('an expired certificate: named so', async () => {
    const expired = await startTlsFront(server.url, pki, { expired: true });
    try {
      // it expires the second after it was made
      const end = Date.parse(new X509Certificate(readFileSync(pki.expiredCert)).validTo);
      while (Date.now() <= end + 1000) await new Promise((r) => setTimeout(r, 100));
      const e = await failure(login(expired.url, { caFile: pki.caCert }));
      expect(e.kind).toBe('certificate');
      expect(e.serverMessage).toBe(
        `the certificate of localhost:${expired.port} has expired (CERT_HAS_EXPIRED): the server's administrator must renew it (or this machine's clock is wrong)`,
      );
    } finally {
      await expired.close();
    }
  });

  it("a streaming upload's socket refuses an untrusted certificate too", async () => {
    const link = (await admin.uploadLink(repo, '/')).replace(server.url, front.url);
    const e = await failure(openUploadStream(link, [['parent_dir', '/']], 'x.bin', { tls: new TlsTrust({}, {}, []) }));
    expect(e.kind).toBe('certificate');
    expect(e.serverMessage).toContain('(UNABLE_TO_VERIFY_LEAF_SIGNATURE)');
  });

  it('a client certificate: shown on every connection when given; its absence named', async () => {
    const e = await failure(login(certFront.url, { caFile: pki.caCert }));
    expect(e.kind).toBe('certificate');
    expect(e.serverMessage).toBe(
      `localhost:${certFront.port} asks for a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED): pass --client-cert FILE --client-key FILE`,
    );
    const { client } = await login(certFront.url, {
      caFile: pki.caCert,
      clientCert: pki.clientCert,
      clientKey: pki.clientKey,
    });
    try {
      await roundTrip(client, 'client-cert.bin', certFront);
    } finally {
      await client.close();
    }
  });
});
