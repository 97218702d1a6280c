// The server's streaming multipart parser, driven through real upload
// requests with awkward bodies: tiny chunks, delimiter look-alikes in the
// content, quoted boundaries, RFC 5987 names, fields after the file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { adminToken, apiAs, startTestServer, type TestServer } from '../helpers/server.js';
import { seafileFileId } from '../helpers/seafile-ids.js';

let server: TestServer;
let call: ReturnType<typeof apiAs>;
let repo: string;

/** POSTs `body` to `url`, written in chunks of the given sizes (cycled), chunked transfer encoding. */
function post(
  url: string,
  contentType: string,
  body: Buffer,
  chunkSizes: number[],
): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      method: 'POST',
      headers: { 'Content-Type': contentType },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    let off = 0;
    let i = 0;
    const next = () => {
      if (off >= body.length) return void req.end();
      const n = chunkSizes[i++ % chunkSizes.length];
      req.write(body.subarray(off, off + n));
      off += n;
      setImmediate(next);
    };
    next();
  });
}

function part(boundary: string, headers: string, content: Buffer | string): Buffer {
  return Buffer.concat([
    Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`),
    Buffer.isBuffer(content) ? content : Buffer.from(content),
    Buffer.from('\r\n'),
  ]);
}

async function uploadLink(): Promise<string> {
  return (await call('GET', `/api2/repos/${repo}/upload-link/`)).json;
}

async function download(p: string): Promise<Buffer> {
  const url = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p } })).json;
  return Buffer.from(await (await fetch(url)).arrayBuffer());
}

beforeAll(async () => {
  server = await startTestServer();
  call = apiAs(server.url, await adminToken(server));
  repo = (await call('POST', '/api2/repos/', { form: { name: 'mp' } })).json.repo_id;
});

afterAll(async () => {
  await server?.stop();
});

describe('multipart uploads', () => {
  it('survives 1-byte chunks, delimiter look-alikes, a preamble and an epilogue', async () => {
    const boundary = 'XyZ-boundary-123';
    const tricky = Buffer.concat([
      Buffer.from('\r\n--XyZ-boundary-12'), // almost a delimiter
      Buffer.from('--XyZ-boundary-123'), // the boundary without the leading CRLF
      randomBytes(3000),
      Buffer.from('\r\n\r\n--\r\n'),
      Buffer.from('\r\n--XyZ-boundary-1234'.slice(0, 19)),
    ]);
    const body = Buffer.concat([
      Buffer.from('this is a preamble\r\n'),
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      part(
        boundary,
        'Content-Disposition: form-data; name="file"; filename="tricky.bin"\r\nContent-Type: application/octet-stream',
        tricky,
      ),
      Buffer.from(`--${boundary}--\r\nepilogue`),
    ]);
    // chunks smaller than, equal to and just above the delimiter (20 bytes) make it straddle every offset
    for (const sizes of [[1], [7, 1, 13], [19], [20], [21], [25, 33], [40, 3, 64], [4096]]) {
      const r = await post(
        `${await uploadLink()}?ret-json=1`,
        `multipart/form-data; boundary=${boundary}`,
        body,
        sizes,
      );
      expect(r.status, String(sizes)).toBe(200);
      const [info] = JSON.parse(r.text);
      expect(info.size).toBe(tricky.length);
      expect(info.id).toBe(seafileFileId(tricky));
      expect((await download('/' + info.name)).equals(tricky)).toBe(true);
    }
  });

  it('takes quoted boundaries, UTF-8 and RFC 5987 file names, fields after the file, several files', async () => {
    const boundary = 'quoted;boundary';
    const body = Buffer.concat([
      part(boundary, 'Content-Disposition: form-data; name="file"; filename="héllo wörld.txt"', 'one'),
      part(
        boundary,
        'Content-Disposition: form-data; name="file"; filename="fallback.txt"; filename*=UTF-8\'\'%E6%97%A5%E6%9C%AC.txt',
        'two',
      ),
      part(boundary, 'Content-Disposition: form-data; name="file"; filename="empty.txt"', ''),
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      part(boundary, 'Content-Disposition: form-data; name="relative_path"', 'sub/dir'),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const r = await post(
      `${await uploadLink()}?ret-json=1`,
      `multipart/form-data; boundary="${boundary}"`,
      body,
      [5, 64],
    );
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).map((x: { name: string }) => x.name)).toEqual([
      'héllo wörld.txt',
      '日本.txt',
      'empty.txt',
    ]);
    const listing = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/sub/dir' } })).json;
    expect(listing.map((e: { name: string }) => e.name).sort()).toEqual(
      ['empty.txt', 'héllo wörld.txt', '日本.txt'].sort(),
    );
    expect((await download('/sub/dir/日本.txt')).toString()).toBe('two');
  });

  it('refuses a truncated body and a body without a file, leaving nothing behind', async () => {
    const boundary = 'b0undary';
    const truncated = Buffer.concat([
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\nsome bytes but no end`,
      ),
    ]);
    const r1 = await post(await uploadLink(), `multipart/form-data; boundary=${boundary}`, truncated, [10]);
    expect(r1.status).toBe(400);
    const noFile = Buffer.concat([
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const r2 = await post(await uploadLink(), `multipart/form-data; boundary=${boundary}`, noFile, [100]);
    expect(r2.status).toBe(400);
    expect(r2.text).toMatch(/^\{"error": ".*\n"\}$/s);
    const names = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).not.toContain('cut.bin');
    const notMultipart = await post(await uploadLink(), 'application/octet-stream', Buffer.from('raw'), [3]);
    expect(notMultipart.status).toBe(400);
  });

  it('stores small parts (held in memory) and large ones (streamed) alike, around the 256 KiB line and past 8 MiB of small parts', async () => {
    const boundary = 'sizes-boundary';
    const K = 1024;
    // 40 parts of 250 KiB: more small parts than the parser lets wait for their fsync at once (8 MiB)
    const sizes = [256 * K - 1, 256 * K, 256 * K + 1, 3 * K * K, 0, 1, ...Array.from({ length: 40 }, () => 250 * K)];
    const contents = sizes.map((n) => randomBytes(n));
    const body = Buffer.concat([
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      part(boundary, 'Content-Disposition: form-data; name="relative_path"', 'sizes'),
      ...contents.map((c, i) => part(boundary, `Content-Disposition: form-data; name="file"; filename="f${i}.bin"`, c)),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const r = await post(
      `${await uploadLink()}?ret-json=1`,
      `multipart/form-data; boundary=${boundary}`,
      body,
      [65536, 1000],
    );
    expect(r.status).toBe(200);
    const info = JSON.parse(r.text) as { name: string; id: string; size: number }[];
    expect(info.map((x) => x.size)).toEqual(sizes);
    for (let i = 0; i < contents.length; i++) {
      if (sizes[i] > 0) expect(info[i].id).toBe(seafileFileId(contents[i]));
      expect((await download(`/sizes/f${i}.bin`)).equals(contents[i]), `f${i}.bin`).toBe(true);
    }
    expect(readdirSync(path.join(server.dataDir, 'tmp'))).toEqual([]);
  });

  it('a body cut off after many small parts leaves no temp file and stores nothing', async () => {
    const boundary = 'cut-boundary';
    const body = Buffer.concat([
      part(boundary, 'Content-Disposition: form-data; name="parent_dir"', '/'),
      ...Array.from({ length: 50 }, (_, i) =>
        part(boundary, `Content-Disposition: form-data; name="file"; filename="c${i}.bin"`, randomBytes(200 * 1024)),
      ),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="last.bin"\r\n\r\npartial`),
    ]);
    const r = await post(await uploadLink(), `multipart/form-data; boundary=${boundary}`, body, [65536]);
    expect(r.status).toBe(400);
    expect(readdirSync(path.join(server.dataDir, 'tmp'))).toEqual([]);
    const names = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names.filter((n: string) => /^c\d+\.bin$|^last\.bin$/.test(n))).toEqual([]);
  });

  it('reads parent_dir, relative_path and replace sent as parts with a filename as fields (as the C fileserver does)', async () => {
    const boundary = 'fieldsAsFiles';
    const asFile = (name: string, value: string) =>
      part(
        boundary,
        `Content-Disposition: form-data; name="${name}"; filename="blob"\r\nContent-Type: application/octet-stream`,
        value,
      );
    const content = randomBytes(500);
    const body = Buffer.concat([
      asFile('parent_dir', '/'),
      asFile('relative_path', 'as-files/sub'),
      asFile('replace', '1'),
      part(boundary, 'Content-Disposition: form-data; name="file"; filename="f.bin"', content),
      Buffer.from(`--${boundary}--\r\n`),
    ]);
    const link = await uploadLink();
    const up = () => post(`${link}?ret-json=1`, `multipart/form-data; boundary=${boundary}`, body, [4096]);
    const r = await up();
    expect(r.status, r.text).toBe(200);
    expect(JSON.parse(r.text)).toEqual([{ name: 'f.bin', id: seafileFileId(content), size: 500 }]);
    // replace=1 was read: the same upload again replaces, no "f (1).bin"
    expect((await up()).status).toBe(200);
    const names = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/as-files/sub' } })).json.map(
      (e: { name: string }) => e.name,
    );
    expect(names).toEqual(['f.bin']);
    expect((await download('/as-files/sub/f.bin')).equals(content)).toBe(true);
  });
});
