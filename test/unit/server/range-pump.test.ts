// pumpRanges (src/server/store/range-pump.ts): ranges of several files sent
// in order through its two reused buffers, bytes exact across buffer edges;
// a file shorter than its range ends the body early; a receiver that closes
// mid-way makes it reject rather than wait for ever.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { pumpRanges } from '../../../src/server/store/range-pump.js';

const dir = mkdtempSync(join(tmpdir(), 'seafs-pump-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const MiB = 1024 * 1024;

function file(name: string, data: Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, data);
  return p;
}

/** a receiver that copies what it is given only later (as a socket would send it), to catch reused buffers */
function slowSink(): { sink: Writable; got: () => Buffer } {
  const parts: Buffer[] = [];
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _enc, cb) {
      setTimeout(() => {
        parts.push(Buffer.from(chunk));
        cb();
      }, 1);
    },
  });
  return { sink, got: () => Buffer.concat(parts) };
}

describe('pumpRanges', () => {
  it('sends ranges of several files in order, exact across its buffers, with a slow receiver', async () => {
    const a = randomBytes(3 * MiB + 17);
    const b = randomBytes(2 * MiB + 5);
    const pa = file('a', a);
    const pb = file('b', b);
    const { sink, got } = slowSink();
    await pumpRanges(
      [
        { path: pa, start: 10, end: a.length - 1 },
        { path: pb, start: 0, end: MiB + 3 },
        { path: pa, start: 0, end: 0 },
      ],
      sink,
    );
    expect(got().equals(Buffer.concat([a.subarray(10), b.subarray(0, MiB + 4), a.subarray(0, 1)]))).toBe(true);
  });

  it('a file shorter than its range ends the body early', async () => {
    const a = randomBytes(MiB + 100);
    const { sink, got } = slowSink();
    await pumpRanges([{ path: file('short', a), start: 50, end: 5 * MiB }], sink);
    expect(got().equals(a.subarray(50))).toBe(true);
  });

  it('rejects, and does not hang, when the receiver closes mid-way', async () => {
    const a = file('big', randomBytes(8 * MiB));
    const out = new PassThrough({ highWaterMark: 1 }); // nobody reads it: writes wait
    setTimeout(() => out.destroy(), 50);
    await expect(pumpRanges([{ path: a, start: 0, end: 8 * MiB - 1 }], out)).rejects.toThrow();
  });
});
