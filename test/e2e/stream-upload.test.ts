// Large files uploaded while they are written (one chunked POST fed from the
// temp file), on a real mount: the server holds the exact bytes (sha256
// through the API) after exactly one upload request; a write that seeks back
// and an ftruncate during the stream abort it and the file is uploaded whole
// after close; kill -9 mid-stream loses nothing (the journal brings the file
// back on the next mount) and the aborted request leaves nothing behind.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { remoteNames, remoteSha, sha256, sha256File } from '../helpers/api-check.js';
import { cleanupMounts, mountLibrary, q, scratchDir, sh, sleep } from '../helpers/mount.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { writeRandom } from '../helpers/e2e-fixture.js';

const MiB = 1024 * 1024;
/** these tests are about the whole-file stream: uploads by blocks are off (e2e/blocks.test.ts has those) */
const WHOLE = { env: { SEAFS_BLOCK_UPLOADS: 'off' } };
let server: TestServer;
let api: SeafileClient;
let repo: string;
let src: string;

beforeAll(async () => {
  // --verbose: one log line per request, to count the upload POSTs
  server = await startTestServer({ extraArgs: ['--verbose'] });
  ({ client: api } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword));
  repo = (await api.createLibrary('Streams')).repo_id;
  src = mkdtempSync(path.join(os.tmpdir(), 'seafs-e2e-stream-'));
});

afterAll(async () => {
  try {
    await cleanupMounts();
  } finally {
    await api?.close().catch(() => {});
    await server?.stop();
    if (src) rmSync(src, { recursive: true, force: true });
  }
});

