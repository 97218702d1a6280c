// Thumbnails without downloading the pictures: a folder of 50 JPEG and PNG
// pictures listed through a mount fills the freedesktop thumbnail cache
// ($XDG_CACHE_HOME/thumbnails/{normal,large}) from the server's thumbnail
// endpoint, each a PNG named and tagged as the Thumbnail Managing Standard
// says for the file as the mount shows it; a proxy in front of the server
// sees the thumbnail calls and not one download. --no-thumbnails writes none.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { mountLibrary, scratchDir, sleep } from '../helpers/mount.js';
import { pollUntil } from '../helpers/poll.js';
import { uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['Photos']);
const COUNT = 50;

/** picture i: a JPEG or a PNG of a few dozen pixels, a colour of its own */
function picture(i: number): { name: string; bytes: Buffer } {
  const w = 24 + (i % 7) * 5;
  const h = 16 + (i % 5) * 6;
  const data = Buffer.alloc(w * h * 4);
  for (let p = 0; p < w * h; p++) data.set([(i * 37) % 256, (i * 91) % 256, (p * 3) % 256, 255], p * 4);
  // a space and an accent in some names: their URIs are escaped
  const base = i % 10 === 0 ? `été ${i}` : `pic-${i}`;
  if (i % 2 === 0) return { name: `${base}.jpg`, bytes: jpeg.encode({ width: w, height: h, data }, 80).data };
  const png = new PNG({ width: w, height: h });
  png.data = data;
  return { name: `${base}.png`, bytes: PNG.sync.write(png) };
}

/** file:// URI of a path as GLib escapes it: what encodeURIComponent keeps, plus $&+,:=@ and the slashes */
function uriOf(p: string): string {
  const keep = (seg: string) =>
    encodeURIComponent(seg).replace(/%(24|26|2B|2C|3A|3D|40)/g, (m) => decodeURIComponent(m));
  return 'file://' + p.split('/').map(keep).join('/');
}

/** the tEXt chunks of a PNG, read with a walk of its own */
function texts(png: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 8; i + 8 <= png.length;) {
    const len = png.readUInt32BE(i);
    if (png.toString('latin1', i + 4, i + 8) === 'tEXt') {
      const body = png.subarray(i + 8, i + 8 + len);
      const nul = body.indexOf(0);
      out.set(body.toString('latin1', 0, nul), body.toString('latin1', nul + 1));
    }
    i += 12 + len;
  }
  return out;
}

const countIn = (dir: string) => {
  try {
    return readdirSync(dir).filter((n) => /^[0-9a-f]{32}\.png$/.test(n)).length;
  } catch {
    return 0;
  }
};

let proxy: FaultProxy;
const requests: string[] = [];

beforeAll(async () => {
  const repo = ctx.repos.Photos;
  await ctx.api.mkdir(repo, '/pics');
  const files: Record<string, Buffer> = { 'notes.txt': Buffer.from('not a picture') };
  for (let i = 0; i < COUNT; i++) {
    const p = picture(i);
    files[p.name] = p.bytes;
  }
  const up = await uploadTo(await ctx.api.uploadLink(repo, '/pics'), '/pics', files);
  expect(up.status).toBe(200);
  proxy = await startFaultProxy({
    target: ctx.server.url,
    seed: 1,
    answer: (method, url) => {
      requests.push(`${method} ${url}`);
      return null;
    },
  });
  return () => proxy.close();
});

describe('thumbnails of a folder listed through the mount', () => {
  it('50 pictures: 50 normal and 50 large thumbnails per the standard, and no picture downloaded', async () => {
    const xdg = mkdtempSync(path.join(scratchDir(), 'xdg-'));
    const m = await mountLibrary(
      { ...ctx.server, url: proxy.url },
      { library: 'Photos', env: { XDG_CACHE_HOME: xdg } },
    );
    const names = (await readdir(path.join(m.mnt, 'pics'))).filter((n) => n !== 'notes.txt');
    expect(names).toHaveLength(COUNT);
    const root = path.join(xdg, 'thumbnails');
    const took = await pollUntil(
      () => countIn(path.join(root, 'normal')) === COUNT && countIn(path.join(root, 'large')) === COUNT,
      60_000,
    );
    expect(
      took,
      `thumbnails written: ${countIn(path.join(root, 'normal'))} normal, ${countIn(path.join(root, 'large'))} large\n${m.output()}`,
    ).not.toBeNull();
    const mnt = realpathSync(m.mnt);
    for (const name of names) {
      const file = path.join(m.mnt, 'pics', name);
      const st = statSync(file);
      const uri = uriOf(`${mnt}/pics/${name}`);
      const hash = createHash('md5').update(uri).digest('hex');
      for (const [dir, box] of [
        ['normal', 128],
        ['large', 256],
      ] as const) {
        const thumb = path.join(root, dir, `${hash}.png`);
        const png = readFileSync(thumb);
        const t = texts(png);
        expect(t.get('Thumb::URI')).toBe(uri);
        expect(t.get('Thumb::MTime')).toBe(String(Math.floor(st.mtimeMs / 1000)));
        expect(t.get('Thumb::Size')).toBe(String(st.size));
        const img = PNG.sync.read(png);
        expect(Math.max(img.width, img.height)).toBeLessThanOrEqual(box);
        expect(img.width).toBeGreaterThan(0);
        expect(statSync(thumb).mode & 0o777).toBe(0o600);
      }
    }
    expect(statSync(path.join(root, 'large')).mode & 0o777).toBe(0o700);
    // the server made the thumbnails: nothing of a file's bytes came through the proxy
    expect(requests.filter((r) => r.includes('/thumbnail/'))).toHaveLength(2 * COUNT);
    expect(requests.filter((r) => /\/file\/\?|\/seafhttp\//.test(r))).toEqual([]);
    expect(proxy.counts.downloadBytes).toBe(0);
    // listed again: nothing more is asked
    requests.length = 0;
    await readdir(path.join(m.mnt, 'pics'));
    await sleep(500);
    expect(requests.filter((r) => r.includes('/thumbnail/'))).toEqual([]);
    expect((await m.unmount()).code).toBe(0);
  });

  it('--no-thumbnails writes none and asks for none', async () => {
    const xdg = mkdtempSync(path.join(scratchDir(), 'xdg-'));
    requests.length = 0;
    const m = await mountLibrary(
      { ...ctx.server, url: proxy.url },
      { library: 'Photos', env: { XDG_CACHE_HOME: xdg }, extraArgs: ['--no-thumbnails'] },
    );
    expect(await readdir(path.join(m.mnt, 'pics'))).toHaveLength(COUNT + 1);
    // the mount above wrote its first thumbnails within this time
    await sleep(1500);
    expect(readdirSync(xdg)).toEqual([]);
    expect(requests.filter((r) => r.includes('/thumbnail/'))).toEqual([]);
    expect((await m.unmount()).code).toBe(0);
  });
});
