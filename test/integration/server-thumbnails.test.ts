// GET /api2/repos/{id}/thumbnail/ on `seafs serve`, answered as seahub 10
// (api2/views.py ThumbnailView): real JPEG and PNG pictures decoded, scaled
// to fit the size asked (aspect kept, Pillow's rounding, never up) and sent as
// PNG; the refusals in seahub's order and with its statuses.
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BOB,
  CAROL,
  newLibrary,
  startServerWithUsers,
  uploadTo,
  type RawApi,
  type TestServer,
} from '../helpers/server.js';

let server: TestServer;
let bob: RawApi;
let carol: RawApi;
let bobToken: string;
let repo: string;

/** w x h RGBA pixels: the left half red, the right half blue; `alpha` for every pixel */
function halves(w: number, h: number, alpha = 255): Buffer {
  const d = Buffer.alloc(w * h * 4);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      d[i] = x < w / 2 ? 255 : 0;
      d[i + 2] = x < w / 2 ? 0 : 255;
      d[i + 3] = alpha;
    }
  return d;
}

function jpegOf(w: number, h: number): Buffer {
  return jpeg.encode({ width: w, height: h, data: halves(w, h) }, 90).data;
}

/** a JPEG with an EXIF orientation (APP1 right after SOI, big-endian TIFF, IFD0 holding only tag 0x0112) */
function withOrientation(jpg: Buffer, o: number): Buffer {
  const tiff = Buffer.alloc(8 + 2 + 12 + 4);
  tiff.write('MM', 0, 'latin1');
  tiff.writeUInt16BE(42, 2);
  tiff.writeUInt32BE(8, 4);
  tiff.writeUInt16BE(1, 8);
  tiff.writeUInt16BE(0x0112, 10);
  tiff.writeUInt16BE(3, 12); // SHORT
  tiff.writeUInt32BE(1, 14);
  tiff.writeUInt16BE(o, 18);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(2 + 6 + tiff.length, 2);
  return Buffer.concat([jpg.subarray(0, 2), head, Buffer.from('Exif\0\0', 'latin1'), tiff, jpg.subarray(2)]);
}

function pngOf(w: number, h: number, alpha = 255): Buffer {
  const png = new PNG({ width: w, height: h });
  png.data = halves(w, h, alpha);
  return PNG.sync.write(png);
}

async function thumb(p: string | null, size: string | null, token = bobToken, repoId = repo) {
  const u = new URL(`${server.url}/api2/repos/${repoId}/thumbnail/`);
  if (p !== null) u.searchParams.set('p', p);
  if (size !== null) u.searchParams.set('size', size);
  const res = await fetch(u, { headers: { Authorization: `Token ${token}` } });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type'), headers: res.headers, body };
}

async function upload(files: Record<string, string | Buffer>, repoId = repo): Promise<void> {
  const link = (await bob('GET', `/api2/repos/${repoId}/upload-link/`, { query: { p: '/' } })).json as string;
  const up = await uploadTo(link, '/', files, { replace: true });
  expect(up.status).toBe(200);
}

beforeAll(async () => {
  let users: RawApi[];
  ({ server, users } = await startServerWithUsers([BOB, CAROL]));
  [bob, carol] = users;
  bobToken = (await bob('POST', '/api2/auth-token/', { form: { username: BOB.email, password: BOB.password } })).json
    .token as string;
  repo = await newLibrary(bob, 'Pictures');
  await upload({
    'wide.jpg': jpegOf(300, 200),
    'tall.png': pngOf(100, 400, 128),
    'small.PNG': pngOf(50, 40),
    'notes.txt': 'not a picture',
    'fake.jpg': 'not a picture either',
  });
});

afterAll(async () => {
  await server?.stop();
});

describe('thumbnail of a picture', () => {
  it('scales a JPEG to fit the size as a PNG that decodes, colours kept', async () => {
    const r = await thumb('/wide.jpg', '128');
    expect(r.status).toBe(200);
    expect(r.type).toBe('image/png');
    expect(r.headers.get('cache-control')).toBeNull();
    const png = PNG.sync.read(r.body);
    // Pillow's rounding: 300x200 into 128x128 is 128x85 (85.33 -> the nearer aspect)
    expect([png.width, png.height]).toEqual([128, 85]);
    const px = (x: number, y: number) => [...png.data.subarray((y * png.width + x) * 4, (y * png.width + x) * 4 + 4)];
    const [lr, , lb, la] = px(10, 40);
    const [rr, , rb] = px(118, 40);
    expect(lr).toBeGreaterThan(200);
    expect(lb).toBeLessThan(50);
    expect(rb).toBeGreaterThan(200);
    expect(rr).toBeLessThan(50);
    expect(la).toBe(255);
  });

  it('scales a PNG with transparency, keeping its alpha, to each size asked', async () => {
    const big = PNG.sync.read((await thumb('/tall.png', '256')).body);
    expect([big.width, big.height]).toEqual([64, 256]);
    const small = PNG.sync.read((await thumb('/tall.png', '48')).body);
    expect([small.width, small.height]).toEqual([12, 48]);
    expect(small.data[3]).toBe(128);
  });

  it('turns a JPEG upright by its EXIF orientation before scaling it, as seahub does', async () => {
    // stored 300x200, left half red; orientation 6: shown turned a quarter clockwise, red on top
    await upload({ 'turned.jpg': withOrientation(jpegOf(300, 200), 6) });
    const png = PNG.sync.read((await thumb('/turned.jpg', '128')).body);
    expect([png.width, png.height]).toEqual([85, 128]);
    const at = (x: number, y: number) => png.data.subarray((y * png.width + x) * 4, (y * png.width + x) * 4 + 3);
    expect([...at(40, 10)]).toEqual([
      expect.toSatisfy((v: number) => v > 200),
      expect.anything(),
      expect.toSatisfy((v: number) => v < 50),
    ]);
    expect([...at(40, 118)]).toEqual([
      expect.toSatisfy((v: number) => v < 50),
      expect.anything(),
      expect.toSatisfy((v: number) => v > 200),
    ]);
  });

  it('never scales up: a picture smaller than the size comes back at its own size', async () => {
    const r = await thumb('/small.PNG', '256');
    expect(r.status).toBe(200);
    const png = PNG.sync.read(r.body);
    expect([png.width, png.height]).toEqual([50, 40]);
  });

  it('follows the file: new content at the same path gets a new thumbnail', async () => {
    const lib = await newLibrary(bob, 'Changing');
    await upload({ 'p.jpg': jpegOf(64, 32) }, lib);
    const before = PNG.sync.read((await thumb('/p.jpg', '32', bobToken, lib)).body);
    expect([before.width, before.height]).toEqual([32, 16]);
    await upload({ 'p.jpg': jpegOf(32, 64) }, lib);
    const after = PNG.sync.read((await thumb('/p.jpg', '32', bobToken, lib)).body);
    expect([after.width, after.height]).toEqual([16, 32]);
  });
});

