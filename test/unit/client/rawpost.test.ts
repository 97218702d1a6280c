import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawUpload } from '../../../src/client/raw-post.js';
import { multipartOfFiles } from '../../../src/client/upload-batch.js';

describe('raw upload POST over a bare socket', () => {
  let server: http.Server;
  let base = '';
  let dir = '';
  let last: { headers: http.IncomingHttpHeaders; body: Buffer; url: string } | null = null;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'seafs-rawpost-'));
    server = http.createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        last = { headers: req.headers, body: Buffer.concat(parts), url: req.url ?? '' };
        if (req.url?.startsWith('/quota'))
          return res.writeHead(443, { 'Content-Type': 'text/plain' }).end('{"error": "Out of quota.\n"}');
        if (req.url?.startsWith('/chunked')) {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.write('[{"name": "a", ');
          return res.end('"id": "x", "size": 1}]');
        }
        res
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(JSON.stringify([{ name: 'ok', id: 'i', size: 1 }]));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends a well-formed multipart body of several files with the exact bytes and no API token', async () => {
    const big = Buffer.alloc(1024 * 1024 + 7);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff;
    writeFileSync(join(dir, 'big'), big);
    writeFileSync(join(dir, 'empty'), '');
    writeFileSync(join(dir, 'small'), 'small');
    const files = [
      { path: join(dir, 'big'), name: 'big.bin' },
      { path: join(dir, 'empty'), name: 'empty' },
      { path: join(dir, 'small'), name: 'ünï cödé.txt' },
    ];
    const r = await rawUpload(
      `${base}/upload-api/tok`,
      [
        ['parent_dir', '/d'],
        ['replace', '1'],
      ],
      files,
    );
    expect(JSON.parse(r.text)[0].id).toBe('i');
    expect(r.sizes).toEqual([big.length, 0, 5]);
    expect(last!.url).toBe('/upload-api/tok?ret-json=1');
    expect(last!.headers.authorization).toBeUndefined();
    expect(Number(last!.headers['content-length'])).toBe(last!.body.length);
    const boundary = /boundary=(.+)$/.exec(last!.headers['content-type']!)![1];
    const segs = last!.body.toString('latin1').split(`--${boundary}`);
    expect(segs.at(-1)).toBe('--\r\n');
    const parts = segs.slice(1, -1).map((seg) => {
      const i = seg.indexOf('\r\n\r\n');
      return {
        head: Buffer.from(seg.slice(0, i), 'latin1').toString('utf8'),
        body: Buffer.from(seg.slice(i + 4, -2), 'latin1'),
      };
    });
    expect(parts.map((p) => /name="([^"]+)"/.exec(p.head)![1])).toEqual([
      'parent_dir',
      'replace',
      'file',
      'file',
      'file',
    ]);
    expect(parts[0].body.toString()).toBe('/d');
    expect(parts[2].body.equals(big)).toBe(true);
    expect(parts[3].body.length).toBe(0);
    expect(parts[4].head).toContain('filename="ünï cödé.txt"');
    expect(parts[4].body.toString()).toBe('small');
  });

  it('sends files held in memory from their bytes (no file is read) beside files on disk, over either transport', async () => {
    writeFileSync(join(dir, 'disk'), 'from the disk');
    const files = [
      { path: join(dir, 'no-such-file'), name: 'mem.txt', data: Buffer.from('from memory') },
      { path: join(dir, 'disk'), name: 'disk.txt' },
      { path: join(dir, 'no-such-file'), name: 'empty.txt', data: Buffer.alloc(0) },
    ];
    const bodies = (raw: Buffer, type: string) => {
      const boundary = /boundary=(.+)$/.exec(type)![1];
      return raw
        .toString('latin1')
        .split(`--${boundary}`)
        .slice(1, -1)
        .map((seg) => seg.slice(seg.indexOf('\r\n\r\n') + 4, -2));
    };
    const r = await rawUpload(`${base}/upload-api/tok`, [['parent_dir', '/d']], files);
    expect(r.sizes).toEqual([11, 13, 0]);
    expect(Number(last!.headers['content-length'])).toBe(last!.body.length);
    expect(bodies(last!.body, last!.headers['content-type']!)).toEqual(['/d', 'from memory', 'from the disk', '']);
    const mp = await multipartOfFiles([['parent_dir', '/d']], files);
    const chunks: Buffer[] = [];
    for await (const c of mp.stream) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    expect(body.length).toBe(mp.length);
    expect(bodies(body, mp.contentType)).toEqual(['/d', 'from memory', 'from the disk', '']);
  });

  it('maps refusals to ApiError kinds and reads chunked answers', async () => {
    writeFileSync(join(dir, 'f'), 'x');
    await expect(rawUpload(`${base}/quota`, [], [{ path: join(dir, 'f'), name: 'f' }])).rejects.toMatchObject({
      kind: 'quota',
      status: 443,
    });
    const r = await rawUpload(`${base}/chunked`, [], [{ path: join(dir, 'f'), name: 'f' }]);
    expect(JSON.parse(r.text)).toEqual([{ name: 'a', id: 'x', size: 1 }]);
    await expect(rawUpload('http://127.0.0.1:1/x', [], [{ path: join(dir, 'f'), name: 'f' }])).rejects.toMatchObject({
      kind: 'network',
    });
  });
});
