// The client's block calls (src/client/endpoints/blocks.ts) against a scripted server: what they send
// (the blklist form, one multipart part per block named by its id, the commit's fields) and how they read
// the answers the real server gives (seahub's upload-blks-link, the file server's "OK" and {"id"}).
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import { json, text, tinyServer, type TinyServer } from '../../helpers/client-fixture.js';

const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
const REPO = '11111111-2222-4333-8444-555555555555';

describe('client block calls', () => {
  let srv: TinyServer | null = null;
  let dir = '';
  afterEach(async () => {
    await srv?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const client = (url: string) => new SeafileClient({ baseUrl: url, token: 'tok', maxRetries: 1, timeoutMs: 5000 });

  it('asks which blocks are missing with a blklist form and reads the links', async () => {
    srv = await tinyServer((_req, res) =>
      json(res, 200, {
        rawblksurl: 'http://f/upload-raw-blks-api/t',
        commiturl: 'http://f/c?commitonly=true',
        blklist: ['a'.repeat(40)],
      }),
    );
    const c = client(srv.url);
    const l = await c.blocksLink(REPO, '/d', ['a'.repeat(40), 'b'.repeat(40)]);
    expect(l).toEqual({
      rawUrl: 'http://f/upload-raw-blks-api/t',
      commitUrl: 'http://f/c?commitonly=true',
      missing: ['a'.repeat(40)],
    });
    const seen = srv.seen[0];
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe(`/api2/repos/${REPO}/upload-blks-link/?p=%2Fd`);
    expect(new URLSearchParams(seen.body.toString()).get('blklist')).toBe(`${'a'.repeat(40)},${'b'.repeat(40)}`);
    expect(seen.headers.authorization).toBe('Token tok');
    await c.close();
  });

  it('sends blocks as file parts named by their ids, from disk and from memory, without the API token', async () => {
    dir = mkdtempSync(join(tmpdir(), 'seafs-blocks-'));
    const file = join(dir, 'f');
    const bytes = Buffer.from('0123456789abcdefghij');
    writeFileSync(file, bytes);
    srv = await tinyServer((_req, res) => json(res, 200, 'OK'));
    const c = client(srv.url);
    const a = bytes.subarray(5, 12);
    const b = Buffer.from('in memory');
    await c.uploadBlocks(`${srv.url}/upload-raw-blks-api/tok`, [
      { id: sha1(a), path: file, offset: 5, length: 7 },
      { id: sha1(b), data: b, offset: 0, length: b.length },
    ]);
    const seen = srv.seen[0];
    expect(seen.headers.authorization).toBeUndefined();
    expect(Number(seen.headers['content-length'])).toBe(seen.body.length);
    const boundary = /boundary=(.+)$/.exec(seen.headers['content-type']!)![1];
    const parts = seen.body.toString('latin1').split(`--${boundary}`).slice(1, -1);
    expect(parts).toHaveLength(2);
    for (const [i, want] of [a, b].entries()) {
      const [head, body] = parts[i].split('\r\n\r\n');
      expect(head).toContain(`name="file"; filename="${sha1(want)}"`);
      expect(body).toBe(`${want.toString('latin1')}\r\n`);
    }
    await c.close();
  });

  it('commits with the fields the file server reads and takes the id of a ret-json answer; 446 and 443 come back as such', async () => {
    const id = 'c'.repeat(40);
    srv = await tinyServer((_req, res, _b, n) => {
      if (n === 1) return json(res, 200, { id });
      if (n === 2) return text(res, 446, '{"error": "Block missing.\n"}');
      return text(res, 443, '{"error": "Out of quota.\n"}');
    });
    const c = client(srv.url);
    const commit = {
      parentDir: '/d',
      name: 'big "x".bin',
      size: 20,
      ids: ['a'.repeat(40), 'b'.repeat(40)],
      replace: true,
      lastModify: Date.parse('2024-01-02T03:04:05.678Z'),
    };
    expect(await c.commitBlocks(`${srv.url}/upload-blks-api/t?commitonly=true&ret-json=true`, commit)).toBe(id);
    const body = srv.seen[0].body.toString();
    const field = (k: string) => new RegExp(`name="${k}"\\r\\n\\r\\n([^\\r]*)\\r\\n`).exec(body)?.[1];
    expect(field('parent_dir')).toBe('/d');
    expect(field('file_name')).toBe('big "x".bin');
    expect(field('file_size')).toBe('20');
    expect(JSON.parse(field('blockids')!)).toEqual(commit.ids);
    expect(field('replace')).toBe('1');
    expect(field('last_modify')).toBe('2024-01-02T03:04:05.000Z');
    expect(srv.seen[0].url).toBe('/upload-blks-api/t?commitonly=true&ret-json=true&ret-json=1');
    await expect(c.commitBlocks(`${srv.url}/x`, commit)).rejects.toMatchObject({ status: 446 });
    await expect(c.commitBlocks(`${srv.url}/x`, commit)).rejects.toMatchObject({ status: 443, kind: 'quota' });
    await c.close();
  });

  it("reads a file's block list (op=downloadblks)", async () => {
    srv = await tinyServer((_req, res) =>
      json(res, 200, { file_id: 'f'.repeat(40), blklist: ['a'.repeat(40)], encrypted: false, enc_version: 0 }),
    );
    const c = client(srv.url);
    expect(await c.fileBlocks(REPO, '/a b.bin')).toEqual({
      fileId: 'f'.repeat(40),
      ids: ['a'.repeat(40)],
      encrypted: false,
    });
    expect(srv.seen[0].url).toBe(`/api2/repos/${REPO}/file/?p=%2Fa%20b.bin&op=downloadblks`);
    await c.close();
  });
});