describe('thumbnail of a large photo', () => {
  it('is made off the server thread: other calls are answered meanwhile', async () => {
    await upload({ 'photo.jpg': jpegOf(2400, 1600) }); // decoding takes a second or more in pure JS
    const done: string[] = [];
    const big = thumb('/photo.jpg', '256').then((r) => {
      done.push('thumbnail');
      return r;
    });
    await new Promise((r) => setTimeout(r, 300)); // the server has read the file and is decoding it
    const ping = await fetch(`${server.url}/api2/auth/ping/`, { headers: { Authorization: `Token ${bobToken}` } });
    done.push('ping');
    expect(ping.status).toBe(200);
    const png = PNG.sync.read((await big).body);
    expect([png.width, png.height]).toEqual([256, 171]);
    expect(done).toEqual(['ping', 'thumbnail']);
  });
});

describe('thumbnail refusals, as seahub 10', () => {
  const err = (r: { body: Buffer }) => JSON.parse(r.body.toString()) as { error_msg: string };

  it('400 for a missing or bad size, a missing path, a folder, and a file that is no picture it reads', async () => {
    let r = await thumb('/wide.jpg', null);
    expect([r.status, err(r).error_msg]).toEqual([400, 'Size is missing.']);
    r = await thumb('/wide.jpg', 'big');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Invalid size.']);
    r = await thumb(null, '48');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Wrong path.']);
    r = await thumb('/nope.jpg', '48');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Wrong path.']);
    r = await thumb('/', '48');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Wrong path.']);
    for (const p of ['/notes.txt', '/fake.jpg']) {
      r = await thumb(p, '48');
      expect([r.status, err(r).error_msg]).toEqual([400, 'Invalid argument']);
    }
    r = await thumb('/wide.jpg', '0');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Invalid argument']);
  });

  it("406 to an Accept without JSON (Django REST framework's negotiation), whatever the view answers", async () => {
    const ask = (accept: string) =>
      fetch(`${server.url}/api2/repos/${repo}/thumbnail/?p=/wide.jpg&size=48`, {
        headers: { Authorization: `Token ${bobToken}`, Accept: accept },
      });
    const refused = await ask('image/*');
    expect(refused.status).toBe(406);
    expect(await refused.json()).toEqual({ detail: 'Could not satisfy the request Accept header.' });
    for (const ok of ['application/json', 'image/png, */*;q=0.8', 'application/*'])
      expect((await ask(ok)).headers.get('content-type')).toBe('image/png');
  });

  it('403 for a picture too big to decode (256 MB as RGBA), read from its header alone', async () => {
    // a PNG header claiming 9000 x 9000 pixels (309 MB as RGBA) and nothing after it
    const head = pngOf(1, 1).subarray(0, 33);
    head.writeUInt32BE(9000, 16);
    head.writeUInt32BE(9000, 20);
    await upload({ 'huge.png': head });
    const r = await thumb('/huge.png', '48');
    expect([r.status, err(r).error_msg]).toEqual([403, 'Forbidden']);
  });

  it('400 for a file over 30 MB', async () => {
    const big = Buffer.alloc(30 * 1024 * 1024 + 1);
    pngOf(8, 8).copy(big);
    await upload({ 'big.png': big });
    const r = await thumb('/big.png', '48');
    expect([r.status, err(r).error_msg]).toEqual([400, 'Invalid argument']);
  });

  it('403 in an encrypted library, 404 for a library the caller cannot see', async () => {
    const enc = await newLibrary(bob, 'Secret pictures', {}, 'secret-pw');
    await upload({ 'e.png': pngOf(8, 8) }, enc);
    let r = await thumb('/e.png', '48', bobToken, enc);
    expect([r.status, err(r).error_msg]).toEqual([403, 'Permission denied.']);
    r = await thumb('/nope.png', '48', bobToken, enc);
    expect([r.status, err(r).error_msg]).toEqual([400, 'Wrong path.']);
    const carolToken = (
      await carol('POST', '/api2/auth-token/', { form: { username: CAROL.email, password: CAROL.password } })
    ).json.token as string;
    r = await thumb('/wide.jpg', '48', carolToken);
    expect([r.status, err(r).error_msg]).toEqual([404, 'Library not found.']);
  });
});
