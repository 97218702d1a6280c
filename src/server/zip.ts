// A zip archive of stored entries (no compression), what the file server
// hands out for a folder or several items downloaded at once
// (/seafhttp/zip/<token>), made while it is sent: each entry's bytes are
// read from the store as the client takes them, its CRC computed on the way
// and written after them in a data descriptor (flag bit 3), so memory does
// not grow with the archive. The length is known before the first byte (every
// size is), so the answer still carries a Content-Length. Zip64 records are
// added where the classic fields overflow (over 65534 entries, or sizes and
// offsets of 4 GiB and more).
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';

export interface ZipEntry {
  /** the path inside the archive, '/'-separated; folders end with '/' */
  name: string;
  /** the bytes the entry holds: exactly that many must come from `open` */
  size: number;
  mtime: number; // epoch seconds
  /** the entry's bytes, opened when the archive reaches it; not called for folders and empty files */
  open(): Promise<Readable>;
}

const LOCAL = 30;
const CENTRAL = 46;
const END = 22;
const END64 = 56;
const LOCATOR64 = 20;
const MAX16 = 0xffff;
const MAX32 = 0xffffffff;
/** flags: sizes and CRC follow the data (bit 3), names are UTF-8 (bit 11) */
const FLAGS = 0x0808;

/** MS-DOS date and time of an epoch second (local time, 2 s steps), as zip headers hold them. */
function dosTime(sec: number): { time: number; date: number } {
  const d = new Date(sec * 1000);
  const year = Math.max(1980, d.getFullYear());
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | Math.floor(d.getSeconds() / 2),
    date: ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

/** An entry too large for 32-bit sizes: a zip64 local extra field and 8-byte sizes in its descriptor. */
const big = (size: number) => size >= MAX32;

const localLength = (name: Buffer, size: number) => LOCAL + name.length + (big(size) ? 20 : 0);
const descriptorLength = (size: number) => (big(size) ? 24 : 16);

/** What the central directory needs of an entry, once its bytes went out. */
interface Written {
  name: Buffer;
  size: number;
  crc: number;
  offset: number;
  time: number;
  date: number;
  dir: boolean;
}

function localHeader(name: Buffer, size: number, time: number, date: number): Buffer {
  const b = Buffer.alloc(localLength(name, size));
  b.writeUInt32LE(0x04034b50, 0);
  b.writeUInt16LE(big(size) ? 45 : 20, 4); // version needed
  b.writeUInt16LE(FLAGS, 6);
  b.writeUInt16LE(0, 8); // stored
  b.writeUInt16LE(time, 10);
  b.writeUInt16LE(date, 12);
  // CRC and sizes are 0 here: the descriptor after the data holds them
  if (big(size)) {
    b.writeUInt32LE(MAX32, 18);
    b.writeUInt32LE(MAX32, 22);
  }
  b.writeUInt16LE(name.length, 26);
  b.writeUInt16LE(big(size) ? 20 : 0, 28);
  name.copy(b, LOCAL);
  if (big(size)) {
    const x = LOCAL + name.length;
    b.writeUInt16LE(0x0001, x);
    b.writeUInt16LE(16, x + 2); // two 8-byte sizes, 0: the descriptor holds them
  }
  return b;
}

function descriptor(size: number, crc: number): Buffer {
  const b = Buffer.alloc(descriptorLength(size));
  b.writeUInt32LE(0x08074b50, 0);
  b.writeUInt32LE(crc, 4);
  if (big(size)) {
    b.writeBigUInt64LE(BigInt(size), 8);
    b.writeBigUInt64LE(BigInt(size), 16);
  } else {
    b.writeUInt32LE(size, 8);
    b.writeUInt32LE(size, 12);
  }
  return b;
}

/** The zip64 extra field of a central record: the values that overflow, in this order. */
function central64(size: number, offset: number): number[] {
  return [...(size >= MAX32 ? [size, size] : []), ...(offset >= MAX32 ? [offset] : [])];
}

function centralRecord(w: Written): Buffer {
  const wide = central64(w.size, w.offset);
  const extra = wide.length ? 4 + 8 * wide.length : 0;
  const b = Buffer.alloc(CENTRAL + w.name.length + extra);
  b.writeUInt32LE(0x02014b50, 0);
  b.writeUInt16LE(wide.length ? 0x032d : 0x0314, 4); // made by: unix, 4.5 or 2.0
  b.writeUInt16LE(wide.length ? 45 : 20, 6);
  b.writeUInt16LE(FLAGS, 8);
  b.writeUInt16LE(0, 10);
  b.writeUInt16LE(w.time, 12);
  b.writeUInt16LE(w.date, 14);
  b.writeUInt32LE(w.crc, 16);
  b.writeUInt32LE(Math.min(w.size, MAX32), 20);
  b.writeUInt32LE(Math.min(w.size, MAX32), 24);
  b.writeUInt16LE(w.name.length, 28);
  b.writeUInt16LE(extra, 30);
  b.writeUInt32LE(((w.dir ? 0o40755 : 0o100644) << 16) >>> 0, 38);
  b.writeUInt32LE(Math.min(w.offset, MAX32), 42);
  w.name.copy(b, CENTRAL);
  if (extra) {
    const x = CENTRAL + w.name.length;
    b.writeUInt16LE(0x0001, x);
    b.writeUInt16LE(extra - 4, x + 2);
    wide.forEach((v, i) => b.writeBigUInt64LE(BigInt(v), x + 4 + 8 * i));
  }
  return b;
}

const centralLength = (name: Buffer, size: number, offset: number) => {
  const wide = central64(size, offset).length;
  return CENTRAL + name.length + (wide ? 4 + 8 * wide : 0);
};

/** The end records: zip64 ones first when a count, size or offset overflows the classic fields. */
function endRecords(count: number, cdSize: number, cdOffset: number): Buffer {
  const wide = count >= MAX16 || cdSize >= MAX32 || cdOffset >= MAX32;
  const b = Buffer.alloc((wide ? END64 + LOCATOR64 : 0) + END);
  let at = 0;
  if (wide) {
    b.writeUInt32LE(0x06064b50, 0);
    b.writeBigUInt64LE(BigInt(END64 - 12), 4);
    b.writeUInt16LE(0x032d, 12);
    b.writeUInt16LE(45, 14);
    b.writeBigUInt64LE(BigInt(count), 24);
    b.writeBigUInt64LE(BigInt(count), 32);
    b.writeBigUInt64LE(BigInt(cdSize), 40);
    b.writeBigUInt64LE(BigInt(cdOffset), 48);
    b.writeUInt32LE(0x07064b50, END64);
    b.writeBigUInt64LE(BigInt(cdOffset + cdSize), END64 + 8);
    b.writeUInt32LE(1, END64 + 16); // one disk
    at = END64 + LOCATOR64;
  }
  b.writeUInt32LE(0x06054b50, at);
  b.writeUInt16LE(Math.min(count, MAX16), at + 8);
  b.writeUInt16LE(Math.min(count, MAX16), at + 10);
  b.writeUInt32LE(Math.min(cdSize, MAX32), at + 12);
  b.writeUInt32LE(Math.min(cdOffset, MAX32), at + 16);
  return b;
}

/** The byte length of the archive of `entries`, before any of it is made. */
export function zipLength(entries: Pick<ZipEntry, 'name' | 'size'>[]): number {
  let offset = 0;
  let cd = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    cd += centralLength(name, e.size, offset);
    offset += localLength(name, e.size) + e.size + descriptorLength(e.size);
  }
  return offset + cd + endRecords(entries.length, cd, offset).length;
}

/**
 * The archive of `entries`, piece by piece: an entry's content is opened when
 * the archive reaches it and passed on chunk by chunk as it is pulled. A
 * content that ends short or long of its size throws (the answer is cut).
 */
export async function* zipStream(entries: ZipEntry[]): AsyncGenerator<Buffer> {
  const written: Written[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const { time, date } = dosTime(e.mtime);
    const head = localHeader(name, e.size, time, date);
    yield head;
    let crc = 0;
    let n = 0;
    if (e.size > 0) {
      for await (const chunk of await e.open()) {
        const b = chunk as Buffer;
        crc = crc32(b, crc);
        n += b.length;
        if (n > e.size) break;
        yield b;
      }
      if (n !== e.size) throw new Error(`zip entry ${e.name}: ${n} bytes where ${e.size} were listed`);
    }
    yield descriptor(e.size, crc);
    written.push({ name, size: e.size, crc, offset, time, date, dir: e.name.endsWith('/') });
    offset += head.length + e.size + descriptorLength(e.size);
  }
  let cdSize = 0;
  for (const w of written) {
    const rec = centralRecord(w);
    cdSize += rec.length;
    yield rec;
  }
  yield endRecords(written.length, cdSize, offset);
}
