// The archive `seafs serve` streams for a folder download (src/server/zip.ts):
// made while it is read (an entry is opened only when the archive reaches it),
// of the length announced up front, and accepted by Info-ZIP's unzip and by
// Python's zipfile, zip64 records included when the entries overflow 16 bits.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { zipLength, zipStream, type ZipEntry } from '../../../src/server/zip.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-zip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const entry = (name: string, data: Buffer, mtime = 1_700_000_000): ZipEntry => ({
  name,
  size: data.length,
  mtime,
  open: async () => Readable.from([data.subarray(0, data.length >> 1), data.subarray(data.length >> 1)]),
});

async function whole(entries: ZipEntry[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of zipStream(entries)) parts.push(b);
  return Buffer.concat(parts);
}

/** name -> sha256 of each member, as Python's zipfile reads them after its own CRC check of every member. */
function readWithPython(file: string): Record<string, string> {
  const script = [
    'import hashlib, json, sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1])',
    'assert z.testzip() is None',
    'print(json.dumps({i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}))',
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script, file], { encoding: 'utf8', maxBuffer: 64 << 20 }));
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the streamed zip archive', () => {
  it('is what unzip -t and Python zipfile accept, with every member as it was, and as long as announced', async () => {
    const files: Record<string, Buffer> = {
      'top/a.txt': Buffer.from('alpha\n'),
      'top/empty.txt': Buffer.alloc(0),
      'top/sub/été 文件.bin': randomBytes(3 * 1024 * 1024 + 17),
      'top/sub/b.txt': Buffer.from('beta'),
    };
    const entries = [
      ...Object.entries(files).map(([n, d]) => entry(n, d)),
      { name: 'top/hollow/', size: 0, mtime: 1_700_000_000, open: () => Promise.reject(new Error('a folder')) },
    ];
    const zip = await whole(entries);
    expect(zip.length).toBe(zipLength(entries));
    const file = path.join(dir, 'plain.zip');
    writeFileSync(file, zip);
    expect(execFileSync('unzip', ['-t', file], { encoding: 'utf8' })).toMatch(/No errors detected/);
    const read = readWithPython(file);
    expect(read).toEqual({
      ...Object.fromEntries(Object.entries(files).map(([n, d]) => [n, sha256(d)])),
      'top/hollow/': sha256(Buffer.alloc(0)),
    });
  });

  it('opens an entry only when the archive reaches it, and passes its bytes on before the entry has ended', async () => {
    const first = new PassThrough();
    const opened: string[] = [];
    const entries: ZipEntry[] = [
      {
        name: 'one.bin',
        size: 8,
        mtime: 0,
        open: async () => {
          opened.push('one.bin');
          return first;
        },
      },
      {
        name: 'two.bin',
        size: 2,
        mtime: 0,
        open: async () => {
          opened.push('two.bin');
          return Readable.from([Buffer.from('zz')]);
        },
      },
    ];
    const it = zipStream(entries);
    const header = (await it.next()).value as Buffer;
    expect(header.readUInt32LE(0)).toBe(0x04034b50);
    expect(opened).toEqual([]); // nothing read for a header
    first.write(Buffer.from('1234'));
    expect(((await it.next()).value as Buffer).toString()).toBe('1234'); // out before the entry's end
    expect(opened).toEqual(['one.bin']);
    first.end(Buffer.from('5678'));
    expect(((await it.next()).value as Buffer).toString()).toBe('5678');
    expect(opened).toEqual(['one.bin']);
    const rest: Buffer[] = [];
    for await (const b of it) rest.push(b);
    expect(opened).toEqual(['one.bin', 'two.bin']);
  });

  it('an entry whose content ends short of its listed size throws (the answer is cut, not a wrong archive)', async () => {
    const short: ZipEntry = {
      name: 's.txt',
      size: 10,
      mtime: 0,
      open: async () => Readable.from([Buffer.from('abc')]),
    };
    await expect(whole([short])).rejects.toThrow(/3 bytes where 10/);
    const long: ZipEntry = { name: 'l.txt', size: 2, mtime: 0, open: async () => Readable.from([Buffer.from('abc')]) };
    await expect(whole([long])).rejects.toThrow(/where 2/);
  });

  it('over 65534 entries: zip64 end records, which unzip and Python zipfile read', async () => {
    const n = 66_000;
    const entries = Array.from({ length: n }, (_, i) => entry(`d${i % 7}/f${i}.txt`, Buffer.from(String(i))));
    const zip = await whole(entries);
    expect(zip.length).toBe(zipLength(entries));
    // the classic end record says 0xffff; the zip64 one, found through its locator, holds the count
    const end = zip.length - 22;
    expect(zip.readUInt16LE(end + 10)).toBe(0xffff);
    expect(zip.readUInt32LE(end - 20)).toBe(0x07064b50);
    const end64 = Number(zip.readBigUInt64LE(end - 20 + 8));
    expect(zip.readUInt32LE(end64)).toBe(0x06064b50);
    expect(Number(zip.readBigUInt64LE(end64 + 32))).toBe(n);
    const file = path.join(dir, 'many.zip');
    writeFileSync(file, zip);
    expect(execFileSync('unzip', ['-tq', file], { encoding: 'utf8', maxBuffer: 64 << 20 })).toMatch(/No errors/);
    const read = readWithPython(file);
    expect(Object.keys(read).length).toBe(n);
    expect(read[`d${65998 % 7}/f65998.txt`]).toBe(sha256(Buffer.from('65998')));
  });
});
