// The image work of the thumbnail endpoint (thumbnails.ts), in pure JS:
// recognise a JPEG or PNG by its bytes (as Pillow does, not by its name),
// read its dimensions from the header before decoding it (a picture too big
// to decode is refused without spending the memory), decode it, scale it down
// to fit a size x size box keeping its aspect ratio (Pillow's thumbnail():
// never up, the same rounding), and encode the result as PNG.
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

export type ImageFormat = 'jpeg' | 'png';

export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

/** RGBA, 8 bits a channel, rows top to bottom */
export interface Raster {
  width: number;
  height: number;
  data: Uint8Array;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The format and size of a JPEG or PNG from its first bytes; null: neither, or a header that does not parse. */
export function readImageHeader(b: Buffer): ImageHeader | null {
  if (b.length >= 24 && b.subarray(0, 8).equals(PNG_SIGNATURE) && b.toString('latin1', 12, 16) === 'IHDR') {
    return { format: 'png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  }
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) {
    // walk the markers up to the frame header (SOFn: C0-CF but C4, C8 and CC)
    let i = 2;
    while (i + 9 < b.length) {
      if (b[i] !== 0xff) return null;
      const marker = b[i + 1];
      if (marker === 0xff) {
        i++; // fill byte
        continue;
      }
      const len = b.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { format: 'jpeg', height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
      }
      if (len < 2) return null;
      i += 2 + len;
    }
  }
  return null;
}

/**
 * The EXIF orientation (1-8) of a JPEG: tag 0x0112 of IFD0 in its APP1 Exif
 * segment; 1 (as stored) when there is none or it does not parse.
 */
export function jpegOrientation(b: Buffer): number {
  let i = 2;
  while (i + 4 <= b.length && b[i] === 0xff) {
    const marker = b[i + 1];
    if (marker === 0xda || marker === 0xd9) break; // image data: no metadata after it
    const len = b.readUInt16BE(i + 2);
    if (marker === 0xe1 && len >= 16 && b.toString('latin1', i + 4, i + 10) === 'Exif\u0000\u0000') {
      const t = i + 10; // the TIFF header
      const end = Math.min(b.length, i + 2 + len);
      const le = b.toString('latin1', t, t + 2) === 'II';
      const u16 = (o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
      const u32 = (o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
      const ifd = t + u32(t + 4);
      if (ifd + 2 > end) return 1;
      for (let k = 0, n = u16(ifd); k < n; k++) {
        const e = ifd + 2 + k * 12;
        if (e + 12 > end) return 1;
        if (u16(e) === 0x0112) {
          const v = u16(e + 8);
          return v >= 1 && v <= 8 ? v : 1;
        }
      }
      return 1;
    }
    i += 2 + len;
  }
  return 1;
}

/** Whether an EXIF orientation swaps width and height (a quarter turn). */
export function swapsSides(orientation: number): boolean {
  return orientation >= 5 && orientation <= 8;
}

/**
 * The raster turned and flipped upright from EXIF orientation `o`, as
 * seahub's get_rotated_image does before it scales (2 mirrored, 3 upside
 * down, 4 flipped, 5 transposed, 6 turned a quarter clockwise, 7
 * transversed, 8 a quarter counter-clockwise).
 */
export function orient(r: Raster, o: number): Raster {
  if (o < 2 || o > 8) return r;
  const { width: w, height: h } = r;
  const swap = swapsSides(o);
  const ow = swap ? h : w;
  const oh = swap ? w : h;
  // the source pixel of target (x, y)
  const from: (x: number, y: number) => [number, number] = {
    2: (x: number, y: number): [number, number] => [w - 1 - x, y],
    3: (x: number, y: number): [number, number] => [w - 1 - x, h - 1 - y],
    4: (x: number, y: number): [number, number] => [x, h - 1 - y],
    5: (x: number, y: number): [number, number] => [y, x],
    6: (x: number, y: number): [number, number] => [y, h - 1 - x],
    7: (x: number, y: number): [number, number] => [w - 1 - y, h - 1 - x],
    8: (x: number, y: number): [number, number] => [w - 1 - y, x],
  }[o]!;
  const out = new Uint8Array(ow * oh * 4);
  for (let y = 0; y < oh; y++)
    for (let x = 0; x < ow; x++) {
      const [sx, sy] = from(x, y);
      const si = (sy * w + sx) * 4;
      out.set(r.data.subarray(si, si + 4), (y * ow + x) * 4);
    }
  return { width: ow, height: oh, data: out };
}

/** Decodes a JPEG or PNG to RGBA; throws on a picture that does not decode. */
export function decodeImage(b: Buffer, format: ImageFormat): Raster {
  if (format === 'png') {
    const png = PNG.sync.read(b);
    return { width: png.width, height: png.height, data: png.data };
  }
  const img = jpeg.decode(b, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 1024 });
  return { width: img.width, height: img.height, data: img.data };
}

/**
 * The size of a w x h picture scaled to fit size x size as Pillow's
 * Image.thumbnail() computes it: unchanged when it fits already, else the side
 * that binds is `size` and the other the whole number nearer the aspect ratio
 * (at least 1).
 */
export function thumbnailSize(w: number, h: number, size: number): { width: number; height: number } {
  if (size >= w && size >= h) return { width: w, height: h };
  const aspect = w / h;
  let x = size;
  let y = size;
  const nearer = (n: number, err: (k: number) => number) => {
    const lo = Math.floor(n);
    const hi = Math.ceil(n);
    return Math.max(err(hi) < err(lo) ? hi : lo, 1);
  };
  if (x / y >= aspect) x = nearer(y * aspect, (k) => Math.abs(aspect - k / y));
  else y = nearer(x / aspect, (k) => (k === 0 ? 0 : Math.abs(aspect - x / k)));
  return { width: x, height: y };
}

/** For each target index, the source indices it covers and their shares (an area average). */
function boxWeights(src: number, dst: number): { first: number; weights: number[] }[] {
  const scale = src / dst;
  const out: { first: number; weights: number[] }[] = [];
  for (let d = 0; d < dst; d++) {
    const from = d * scale;
    const to = Math.min(src, (d + 1) * scale);
    const first = Math.floor(from);
    const weights: number[] = [];
    for (let s = first; s < to; s++) weights.push((Math.min(s + 1, to) - Math.max(s, from)) / scale);
    out.push({ first, weights });
  }
  return out;
}

/**
 * Scales a raster down to w x h by area averaging (each target pixel the
 * mean of the source pixels it covers), colour weighted by alpha so that
 * transparent pixels lend no colour to their neighbours.
 */
export function scaleDown(r: Raster, w: number, h: number): Raster {
  if (w === r.width && h === r.height) return r;
  const xs = boxWeights(r.width, w);
  const ys = boxWeights(r.height, h);
  // horizontal pass, premultiplied: r.height rows of w pixels
  const mid = new Float32Array(r.height * w * 4);
  for (let y = 0; y < r.height; y++) {
    const row = y * r.width * 4;
    for (let x = 0; x < w; x++) {
      const { first, weights } = xs[x];
      let cr = 0;
      let cg = 0;
      let cb = 0;
      let ca = 0;
      for (let k = 0; k < weights.length; k++) {
        const i = row + (first + k) * 4;
        const a = r.data[i + 3] * weights[k];
        cr += r.data[i] * a;
        cg += r.data[i + 1] * a;
        cb += r.data[i + 2] * a;
        ca += a;
      }
      const o = (y * w + x) * 4;
      mid[o] = cr;
      mid[o + 1] = cg;
      mid[o + 2] = cb;
      mid[o + 3] = ca;
    }
  }
  const out = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) {
    const { first, weights } = ys[y];
    for (let x = 0; x < w; x++) {
      let cr = 0;
      let cg = 0;
      let cb = 0;
      let ca = 0;
      for (let k = 0; k < weights.length; k++) {
        const i = ((first + k) * w + x) * 4;
        cr += mid[i] * weights[k];
        cg += mid[i + 1] * weights[k];
        cb += mid[i + 2] * weights[k];
        ca += mid[i + 3] * weights[k];
      }
      const o = (y * w + x) * 4;
      if (ca > 0) {
        out[o] = Math.round(cr / ca);
        out[o + 1] = Math.round(cg / ca);
        out[o + 2] = Math.round(cb / ca);
      }
      out[o + 3] = Math.round(ca);
    }
  }
  return { width: w, height: h, data: out };
}

/** PNG of a raster: RGB when every pixel is opaque (as a JPEG's thumbnail is), else RGBA. */
export function encodePng(r: Raster): Buffer {
  let opaque = true;
  for (let i = 3; i < r.data.length; i += 4) {
    if (r.data[i] !== 255) {
      opaque = false;
      break;
    }
  }
  const png = new PNG({ width: r.width, height: r.height });
  png.data = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength);
  return PNG.sync.write(png, { colorType: opaque ? 2 : 6 });
}

/**
 * The whole thumbnail of a JPEG or PNG: decoded, turned upright by its EXIF
 * orientation (a JPEG's; seahub turns before it scales, here it is scaled
 * first: less to turn, the same result), scaled to fit size x size, as PNG.
 * Throws when the picture does not decode.
 */
export function renderThumbnail(bytes: Buffer, format: ImageFormat, size: number): Buffer {
  const image = decodeImage(bytes, format);
  const o = format === 'jpeg' ? jpegOrientation(bytes) : 1;
  const swap = swapsSides(o);
  const fit = swap ? thumbnailSize(image.height, image.width, size) : thumbnailSize(image.width, image.height, size);
  const scaled = swap ? scaleDown(image, fit.height, fit.width) : scaleDown(image, fit.width, fit.height);
  return encodePng(orient(scaled, o));
}
