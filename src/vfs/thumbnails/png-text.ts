// tEXt chunks of a PNG (the Thumbnail Managing Standard keeps a thumbnail's
// Thumb::URI, Thumb::MTime and Thumb::Size in them): added right after IHDR,
// before the image data, where readers that stop at the first IDAT (libpng's
// png_read_info, as gdk-pixbuf uses it) still see them; and read back.
import { crc32 } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

interface Chunk {
  type: string;
  /** where the chunk starts (its length field) and ends (after its CRC) */
  start: number;
  end: number;
  data: Buffer;
}

/** The chunks of a PNG; null when it is not one (signature, lengths or CRCs wrong). */
function chunksOf(png: Buffer): Chunk[] | null {
  if (png.length < 8 || !png.subarray(0, 8).equals(SIGNATURE)) return null;
  const out: Chunk[] = [];
  let i = 8;
  while (i < png.length) {
    if (i + 12 > png.length) return null;
    const len = png.readUInt32BE(i);
    const end = i + 12 + len;
    if (end > png.length) return null;
    const typeAndData = png.subarray(i + 4, i + 8 + len);
    if (crc32(typeAndData) !== png.readUInt32BE(i + 8 + len)) return null;
    out.push({ type: png.toString('latin1', i + 4, i + 8), start: i, end, data: png.subarray(i + 8, i + 8 + len) });
    i = end;
    if (out[out.length - 1].type === 'IEND') break;
  }
  return out[0]?.type === 'IHDR' && out[out.length - 1].type === 'IEND' ? out : null;
}

/** Whether `png` is a whole, well-formed PNG (signature, IHDR first, IEND last, every CRC right). */
export function isPng(png: Buffer): boolean {
  return chunksOf(png) !== null;
}

function textChunk(keyword: string, text: string): Buffer {
  const data = Buffer.concat([Buffer.from(keyword, 'latin1'), Buffer.from([0]), Buffer.from(text, 'latin1')]);
  const typeAndData = Buffer.concat([Buffer.from('tEXt', 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  typeAndData.copy(out, 4);
  out.writeUInt32BE(crc32(typeAndData), 8 + data.length);
  return out;
}

/**
 * `png` with a tEXt chunk per entry of `texts` right after IHDR; tEXt chunks
 * of those keywords already there are dropped. Keywords and texts are
 * Latin-1 (the URIs of the standard are ASCII). Throws when `png` is not a PNG.
 */
export function withTextChunks(png: Buffer, texts: Record<string, string>): Buffer {
  const chunks = chunksOf(png);
  if (!chunks) throw new Error('not a PNG');
  const replaced = new Set(Object.keys(texts));
  const parts: Buffer[] = [SIGNATURE, png.subarray(chunks[0].start, chunks[0].end)];
  for (const [k, v] of Object.entries(texts)) parts.push(textChunk(k, v));
  for (const c of chunks.slice(1)) {
    if (c.type === 'tEXt' && replaced.has(c.data.toString('latin1', 0, Math.max(0, c.data.indexOf(0))))) continue;
    parts.push(png.subarray(c.start, c.end));
  }
  return Buffer.concat(parts);
}

/** The tEXt chunks of a PNG, keyword -> text; null when it is not a PNG. */
export function readTextChunks(png: Buffer): Map<string, string> | null {
  const chunks = chunksOf(png);
  if (!chunks) return null;
  const out = new Map<string, string>();
  for (const c of chunks) {
    if (c.type !== 'tEXt') continue;
    const nul = c.data.indexOf(0);
    if (nul > 0) out.set(c.data.toString('latin1', 0, nul), c.data.toString('latin1', nul + 1));
  }
  return out;
}
