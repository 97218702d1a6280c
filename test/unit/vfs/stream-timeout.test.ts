// The sequential stream's idle limit is the client's call timeout (the mount's
// --timeout), not a limit of its own: a stream that stalls or is reset midway
// through a file is picked up on a new connection from the chunk where it
// stopped, and a server that stays silent ends the read with an error after a
// few timeouts, never a hang.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import type { SeafileApi } from '../../../src/client/types.js';
import { errnoOf } from '../../../src/vfs/errors.js';
import { RemoteReader, type ReadPattern } from '../../../src/vfs/read/reader.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const data = Buffer.alloc(3 * MiB + 123);
for (let i = 0; i < data.length; i++) data[i] = (i * 131 + (i >> 10)) & 0xff;

/** the first answer sends this much of the body, then fails as `first` says */
const CUT = 1 * MiB;

type Mode = 'stall-once' | 'reset-once' | 'stall-always';

async function startServer(mode: Mode) {
  const starts: number[] = [];
  const held = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const start = Number(/bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1] ?? 0);
    const m = /bytes=\d+-(\d+)/.exec(req.headers.range ?? '');
    const end = m ? Math.min(Number(m[1]), data.length - 1) : data.length - 1;
    starts.push(start);
    const n = starts.length;
    const hold = () => held.add(req.socket); // never answered again, never closed
    if (mode === 'stall-always' && n > 1) return hold();
    res.writeHead(206, { 'Content-Length': end - start + 1, 'Content-Range': `bytes ${start}-${end}/${data.length}` });
    if (n > 1) return res.end(data.subarray(start, end + 1));
    res.write(data.subarray(start, start + CUT), () => {
      if (mode === 'reset-once') req.socket.resetAndDestroy();
      else hold();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/f.bin`;
  return {
    url,
    starts,
    close: () =>
      new Promise<void>((r) => {
        for (const s of held) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('the sequential stream under a stalling or resetting server', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => {});
  });

  async function setup(mode: Mode, timeoutMs: number) {
    const srv = await startServer(mode);
    const client = new SeafileClient({ baseUrl: srv.url, timeoutMs, maxRetries: 2 });
    cleanups.push(async () => {
      await client.close();
      await srv.close();
    });
    const api = {
      downloadLink: async () => ({ url: srv.url, oid: null }),
      download: (url: string, range?: { start: number; end?: number }) => client.download(url, range),
      streamGet: client.streamGet.bind(client),
    } as unknown as SeafileApi;
    // no stallMs: the stream's idle limit must come from the client
    const reader = new RemoteReader(api, { chunkSize: 64 * KiB, streamMinBytes: 0 });
    const f = { repo: 'r', path: '/f.bin', size: data.length, version: 'v1' };
    return { srv, reader, f };
  }

  /** reads the file front to back in 128 KiB reads, two at a time (as the kernel does) */
  async function readAll(reader: RemoteReader, f: { repo: string; path: string; size: number; version: string }) {
    const pat: ReadPattern = { next: 0, window: 0 };
    const out = Buffer.alloc(f.size);
    try {
      for (let off = 0; off < f.size; off += 256 * KiB) {
        await Promise.all(
          [off, off + 128 * KiB]
            .filter((o) => o < f.size)
            .map(async (o) => {
              const n = Math.min(128 * KiB, f.size - o);
              const t = Buffer.alloc(n);
              expect(await reader.read(f, t, n, o, pat)).toBe(n);
              t.copy(out, o);
            }),
        );
      }
    } finally {
      reader.closePattern(f, pat);
    }
    return out;
  }

  for (const mode of ['stall-once', 'reset-once'] as const) {
    it(`a stream that ${mode === 'stall-once' ? 'stalls' : 'is reset'} after 1 MiB is resumed on a new connection from where it stopped, within the client's timeout`, async () => {
      const { srv, reader, f } = await setup(mode, 500);
      const t0 = Date.now();
      const got = await readAll(reader, f);
      const took = Date.now() - t0;
      expect(got.equals(data)).toBe(true);
      // the second request starts at a chunk boundary at or before the cut, not at 0 (and not past it)
      expect(srv.starts.length).toBeGreaterThan(1);
      expect(srv.starts[0]).toBe(0);
      expect(srv.starts[1]).toBeGreaterThan(0);
      expect(srv.starts[1]).toBeLessThanOrEqual(CUT);
      expect(srv.starts[1] % (64 * KiB)).toBe(0);
      // generous bound: a stall waits out the 0.5 s timeout, not the old 30 s stream limit
      expect(took).toBeLessThan(10_000);
    });
  }

  it('a server that goes silent mid-file fails the waiting read with a timeout error after a few attempts, not a hang', async () => {
    const { srv, reader, f } = await setup('stall-always', 500);
    const t0 = Date.now();
    const err = await readAll(reader, f).then(
      () => null,
      (e: unknown) => e,
    );
    const took = Date.now() - t0;
    expect(err).not.toBeNull();
    expect(['ETIMEDOUT', 'EIO']).toContain(errnoOf(err));
    // the stream, then a ranged GET or two on new connections: a handful of requests, a few timeouts
    expect(srv.starts.length).toBeGreaterThan(1);
    console.log(
      `silent server: ${srv.starts.length} requests (from ${srv.starts.join(', ')}), read failed after ${took} ms`,
    );
    expect(srv.starts.length).toBeLessThanOrEqual(12);
    expect(took).toBeLessThan(15_000);
  });
});