/** upload/update POSTs the server has answered so far */
const uploadPosts = () =>
  server
    .log()
    .split('\n')
    .filter((l) => /^POST \/seafhttp\/(upload|update)-api\//.test(l));

/**
 * bytes the server is receiving right now: its multipart temp files, one per 8 MiB block of an upload
 * (serve stores files as blocks), summed (one upload runs at a time here)
 */
function receiving(): number {
  const dir = path.join(server.dataDir, 'tmp');
  let sum = 0;
  for (const n of readdirSync(dir)) {
    try {
      sum += statSync(path.join(dir, n)).size;
    } catch {
      // finished meanwhile
    }
  }
  return sum;
}

async function until(what: string, cond: () => boolean, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`never happened within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

/** writes `data` at `pos` in 1 MiB pieces through an open file handle */
async function writeAt(fh: Awaited<ReturnType<typeof open>>, data: Buffer, pos: number): Promise<void> {
  for (let off = 0; off < data.length; off += MiB)
    await fh.write(data, off, Math.min(MiB, data.length - off), pos + off);
}

describe('uploads that run while the file is written', () => {
  it('dd of 160 MiB into a new file: one upload request, exact bytes, and seafs unmount right after waits for it', async () => {
    const f = path.join(src, 'big.bin');
    await writeRandom(f, 160 * MiB);
    const m = await mountLibrary(server, { ...WHOLE, library: 'Streams' });
    const before = uploadPosts().length;
    await sh(`dd if=${q(f)} of=${q(m.mnt)}/big.bin bs=1M status=none`);
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect(await remoteSha(api, repo, '/big.bin')).toEqual({ sha: await sha256File(f), size: 160 * MiB });
    const posts = uploadPosts().slice(before);
    expect(posts, posts.join('\n')).toHaveLength(1);
    expect(posts[0]).toMatch(/^POST \/seafhttp\/upload-api\/\S+ 200 /);
    expect(m.output()).toMatch(/\/big\.bin: uploaded while it was written \(167772160 bytes/);
  });

  it('dd over an existing file: no download of the old content, one streamed request to the update link', async () => {
    const f = path.join(src, 'over.bin');
    await writeRandom(f, 40 * MiB);
    const m = await mountLibrary(server, { ...WHOLE, library: 'Streams' });
    await sh(`dd if=${q(f)} of=${q(m.mnt)}/over.bin bs=1M status=none`);
    expect((await m.unmount()).code).toBe(0);
    await writeRandom(f, 48 * MiB);
    const m2 = await mountLibrary(server, { ...WHOLE, library: 'Streams' });
    const before = server.log().split('\n').length;
    await sh(`dd if=${q(f)} of=${q(m2.mnt)}/over.bin bs=1M status=none`);
    const un = await m2.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    const lines = server
      .log()
      .split('\n')
      .slice(before - 1);
    expect(await remoteSha(api, repo, '/over.bin')).toEqual({ sha: await sha256File(f), size: 48 * MiB });
    expect(
      lines.filter((l) => l.startsWith('GET /seafhttp/files/')),
      'the old content was downloaded',
    ).toEqual([]);
    const posts = lines.filter((l) => /^POST \/seafhttp\/(upload|update)-api\//.test(l));
    expect(posts, posts.join('\n')).toHaveLength(1);
    expect(posts[0]).toMatch(/^POST \/seafhttp\/update-api\/\S+ 200 /);
    expect(m2.output()).toMatch(/\/over\.bin: uploaded while it was written/);
  });

  it('a write that seeks back below what was streamed: the file is uploaded whole after close, exact bytes', async () => {
    const m = await mountLibrary(server, { ...WHOLE, library: 'Streams' });
    {
      const data = randomBytes(64 * MiB);
      const fh = await open(path.join(m.mnt, 'seek.bin'), 'w');
      try {
        await writeAt(fh, data.subarray(0, 48 * MiB), 0);
        await until('the stream reached the server', () => receiving() >= 12 * MiB);
        const patch = randomBytes(MiB);
        patch.copy(data, 5 * MiB);
        await writeAt(fh, patch, 5 * MiB);
        await writeAt(fh, data.subarray(48 * MiB), 48 * MiB);
      } finally {
        await fh.close();
      }
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      expect(await remoteSha(api, repo, '/seek.bin')).toEqual({ sha: sha256(data), size: data.length });
      expect(m.output()).toMatch(/streaming upload of \/seek\.bin stopped \(write below the streamed offset\)/);
      expect(await remoteNames(api, repo, '/')).not.toContain('seek (1).bin');
    }
  });

  it('an ftruncate during the stream: the truncated and rewritten content reaches the server', async () => {
    const m = await mountLibrary(server, { ...WHOLE, library: 'Streams' });
    {
      const data = randomBytes(48 * MiB);
      const fh = await open(path.join(m.mnt, 'trunc.bin'), 'w');
      let expected: Buffer;
      try {
        await writeAt(fh, data.subarray(0, 40 * MiB), 0);
        await until('the stream reached the server', () => receiving() >= 12 * MiB);
        await fh.truncate(20 * MiB + 3);
        const tail = data.subarray(40 * MiB);
        await writeAt(fh, tail, 20 * MiB + 3);
        expected = Buffer.concat([data.subarray(0, 20 * MiB + 3), tail]);
      } finally {
        await fh.close();
      }
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      expect(await remoteSha(api, repo, '/trunc.bin')).toEqual({ sha: sha256(expected), size: expected.length });
      expect(m.output()).toMatch(/streaming upload of \/trunc\.bin stopped \(truncate\)/);
    }
  });

  it('kill -9 of the mount mid-stream, then mount again: the file comes back from the journal and is uploaded whole', async () => {
    const cacheDir = path.join(scratchDir(), 'stream-crash-cache');
    const mnt = path.join(scratchDir(), 'stream-crash-mnt');
    await sh(`mkdir -p ${q(cacheDir)} ${q(mnt)}`);
    const m = await mountLibrary(server, { ...WHOLE, library: 'Streams', mountpoint: mnt, cacheDir });
    const data = randomBytes(56 * MiB);
    const fh = await open(path.join(mnt, 'crash.bin'), 'w');
    try {
      await writeAt(fh, data, 0);
      await until('the stream reached the server', () => receiving() >= 8 * MiB);
      await m.kill9();
    } finally {
      await fh.close().catch(() => {}); // the mount is dead: ENOTCONN
    }
    // the aborted request left no file and no partial upload on the server
    await until('the server dropped the partial upload', () => receiving() === 0);
    expect(await remoteNames(api, repo, '/')).not.toContain('crash.bin');

    const before = uploadPosts().length;
    const again = await mountLibrary(server, { ...WHOLE, library: 'Streams', mountpoint: mnt, cacheDir });
    const un = await again.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect(again.output()).toMatch(/recovering \/crash\.bin \(58720256 bytes\) from the journal/);
    expect(await remoteSha(api, repo, '/crash.bin')).toEqual({ sha: sha256(data), size: data.length });
    expect(uploadPosts().slice(before)).toHaveLength(1);
    expect((await remoteNames(api, repo, '/'))!.filter((n) => n.startsWith('crash'))).toEqual(['crash.bin']);
  });
});
