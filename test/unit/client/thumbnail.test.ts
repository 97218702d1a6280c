// The client's thumbnail call: seahub's api2 thumbnail endpoint, the picture's
// path and the size in the query, the image's bytes and type back; a refusal
// is an ApiError of its status; an answer too large to be a thumbnail is refused.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/client/errors.js';
import { clientFixture, json } from '../../helpers/client-fixture.js';

const f = clientFixture();
const REPO = '93d434ca-355e-493c-9c8c-8a2ba2a3d8a6';
const PNG_BYTES = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);

describe('thumbnail', () => {
  it('asks for the path and size with the token and hands back the bytes and their type', async () => {
    const { client, srv } = await f.setup((req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG_BYTES.length });
      res.end(PNG_BYTES);
    });
    const t = await client.thumbnail(REPO, '/été/a b.png', 256);
    expect(t).toEqual({ type: 'image/png', bytes: PNG_BYTES });
    const u = new URL(srv.seen[0].url, 'http://x');
    expect(u.pathname).toBe(`/api2/repos/${REPO}/thumbnail/`);
    expect([u.searchParams.get('p'), u.searchParams.get('size')]).toEqual(['/été/a b.png', '256']);
    expect(srv.seen[0].headers.authorization).toMatch(/^Token /);
  });

  it("a refusal is an ApiError with the server's status and message", async () => {
    const { client } = await f.setup((req, res) => json(res, 400, { error_msg: 'Invalid argument' }));
    const e = await client.thumbnail(REPO, '/notes.txt', 128).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect([(e as ApiError).status, (e as ApiError).serverMessage]).toEqual([400, 'Invalid argument']);
  });

  it('an answer over 8 MiB is no thumbnail: refused', async () => {
    const { client } = await f.setup((req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.alloc(9 * 1024 * 1024));
    });
    await expect(client.thumbnail(REPO, '/a.png', 128)).rejects.toThrow(/over 8388608 bytes/);
  });
});
