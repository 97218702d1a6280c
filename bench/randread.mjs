#!/usr/bin/env node
// Random 4 KiB reads: node bench/randread.mjs FILE COUNT BLOCKSIZE SEED [REFERENCE]
// One pread at a time at seeded, block-aligned offsets; prints {"ms":..,"count":..,"bytes":..} as JSON.
// With REFERENCE (a local copy of FILE) every block is compared after the timed loop.
import { open } from 'node:fs/promises';
import { randomOffsets } from './lib/dataset.mjs';

const [file, count = '2000', blockSize = '4096', seed = '3', reference] = process.argv.slice(2);
const fh = await open(file, 'r');
const { size } = await fh.stat();
const offsets = randomOffsets(size, Number(count), Number(blockSize), Number(seed));
const buf = Buffer.alloc(Number(blockSize));
const got = reference ? Buffer.alloc(buf.length * offsets.length) : null;
let bytes = 0;
const t0 = process.hrtime.bigint();
for (const [i, off] of offsets.entries()) {
  const { bytesRead } = await fh.read(buf, 0, buf.length, off);
  if (bytesRead !== buf.length) throw new Error(`short read at ${off}: ${bytesRead}`);
  if (got) buf.copy(got, i * buf.length);
  bytes += bytesRead;
}
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
await fh.close();
if (reference) {
  const ref = await open(reference, 'r');
  const want = Buffer.alloc(buf.length);
  for (const [i, off] of offsets.entries()) {
    await ref.read(want, 0, want.length, off);
    if (!want.equals(got.subarray(i * buf.length, (i + 1) * buf.length)))
      throw new Error(`wrong data at offset ${off}`);
  }
  await ref.close();
}
process.stdout.write(JSON.stringify({ ms, count: offsets.length, bytes }) + '\n');
