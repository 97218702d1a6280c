// Chunked streaming uploads (src/client/stream-upload.ts) against `seafs serve`:
// the body ends correctly through upload and update links, an aborted stream
// leaves no file, no temp file and no new object, an upload crossing the
// quota is answered 443 without harm to the store, and a server that refuses
// chunked bodies is recognised as such.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import { ApiError } from '../../src/client/errors.js';
import { refusesChunked } from '../../src/client/errors.js';
import { openUploadStream, streamUploadFor } from '../../src/client/stream-upload.js';
import { remoteEntries } from '../helpers/api-check.js';
import type { TestServer } from '../helpers/server.js';
import { fetchFile, newUser, startWithLibrary } from '../helpers/client-setup.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let server: TestServer;
let admin: SeafileClient;
let repo: string;

beforeAll(async () => {
  ({ server, client: admin, repo } = await startWithLibrary('streams', { extraArgs: ['--verbose'] }));
});

afterAll(async () => {
  await admin?.close().catch(() => {});
  await server?.stop();
});

/** every file under `dir`, recursively (object store, temp dir) */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never happened: ${what}`);
}

const uploadPosts = () =>
  server
    .log()
    .split('\n')
    .filter((l) => /^POST \/seafhttp\/(upload|update)-api\//.test(l));

describe('chunked streaming upload', () => {
  it('sends a body of unknown length in pieces; the server stores the exact bytes', async () => {
    const data = randomBytes(5 * MiB + 777);
    const before = uploadPosts().length;
    const start = streamUploadFor();
    const up = await start(
      await admin.uploadLink(repo, '/'),
      [
        ['parent_dir', '/'],
        ['replace', '1'],
      ],
      'streamed.bin',
    );
    // uneven pieces, as the writes land
    for (let off = 0; off < data.length;) {
      const n = Math.min(data.length - off, 300_000 + (off % 7) * 1000);
      await up.write(data.subarray(off, off + n));
      off += n;
    }
    expect(up.sent).toBe(data.length);
    const id = await up.finish([['last_modify', '2020-01-02T03:04:05.000Z']]);
    expect(id).toMatch(/^[0-9a-f]{40}$/);
    expect(sha(await fetchFile(admin, repo, '/streamed.bin'))).toBe(sha(data));
    const entry = (await remoteEntries(admin, repo, '/')).find((e) => e.name === 'streamed.bin')!;
    expect(entry.size).toBe(data.length);
    // the trailing field after the file part was taken
    expect(entry.mtime).toBe(Date.parse('2020-01-02T03:04:05.000Z') / 1000);
    expect(uploadPosts().slice(before)).toHaveLength(1);
    expect(uploadPosts().at(-1)).toMatch(/ 200 /);
  });

  it('streams through an update link onto an existing file', async () => {
    const first = randomBytes(MiB);
    const up1 = await openUploadStream(await admin.uploadLink(repo, '/'), [['parent_dir', '/']], 'upd.bin');
    await up1.write(first);
    await up1.finish();
    const data = randomBytes(3 * MiB + 5);
    const up = await streamUploadFor()(await admin.updateLink(repo, '/'), [['target_file', '/upd.bin']], 'upd.bin');
    for (let off = 0; off < data.length; off += MiB) await up.write(data.subarray(off, off + MiB));
    await up.finish();
    expect(sha(await fetchFile(admin, repo, '/upd.bin'))).toBe(sha(data));
    expect((await remoteEntries(admin, repo, '/')).filter((e) => e.name.startsWith('upd')).map((e) => e.name)).toEqual([
      'upd.bin',
    ]);
  });

  it('an aborted stream leaves no file, no temp file and no new object', async () => {
    const objectsBefore = filesUnder(path.join(server.dataDir, 'objects')).sort();
    const up = await openUploadStream(await admin.uploadLink(repo, '/'), [['parent_dir', '/']], 'aborted.bin');
    for (let i = 0; i < 4; i++) await up.write(randomBytes(MiB));
    // the server is holding a partial upload in its temp dir
    await until('the server received part of the body', () => filesUnder(path.join(server.dataDir, 'tmp')).length > 0);
    up.abort();
    await until('the partial upload was dropped', () => filesUnder(path.join(server.dataDir, 'tmp')).length === 0);
    expect((await remoteEntries(admin, repo, '/')).map((e) => e.name)).not.toContain('aborted.bin');
    expect(filesUnder(path.join(server.dataDir, 'objects')).sort()).toEqual(objectsBefore);
    // the server still takes uploads
    const ok = await openUploadStream(await admin.uploadLink(repo, '/'), [['parent_dir', '/']], 'after-abort.bin');
    await ok.write(Buffer.from('still fine'));
    await ok.finish();
    expect((await fetchFile(admin, repo, '/after-abort.bin')).toString()).toBe('still fine');
  });

  it('a stream crossing the quota is answered 443; nothing is stored and smaller uploads still work', async () => {
    const user = await newUser(server, admin, 'streamquota@seafs.test', { storage: 2 }); // 2 MB
    try {
      const r = (await user.createLibrary('q')).repo_id;
      const up = await openUploadStream(await user.uploadLink(r, '/'), [['parent_dir', '/']], 'over.bin');
      let err: unknown = null;
      try {
        for (let i = 0; i < 64; i++) await up.write(randomBytes(256 * 1024)); // up to 16 MiB
        await up.finish();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect({ kind: (err as ApiError).kind, status: (err as ApiError).status }).toEqual({
        kind: 'quota',
        status: 443,
      });
      expect(refusesChunked(err)).toBe(false);
      expect(await remoteEntries(user, r, '/')).toEqual([]);
      await until('no temp file left', () => filesUnder(path.join(server.dataDir, 'tmp')).length === 0);
      const small = randomBytes(100_000);
      const up2 = await streamUploadFor()(await user.uploadLink(r, '/'), [['parent_dir', '/']], 'small.bin');
      await up2.write(small);
      await up2.finish();
      expect(sha(await fetchFile(user, r, '/small.bin'))).toBe(sha(small));
    } finally {
      await user.close().catch(() => {});
    }
  });

  it('a server refusing chunked bodies (411) is recognised', async () => {
    // a stand-in for a proxy without chunked support: it answers 411 to any request
    const srv = net.createServer((s) => {
      s.once('data', () => s.end('HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'));
      s.on('error', () => {});
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (srv.address() as net.AddressInfo).port;
      let err: unknown = null;
      try {
        const up = await openUploadStream(`http://127.0.0.1:${port}/seafhttp/upload-api/x`, [['parent_dir', '/']], 'f');
        for (let i = 0; i < 20; i++) await up.write(randomBytes(64 * 1024));
        await up.finish();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(411);
      expect(refusesChunked(err)).toBe(true);
    } finally {
      srv.close();
    }
  });
});
