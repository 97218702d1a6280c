import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, StreamUnsupported } from '../../../src/client/errors.js';
import { rawGet } from '../../../src/client/raw-get.js';
import { RemoteReader } from '../../../src/vfs/read/reader.js';
import { FakeApi } from '../../helpers/fake-api.js';

const data = Buffer.alloc(3 * 1024 * 1024 + 99);
for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 12)) & 0xff;

describe('raw ranged GET over a bare socket', () => {
  let server: http.Server;
  let base = '';
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/forbidden') return res.writeHead(403).end('Bad access token');
      const st = /^\/status\/(\d+)$/.exec(req.url ?? '');
      if (st) return res.writeHead(Number(st[1])).end('refused');
      if (req.url === '/chunked') {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        res.write('abc');
        return res.end('def');
      }
      if (req.url === '/whole') return res.writeHead(200, { 'Content-Length': data.length }).end(data);
      const m = /bytes=(\d+)-/.exec(req.headers.range ?? '');
      const start = m ? Number(m[1]) : 0;
      res.writeHead(206, {
        'Content-Length': data.length - start,
        'Content-Range': `bytes ${start}-${data.length - 1}/${data.length}`,
      });
      res.end(data.subarray(start));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const fetchAll = (url: string, start: number, pauseEvery = 0) =>
    new Promise<{ status: number; first: number; body: Buffer }>((resolve, reject) => {
      const parts: Buffer[] = [];
      let status = 0;
      let first = 0;
      let n = 0;
      // the body is read straight into buffers of odd sizes handed out by space()
      let cur = Buffer.alloc(0);
      let k = 1;
      const s = rawGet(url, start, {
        head: (st, f) => {
          status = st;
          first = f;
        },
        space: () => (cur = Buffer.alloc(1 + ((k++ * 7919) % 70_000))),
        wrote: (w) => {
          parts.push(cur.subarray(0, w));
          if (pauseEvery && ++n % pauseEvery === 0) {
            s.pause();
            setTimeout(() => s.resume(), 5);
          }
        },
        end: (err) => (err ? reject(err) : resolve({ status, first, body: Buffer.concat(parts) })),
      });
    });

  it('returns the exact bytes from an offset, also when paused and resumed', async () => {
    const r = await fetchAll(`${base}/f`, 1_000_003, 3);
    expect(r.status).toBe(206);
    expect(r.first).toBe(1_000_003);
    expect(r.body.equals(data.subarray(1_000_003))).toBe(true);
  });

  it('passes a 200 with the whole file through (the caller skips)', async () => {
    const r = await fetchAll(`${base}/whole`, 5);
    expect(r.status).toBe(200);
    expect(r.body.equals(data)).toBe(true);
  });

  it('reports refusals as ApiError and what it cannot read as StreamUnsupported', async () => {
    await expect(fetchAll(`${base}/forbidden`, 0)).rejects.toBeInstanceOf(ApiError);
    await expect(fetchAll(`${base}/forbidden`, 0)).rejects.toMatchObject({ status: 403 });
    await expect(fetchAll(`${base}/chunked`, 0)).rejects.toBeInstanceOf(StreamUnsupported);
    expect(() =>
      rawGet('https://example.invalid/x', 0, { head() {}, space: () => Buffer.alloc(1), wrote() {}, end() {} }),
    ).toThrow(StreamUnsupported);
  });

  it('names refusals the way the API client does for a download (status-map)', async () => {
    for (const [status, kind] of [
      [401, 'unauthorized'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [429, 'throttled'],
      [503, 'server'],
    ] as const) {
      await expect(fetchAll(`${base}/status/${status}`, 0)).rejects.toMatchObject({ status, kind });
    }
  });

  it('feeds a sequential reader through the reader stream', async () => {
    const api = new FakeApi();
    // the download link points at the real HTTP server above
    api.downloadLink = async () => ({ url: `${base}/f`, oid: null });
    let downloads = 0;
    api.download = async (url, range) => {
      downloads++;
      const res = await fetch(url, { headers: { Range: `bytes=${range?.start ?? 0}-${range?.end ?? ''}` } });
      const { Readable } = await import('node:stream');
      return {
        status: res.status,
        start: range?.start ?? 0,
        totalSize: data.length,
        etag: null,
        body: Readable.from(Buffer.from(await res.arrayBuffer())),
      };
    };
    // the API's streaming GET is the bare-socket one
    let streamed = 0;
    api.streamGet = (url, start, sink, opts) => {
      streamed++;
      return rawGet(url, start, sink, opts?.idleMs, opts?.end);
    };
    const reader = new RemoteReader(api, {
      streamMinBytes: 1024 * 1024,
      memoryBytes: 4 * 1024 * 1024,
      maxWindow: 1024 * 1024,
    });
    const f = { repo: 'r', path: '/f', size: data.length, version: 'v1' };
    const pat = { next: 0, window: 0 };
    const out = Buffer.alloc(data.length);
    for (let off = 0; off < data.length; off += 128 * 1024) {
      const n = await reader.read(f, out.subarray(off), Math.min(128 * 1024, data.length - off), off, pat);
      expect(n).toBe(Math.min(128 * 1024, data.length - off));
    }
    expect(out.equals(data)).toBe(true);
    expect(reader.stats.streams).toBe(1);
    expect(streamed).toBe(1);
    expect(downloads).toBe(0);
    reader.closePattern(f, pat);
  });
});
