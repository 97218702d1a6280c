// The image work of serve's thumbnail endpoint: Pillow's thumbnail sizes,
// EXIF orientations as seahub applies them, headers read without decoding,
// and the area-average scaling.
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import {
  orient,
  readImageHeader,
  scaleDown,
  thumbnailSize,
  type Raster,
} from '../../../src/server/web-api/thumbnail-image.js';

/** a w x h raster whose red channel holds each pixel's index */
function indexed(w: number, h: number): Raster {
  const data = new Uint8Array(w * h * 4);
  for (let i = 0; i < w * h; i++) data.set([i, 0, 0, 255], i * 4);
  return { width: w, height: h, data };
}
const rows = (r: Raster) =>
  Array.from({ length: r.height }, (_, y) => Array.from({ length: r.width }, (_, x) => r.data[(y * r.width + x) * 4]));

describe('thumbnailSize (Pillow Image.thumbnail)', () => {
  it('fits the larger side, rounds the other to the nearer aspect, never scales up', () => {
    expect(thumbnailSize(300, 200, 128)).toEqual({ width: 128, height: 85 });
    expect(thumbnailSize(200, 300, 128)).toEqual({ width: 85, height: 128 });
    expect(thumbnailSize(1000, 1, 128)).toEqual({ width: 128, height: 1 });
    expect(thumbnailSize(100, 400, 256)).toEqual({ width: 64, height: 256 });
    expect(thumbnailSize(50, 40, 256)).toEqual({ width: 50, height: 40 });
    expect(thumbnailSize(256, 100, 256)).toEqual({ width: 256, height: 100 });
  });
});

describe('orient (EXIF orientations 1-8)', () => {
  it('mirrors, turns and flips as seahub get_rotated_image does', () => {
    const r = indexed(3, 2); // [0 1 2] / [3 4 5]
    expect(rows(orient(r, 1))).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(rows(orient(r, 2))).toEqual([
      [2, 1, 0],
      [5, 4, 3],
    ]);
    expect(rows(orient(r, 3))).toEqual([
      [5, 4, 3],
      [2, 1, 0],
    ]);
    expect(rows(orient(r, 4))).toEqual([
      [3, 4, 5],
      [0, 1, 2],
    ]);
    expect(rows(orient(r, 5))).toEqual([
      [0, 3],
      [1, 4],
      [2, 5],
    ]);
    expect(rows(orient(r, 6))).toEqual([
      [3, 0],
      [4, 1],
      [5, 2],
    ]);
    expect(rows(orient(r, 7))).toEqual([
      [5, 2],
      [4, 1],
      [3, 0],
    ]);
    expect(rows(orient(r, 8))).toEqual([
      [2, 5],
      [1, 4],
      [0, 3],
    ]);
  });
});

describe('readImageHeader', () => {
  it('reads JPEG and PNG sizes from their headers and nothing else', () => {
    const data = Buffer.alloc(7 * 5 * 4, 255);
    expect(readImageHeader(jpeg.encode({ width: 7, height: 5, data }, 80).data)).toEqual({
      format: 'jpeg',
      width: 7,
      height: 5,
    });
    const png = new PNG({ width: 9, height: 4 });
    expect(readImageHeader(PNG.sync.write(png))).toEqual({ format: 'png', width: 9, height: 4 });
    expect(readImageHeader(Buffer.from('GIF89a......'))).toBeNull();
    expect(readImageHeader(Buffer.alloc(0))).toBeNull();
  });
});

describe('scaleDown', () => {
  it('averages the pixels each target pixel covers, transparent ones lending no colour', () => {
    const r: Raster = {
      width: 4,
      height: 1,
      data: Uint8Array.from([200, 0, 0, 255, 100, 0, 0, 255, 50, 0, 0, 255, 255, 255, 255, 0]),
    };
    const out = scaleDown(r, 2, 1);
    expect([...out.data]).toEqual([150, 0, 0, 255, 50, 0, 0, 128]);
  });
});
