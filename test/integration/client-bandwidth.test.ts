// The client's bandwidth limits against `seafs serve`: every download path
// (a ranged GET through undici, the bare-socket stream) and every upload path
// (a file upload, a multi-file POST over a bare socket, a streamed upload, raw
// blocks) keeps to its limit, parallel transfers share it, `off` throttles
// nothing, and a limit changed during a transfer applies at once. Durations are
// asserted from below only (a loaded machine is only ever slower): N bytes at
// R bytes/s take at least about N/R. Uploads are read back through an
// unlimited client.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenBucket } from '../../src/client/bandwidth.js';
import { SeafileClient } from '../../src/client/client.js';
import { rawUpload } from '../../src/client/raw-post.js';
import { openUploadStream } from '../../src/client/stream-upload.js';
import type { StreamSink } from '../../src/client/types.js';
import { remoteBytes } from '../helpers/api-check.js';
import { FAST, startWithLibrary } from '../helpers/client-setup.js';
import { sha1hex } from '../helpers/seafile-ids.js';
import type { TestServer } from '../helpers/server.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** the limit of the timed tests, and what they move: at least about 2 s each */
const RATE = 512 * KiB;
const SIZE = MiB;
/**
 * 0.8 of SIZE/RATE: below the least such a transfer can take (SIZE less the bucket's burst of 0.1 s and a last
 * chunk of at most 64 KiB that goes unwaited, at RATE: 1.78 s); a loaded machine only takes longer
 */
const AT_LEAST_MS = 0.8 * (SIZE / RATE) * 1000;

let server: TestServer;
let check: SeafileClient;
let repo: string;
let dir: string;
const content = randomBytes(SIZE);

beforeAll(async () => {
  ({ server, client: check, repo } = await startWithLibrary('Limited'));
  dir = mkdtempSync(join(tmpdir(), 'seafs-bw-'));
  const link = await check.uploadLink(repo, '/');
  writeFileSync(join(dir, 'source.bin'), content);
  await check.upload(link, '/', join(dir, 'source.bin'), 'source.bin', { replace: true, repoId: repo });
});

