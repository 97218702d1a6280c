// The freedesktop thumbnail cache the mount fills (src/vfs/thumbnails/):
// names (the URI as GLib escapes it, its md5), the PNG tEXt chunks, and when
// thumbnails are asked of the server and written.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/client/errors.js';
import type { DirEntry } from '../../../src/client/types.js';
import { readTextChunks, withTextChunks } from '../../../src/vfs/thumbnails/png-text.js';
import { ThumbnailFiller } from '../../../src/vfs/thumbnails/thumbnail-filler.js';
import { fileUri, thumbnailName, thumbnailRoot } from '../../../src/vfs/thumbnails/thumbnail-names.js';

function pngOf(w: number, h: number): Buffer {
  const png = new PNG({ width: w, height: h });
  png.data.fill(200);
  return PNG.sync.write(png);
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('thumbnail names', () => {
  it("hashes the Thumbnail Managing Standard's own example", () => {
    expect(thumbnailName(fileUri('/home/jens/photos/me.png'))).toBe('c6ee772d9e49320e97ec29a7eb5b1697.png');
  });

  it('escapes a path as GLib does (what `gio info` prints for the same name)', () => {
    const name = 'a b#c%d?e;f[g]h{i}j|k^l`m"n<o>p\\q!$&\'()*+,-.:=@_~r é😀.png';
    expect(fileUri(`/tmp/thumbs-uri/${name}`)).toBe(
      "file:///tmp/thumbs-uri/a%20b%23c%25d%3Fe%3Bf%5Bg%5Dh%7Bi%7Dj%7Ck%5El%60m%22n%3Co%3Ep%5Cq!$&'()*+,-.:=@_~r%20%C3%A9%F0%9F%98%80.png",
    );
  });

  it('lives in $XDG_CACHE_HOME/thumbnails, ~/.cache/thumbnails when it is unset or relative', () => {
    expect(thumbnailRoot({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/thumbnails');
    expect(thumbnailRoot({ XDG_CACHE_HOME: 'rel' })).toMatch(/\/\.cache\/thumbnails$/);
    expect(thumbnailRoot({})).toMatch(/\/\.cache\/thumbnails$/);
  });
});

describe('PNG tEXt chunks', () => {
  it('adds them before the image data; the PNG still decodes and reads them back', () => {
    const out = withTextChunks(pngOf(3, 2), { 'Thumb::URI': 'file:///m/a.png', 'Thumb::MTime': '1700000000' });
    expect(readTextChunks(out)).toEqual(
      new Map([
        ['Thumb::URI', 'file:///m/a.png'],
        ['Thumb::MTime', '1700000000'],
      ]),
    );
    expect(out.indexOf('tEXt')).toBeLessThan(out.indexOf('IDAT'));
    const back = PNG.sync.read(out);
    expect([back.width, back.height]).toEqual([3, 2]);
  });

  it('replaces chunks of the same keywords, and refuses what is not a PNG', () => {
    const once = withTextChunks(pngOf(1, 1), { 'Thumb::MTime': '1', Other: 'kept' });
    const twice = withTextChunks(once, { 'Thumb::MTime': '2' });
    expect(readTextChunks(twice)).toEqual(
      new Map([
        ['Thumb::MTime', '2'],
        ['Other', 'kept'],
      ]),
    );
    expect(() => withTextChunks(Buffer.from('GIF89a'), { a: 'b' })).toThrow(/not a PNG/);
    const bad = Buffer.from(once);
    bad[bad.length - 20] ^= 0xff; // a CRC no longer matches
    expect(readTextChunks(bad)).toBeNull();
  });
});

describe('ThumbnailFiller', () => {
  function setup(opts: { encrypted?: boolean; fail?: (path: string) => unknown } = {}) {
    const root = mkdtempSync(join(tmpdir(), 'seafs-thumbs-'));
    dirs.push(root);
    const calls: string[] = [];
    const logs: string[] = [];
    const filler = new ThumbnailFiller(
      { mountpoint: '/mnt/sea', root: join(root, 'thumbnails') },
      {
        thumbnail: async (repo, path, size) => {
          calls.push(`${path}@${size}`);
          const f = opts.fail?.(path);
          if (f) throw f;
          return { type: 'image/png', bytes: pngOf(size / 32, size / 64) };
        },
        encrypted: async () => !!opts.encrypted,
        local: (repo, path) => path === '/Pics/local.png',
        log: (m) => logs.push(m),
      },
    );
    return { root: join(root, 'thumbnails'), calls, logs, filler };
  }
  const entry = (name: string, mtime = 1_700_000_000, id = 'a'.repeat(40)): DirEntry => ({
    type: 'file',
    name,
    id,
    mtime,
    size: 1234,
  });
  const listing = (...es: DirEntry[]) => new Map(es.map((e) => [e.name, e]));

  it('writes the normal and large thumbnails of the pictures only, after the listing answered', async () => {
    const { root, calls, filler } = setup();
    filler.listed('/Pics', 'r', '/Pics', listing(entry('a.jpg'), entry('notes.txt'), entry('local.png')));
    expect(calls).toEqual([]); // nothing asked before readdir answers
    await new Promise((r) => setImmediate(r));
    await filler.idle();
    expect(calls).toEqual(['/Pics/a.jpg@128', '/Pics/a.jpg@256']);
    const uri = 'file:///mnt/sea/Pics/a.jpg';
    for (const [dir, w] of [
      ['normal', 4],
      ['large', 8],
    ] as const) {
      const file = join(root, dir, thumbnailName(uri));
      const png = readFileSync(file);
      expect(readTextChunks(png)?.get('Thumb::URI')).toBe(uri);
      expect(readTextChunks(png)?.get('Thumb::MTime')).toBe('1700000000');
      expect(readTextChunks(png)?.get('Thumb::Size')).toBe('1234');
      expect(PNG.sync.read(png).width).toBe(w);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(join(root, dir)).mode & 0o777).toBe(0o700);
    }
  });

  it('asks again only for a picture that changed, and skips an up-to-date thumbnail already in the cache', async () => {
    const { root, calls, filler } = setup();
    // an up-to-date thumbnail of b.png, made before (by this mount or another program)
    const uri = 'file:///mnt/sea/b.png';
    for (const dir of ['normal', 'large']) {
      mkdirSync(join(root, dir), { recursive: true });
      writeFileSync(
        join(root, dir, thumbnailName(uri)),
        withTextChunks(pngOf(2, 2), { 'Thumb::URI': uri, 'Thumb::MTime': '1700000000', 'Thumb::Size': '1234' }),
      );
    }
    const run = async (m: Map<string, DirEntry>) => {
      filler.listed('/', 'r', '/', m);
      await new Promise((r) => setImmediate(r));
      await filler.idle();
    };
    const first = listing(entry('a.png'), entry('b.png'));
    await run(first);
    expect(calls).toEqual(['/a.png@128', '/a.png@256']);
    await run(first); // the same listing again
    await run(listing(entry('a.png'), entry('b.png'))); // listed afresh, nothing changed
    expect(calls).toHaveLength(2);
    await run(listing(entry('a.png', 1_700_000_500, 'b'.repeat(40)), entry('b.png')));
    expect(calls).toEqual(['/a.png@128', '/a.png@256', '/a.png@128', '/a.png@256']);
    const png = readFileSync(join(root, 'large', thumbnailName('file:///mnt/sea/a.png')));
    expect(readTextChunks(png)?.get('Thumb::MTime')).toBe('1700000500');
  });

  it('a picture written here is asked once it is on the server, in the same listing changed in place', async () => {
    const { calls, filler } = setup();
    const pics = listing(entry('local.png'));
    const run = async () => {
      filler.listed('/Pics', 'r', '/Pics', pics);
      await new Promise((r) => setImmediate(r));
      await filler.idle();
    };
    await run();
    expect(calls).toEqual([]); // still being written here (`local`)
    pics.delete('local.png');
    pics.set('landed.png', entry('landed.png', 1_700_000_900, 'c'.repeat(40))); // the upload landed
    await run();
    expect(calls).toEqual(['/Pics/landed.png@128', '/Pics/landed.png@256']);
  });

  it('is off, saying so, when the thumbnail cache is inside the mount itself', async () => {
    const calls: string[] = [];
    const logs: string[] = [];
    const filler = new ThumbnailFiller(
      { mountpoint: '/home/me', root: '/home/me/.cache/thumbnails' },
      {
        thumbnail: async (repo, path, size) => {
          calls.push(`${path}@${size}`);
          return { type: 'image/png', bytes: pngOf(2, 2) };
        },
        encrypted: async () => false,
        local: () => false,
        log: (m) => logs.push(m),
      },
    );
    filler.listed('/', 'r', '/', listing(entry('a.png')));
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual([]);
    expect(logs).toEqual(['thumbnails: off, the thumbnail cache /home/me/.cache/thumbnails is inside the mount']);
  });

  it('asks nothing in an encrypted library', async () => {
    const { calls, filler } = setup({ encrypted: true });
    filler.listed('/', 'r', '/', listing(entry('a.png')));
    await new Promise((r) => setTimeout(r, 20));
    await filler.idle();
    expect(calls).toEqual([]);
  });

  it('logs a failure once and goes on; a refused picture is not asked again, one the server may get over is', async () => {
    const refused = new ApiError({ kind: 'bad_request', status: 400, operation: 'thumbnail' });
    const down = new ApiError({ kind: 'server', status: 502, operation: 'thumbnail' });
    const { calls, logs, filler } = setup({
      fail: (p) => (p.startsWith('/bad') ? refused : p.startsWith('/down') ? down : null),
    });
    const run = async () => {
      filler.listed('/', 'r', '/', listing(entry('bad1.gif'), entry('bad2.gif'), entry('down.png'), entry('ok.png')));
      await new Promise((r) => setImmediate(r));
      await filler.idle();
    };
    await run();
    expect(calls.filter((c) => c.startsWith('/ok'))).toEqual(['/ok.png@128', '/ok.png@256']);
    expect(logs.filter((l) => l.includes('HTTP 400'))).toHaveLength(1);
    expect(logs.filter((l) => l.includes('HTTP 502'))).toHaveLength(1);
    calls.length = 0;
    await run();
    expect(calls).toEqual(['/down.png@128']);
    expect(logs).toHaveLength(2);
  });
});
