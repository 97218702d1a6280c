// The API token goes to the API only. Upload, update and download links carry
// their own access token in the URL, and a real fileserver ignores the
// Authorization header, so sending the account's token there only leaks it
// (to a separate fileserver host, or to /seafhttp behind the same proxy).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import type { StreamSink } from '../../../src/client/types.js';
import { json, text, tinyServer, type TinyServer } from '../../helpers/client-fixture.js';

let srv: TinyServer;
let dir: string;
const ID = 'a'.repeat(40);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'seafs-linkauth-'));
  writeFileSync(join(dir, 'f'), 'hello');
  // one origin, as behind nginx: the API at /api2, the fileserver at /seafhttp
  srv = await tinyServer((req, res) => {
    const u = req.url!;
    if (u.startsWith('/api2/repos/r/upload-link/')) return json(res, 200, `${srv.url}/seafhttp/upload-api/UT`);
    if (u.startsWith('/api2/repos/r/update-link/')) return json(res, 200, `${srv.url}/seafhttp/update-api/PT`);
    if (u.startsWith('/api2/repos/r/file/')) return json(res, 200, `${srv.url}/seafhttp/files/DT/f`, { oid: ID });
    if (u.startsWith('/seafhttp/files/')) return text(res, 200, 'hello', { etag: ID });
    if (u.startsWith('/seafhttp/update-api/')) return text(res, 200, ID);
    if (u.startsWith('/seafhttp/upload-api/')) return json(res, 200, [{ name: 'f', id: ID, size: 5 }]);
    json(res, 404, { error_msg: 'no' });
  });
});

afterAll(async () => {
  await srv.close();
  rmSync(dir, { recursive: true, force: true });
});

/** a sink that drops the bytes; `done` settles at the end of the stream */
const sink = (): StreamSink & { done: Promise<void> } => {
  let end!: () => void;
  const done = new Promise<void>((res) => (end = res));
  const buf = Buffer.alloc(64 * 1024);
  return { done, head: () => {}, space: () => buf, wrote: () => {}, end: () => end() };
};

describe('the API token never goes to link URLs', () => {
  for (const raw of [true, false]) {
    it(`uploads, updates, batches, streams and downloads without it (raw sockets ${raw ? 'on' : 'off'})`, async () => {
      const client = new SeafileClient({ baseUrl: srv.url, token: 'tok', rawUploads: raw, rawStreams: raw });
      const before = srv.seen.length;
      try {
        const up = await client.uploadLink('r', '/');
        await client.upload(up, '/', join(dir, 'f'), 'f');
        await client.uploadBatch(up, '/', [{ path: join(dir, 'f'), name: 'f' }], { replace: true });
        const s = await client.startUploadStream!(up, [['parent_dir', '/']], 'f');
        await s.write(Buffer.from('hello'));
        await s.finish();
        await client.update(await client.updateLink('r', '/'), '/f', join(dir, 'f'));
        const dl = await client.downloadLink('r', '/f', { reuse: true });
        const d = await client.download(dl.url);
        for await (const _ of d.body) void _;
        if (raw) {
          const k = sink();
          client.streamGet(dl.url, 0, k);
          await k.done;
        }
      } finally {
        await client.close();
      }
      const seen = srv.seen.slice(before);
      const links = seen.filter((r) => r.url.startsWith('/seafhttp/'));
      const api = seen.filter((r) => r.url.startsWith('/api2/'));
      expect(links.map((r) => r.url.split('/')[2])).toEqual(
        expect.arrayContaining(['upload-api', 'update-api', 'files']),
      );
      expect(links.length).toBe(raw ? 6 : 5);
      for (const r of links) expect([r.url, r.headers.authorization]).toEqual([r.url, undefined]);
      // the API itself still gets it
      expect(api.length).toBe(3);
      for (const r of api) expect(r.headers.authorization).toBe('Token tok');
    });
  }
});