afterAll(async () => {
  await check?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** a client logged in with these limits (bytes/s; null: none) */
async function limited(up: number | null, down: number | null): Promise<SeafileClient> {
  const { client } = await SeafileClient.login(
    { baseUrl: server.url, ...FAST, bandwidth: { up, down } },
    server.adminEmail,
    server.adminPassword,
  );
  return client;
}

async function timed<T>(f: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await f();
  return { ms: performance.now() - t0, value };
}

/** the whole file through download() (undici) */
async function viaDownload(c: SeafileClient, size = SIZE): Promise<Buffer> {
  const link = await c.downloadLink(repo, '/source.bin', { reuse: true });
  const res = await c.download(link.url, size < SIZE ? { start: 0, end: size - 1 } : undefined, { repoId: repo });
  const parts: Buffer[] = [];
  for await (const chunk of res.body) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** the whole file through streamGet (the bare socket), with a reader that pauses now and then */
async function viaStream(c: SeafileClient, size = SIZE, idleMs?: number): Promise<Buffer> {
  const link = await c.downloadLink(repo, '/source.bin', { reuse: true });
  const out = Buffer.alloc(size);
  let at = 0;
  await new Promise<void>((resolve, reject) => {
    let reads = 0;
    const sink: StreamSink = {
      head: () => undefined,
      space: () => out.subarray(at, Math.min(size, at + 64 * KiB)),
      wrote: (n) => {
        at += n;
        // the caller's own backpressure works alongside the limit's
        if (++reads % 5 === 0) {
          ctl.pause();
          setTimeout(() => ctl.resume(), 5);
        }
      },
      end: (err) => (err ? reject(err as Error) : resolve()),
    };
    const ctl = c.streamGet!(link.url, 0, sink, { repoId: repo, end: size - 1, idleMs });
  });
  return out.subarray(0, at);
}

describe('download limits', () => {
  it('a ranged GET through the HTTP client takes at least about size/limit', async () => {
    const c = await limited(null, RATE);
    try {
      const { ms, value } = await timed(() => viaDownload(c));
      expect(value.equals(content)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
    } finally {
      await c.close();
    }
  });

  it('the bare-socket stream takes at least about size/limit, and its own pauses still work', async () => {
    const c = await limited(null, RATE);
    try {
      const { ms, value } = await timed(() => viaStream(c));
      expect(value.equals(content)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
    } finally {
      await c.close();
    }
  });

  it('parallel downloads share the one limit', async () => {
    const c = await limited(null, RATE);
    try {
      // two downloads of SIZE together: twice the time of one
      const { ms, value } = await timed(() => Promise.all([viaDownload(c), viaStream(c)]));
      expect(value.every((v) => v.equals(content))).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(2 * AT_LEAST_MS);
    } finally {
      await c.close();
    }
  });

  it('the upload limit does not hold downloads back, nor off anything (the transfer completes)', async () => {
    const c = await limited(16 * KiB, null);
    try {
      expect((await viaDownload(c)).equals(content)).toBe(true);
      expect((await viaStream(c)).equals(content)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('a wait for the limit is no silence of the server: pauses longer than the idle timeout do not fail a download', async () => {
    // 1 s of idle time for transfers; two of 64 KiB chunks share 64 KiB/s: each waits about 2 s between chunks
    const { client: c } = await SeafileClient.login(
      { baseUrl: server.url, ...FAST, transferTimeoutMs: 1000, bandwidth: { down: 64 * KiB } },
      server.adminEmail,
      server.adminPassword,
    );
    try {
      const part = 128 * KiB;
      const [a, b] = await Promise.all([viaDownload(c, part), viaStream(c, part, 1000)]);
      expect(a.equals(content.subarray(0, part))).toBe(true);
      expect(b.equals(content.subarray(0, part))).toBe(true);
    } finally {
      await c.close();
    }
  }, 60_000);

  it('a limit lifted during a transfer frees it at once', async () => {
    // 1 MiB at 8 KiB/s would take two minutes: the test's time limit fails it unless the change applies
    const c = await limited(null, 8 * KiB);
    try {
      const reading = viaDownload(c);
      setTimeout(() => c.setBandwidth({ up: null, down: null }), 300);
      expect((await reading).equals(content)).toBe(true);
      expect(c.bandwidth).toEqual({ up: null, down: null });
    } finally {
      await c.close();
    }
  }, 30_000);
});

describe('upload limits', () => {
  it('a file upload (and update) through the HTTP client takes at least about size/limit', async () => {
    const c = await limited(RATE, null);
    try {
      const file = join(dir, 'up.bin');
      writeFileSync(file, content);
      const up = await timed(async () =>
        c.upload(await c.uploadLink(repo, '/'), '/', file, 'up.bin', { replace: true, repoId: repo }),
      );
      expect(up.ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
      expect((await remoteBytes(check, repo, '/up.bin')).equals(content)).toBe(true);
      const changed = Buffer.from(content).reverse();
      writeFileSync(file, changed);
      const upd = await timed(async () => c.update(await c.updateLink(repo, '/'), '/up.bin', file, { repoId: repo }));
      expect(upd.ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
      expect((await remoteBytes(check, repo, '/up.bin')).equals(changed)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('a multi-file POST over the bare socket: two files of half the size take as long as one whole', async () => {
    const c = await limited(RATE, null);
    try {
      const a = content.subarray(0, SIZE / 2);
      const b = content.subarray(SIZE / 2);
      writeFileSync(join(dir, 'a.bin'), a);
      const { ms } = await timed(async () =>
        c.uploadBatch(
          await c.uploadLink(repo, '/'),
          '/',
          [
            { path: join(dir, 'a.bin'), name: 'batch-a.bin' },
            { path: join(dir, 'unused'), name: 'batch-b.bin', data: Buffer.from(b) },
          ],
          { replace: true, repoId: repo },
        ),
      );
      expect(ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
      expect((await remoteBytes(check, repo, '/batch-a.bin')).equals(a)).toBe(true);
      expect((await remoteBytes(check, repo, '/batch-b.bin')).equals(b)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('a streamed upload takes at least about size/limit', async () => {
    const c = await limited(RATE, null);
    try {
      const { ms } = await timed(async () => {
        const up = await c.startUploadStream!(
          await c.uploadLink(repo, '/'),
          [
            ['parent_dir', '/'],
            ['replace', '1'],
          ],
          'stream.bin',
        );
        // pieces of 64 KiB: the last one is not waited for (finish() sends at once), so it is the slack
        for (let i = 0; i < SIZE; i += 64 * KiB) await up.write(content.subarray(i, i + 64 * KiB));
        return up.finish([]);
      });
      expect(ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
      expect((await remoteBytes(check, repo, '/stream.bin')).equals(content)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('raw blocks take at least about size/limit', async () => {
    const c = await limited(RATE, null);
    try {
      // content of its own: the server already holds the blocks of what the tests above uploaded
      const fresh = randomBytes(SIZE);
      const blocks = [fresh.subarray(0, SIZE / 2), fresh.subarray(SIZE / 2)];
      const ids = blocks.map((b) => sha1hex(b));
      const link = await c.blocksLink!(repo, '/', ids);
      expect(link.missing.sort()).toEqual([...ids].sort());
      const { ms } = await timed(() =>
        c.uploadBlocks!(
          link.rawUrl,
          blocks.map((data, i) => ({ id: ids[i], length: data.length, offset: 0, data })),
          { repoId: repo },
        ),
      );
      expect(ms).toBeGreaterThanOrEqual(AT_LEAST_MS);
      await c.commitBlocks!(link.commitUrl, { parentDir: '/', name: 'blocks.bin', size: SIZE, ids, replace: true });
      expect((await remoteBytes(check, repo, '/blocks.bin')).equals(fresh)).toBe(true);
    } finally {
      await c.close();
    }
  });

  it('a wait for the limit is no silence: pauses longer than the idle timeout do not fail an upload', async () => {
    const part = content.subarray(0, 128 * KiB);
    writeFileSync(join(dir, 'part.bin'), part);
    // the HTTP client with 1 s of idle time: the closing boundary waits about 2 s for the file's 128 KiB at 64 KiB/s
    const { client: c } = await SeafileClient.login(
      { baseUrl: server.url, ...FAST, transferTimeoutMs: 1000, bandwidth: { up: 64 * KiB } },
      server.adminEmail,
      server.adminPassword,
    );
    try {
      await c.upload(await c.uploadLink(repo, '/'), '/', join(dir, 'part.bin'), 'idle-http.bin', {
        replace: true,
        repoId: repo,
      });
      expect((await remoteBytes(check, repo, '/idle-http.bin')).equals(part)).toBe(true);
    } finally {
      await c.close();
    }
    // the bare-socket POST and the streamed upload with 0.3 s of idle time, waiting about 1 s and 0.5 s
    const bucket = new TokenBucket(128 * KiB);
    await rawUpload(
      await check.uploadLink(repo, '/'),
      [
        ['parent_dir', '/'],
        ['replace', '1'],
      ],
      [{ path: join(dir, 'part.bin'), name: 'idle-raw.bin' }],
      300,
      bucket,
    );
    expect((await remoteBytes(check, repo, '/idle-raw.bin')).equals(part)).toBe(true);
    const up = await openUploadStream(
      await check.uploadLink(repo, '/'),
      [
        ['parent_dir', '/'],
        ['replace', '1'],
      ],
      'idle-stream.bin',
      { idleMs: 300, bucket },
    );
    for (let i = 0; i < part.length; i += 64 * KiB) await up.write(part.subarray(i, i + 64 * KiB));
    await up.finish([]);
    expect((await remoteBytes(check, repo, '/idle-stream.bin')).equals(part)).toBe(true);
  }, 60_000);

  it('off: uploads complete', async () => {
    const c = await limited(null, null);
    try {
      const file = join(dir, 'free.bin');
      writeFileSync(file, content);
      await c.upload(await c.uploadLink(repo, '/'), '/', file, 'free.bin', { replace: true, repoId: repo });
      expect((await remoteBytes(check, repo, '/free.bin')).equals(content)).toBe(true);
    } finally {
      await c.close();
    }
  });
});
