// Deterministic data sets shared by the seeding code, the local fixtures and memfs, so every contender sees
// the same names and sizes.
import { randomFillSync } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { once } from 'node:events';

/** mulberry32: a tiny seeded PRNG returning floats in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pad = (n, w) => String(n).padStart(w, '0');

/** The listing tree: `files` files spread evenly over `folders` folders, sizes 1 B .. `maxSize` (20 KiB). */
export function treeLayout(folders, files, seed = 1, maxSize = 20480) {
  const rnd = prng(seed);
  const out = [];
  for (let i = 0; i < files; i++) {
    const folder = `d${pad(i % folders, 3)}`;
    out.push({
      folder,
      name: `f${pad(i, 5)}.bin`,
      rel: `${folder}/f${pad(i, 5)}.bin`,
      size: 1 + Math.floor(rnd() * maxSize),
    });
  }
  return out;
}

/** What `find -size +10k` must print for a layout: sizes above 10 KiB once rounded up to KiB. */
export const findThresholdKiB = 10;
export function expectedFindCount(layout) {
  return layout.filter((f) => Math.ceil(f.size / 1024) > findThresholdKiB).length;
}

/** The tarball's files: `count` files of 1..64 KiB in folders of 100. */
export function smallFilesLayout(count, seed = 2) {
  const rnd = prng(seed);
  const out = [];
  for (let i = 0; i < count; i++) {
    const folder = `s${pad(Math.floor(i / 100), 2)}`;
    out.push({
      folder,
      name: `n${pad(i, 5)}.dat`,
      rel: `${folder}/n${pad(i, 5)}.dat`,
      size: 1024 + Math.floor(rnd() * 63 * 1024),
    });
  }
  return out;
}

/** A random pool that file contents are sliced from (different offsets and lengths give distinct files). */
const pool = randomFillSync(Buffer.allocUnsafe(1 << 20));
export function contentFor(index, size) {
  const off = (index * 7919) % (pool.length - size);
  return pool.subarray(off, off + size);
}

/** Write `layout` as real files under `dir` (the tarball's source and the HTTP contender's upload set). */
export function writeLayout(dir, layout) {
  layout.forEach((f, i) => {
    const p = join(dir, f.rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, contentFor(i, f.size));
  });
}

/** A file of `bytes` random bytes, reused when it already has that size. */
export async function randomFile(path, bytes) {
  if (existsSync(path) && statSync(path).size === bytes) return;
  const out = createWriteStream(path);
  const buf = Buffer.allocUnsafe(4 << 20);
  for (let done = 0; done < bytes;) {
    const n = Math.min(buf.length, bytes - done);
    randomFillSync(buf, 0, n);
    if (!out.write(Buffer.from(buf.subarray(0, n)))) await once(out, 'drain');
    done += n;
  }
  out.end();
  await once(out, 'finish');
}

/** Offsets for the random-read workload: 4 KiB aligned, fixed seed, identical for every contender. */
export function randomOffsets(fileSize, count, blockSize, seed = 3) {
  const rnd = prng(seed);
  const blocks = Math.floor(fileSize / blockSize);
  return Array.from({ length: count }, () => Math.floor(rnd() * blocks) * blockSize);
}
