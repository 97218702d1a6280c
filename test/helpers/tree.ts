// Deterministic test trees for the rclone round trip: a seeded PRNG picks the
// layout and sizes; file bytes come from AES-256-CTR keyed by (seed, path),
// which is a seeded stream too, only fast enough for a 200 MiB file.
import { createCipheriv, createHash } from 'node:crypto';
import { mkdirSync, openSync, closeSync, writeSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface TreeFile {
  path: string; // relative, '/'-separated
  size: number;
  sha256: string;
}

export interface Tree {
  root: string;
  files: TreeFile[];
  /** Every folder (relative), parents included, empty ones too. */
  dirs: string[];
  big: TreeFile;
}

/** mulberry32: tiny, seeded, good enough to pick names and sizes. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CHUNK = 4 << 20;

/** Writes `size` seeded bytes to `file` and returns their sha256. */
export function writeSeeded(file: string, size: number, seed: number, key: string): string {
  const k = createHash('sha256').update(`${seed}:${key}`).digest();
  const cipher = createCipheriv('aes-256-ctr', k, Buffer.alloc(16));
  const zeros = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
  const hash = createHash('sha256');
  const fd = openSync(file, 'w');
  try {
    for (let left = size; left > 0;) {
      const n = Math.min(left, zeros.length);
      const chunk = cipher.update(n === zeros.length ? zeros : zeros.subarray(0, n));
      writeSync(fd, chunk);
      hash.update(chunk);
      left -= n;
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

// Folders: spaces, accents (precomposed é, ü), CJK, deep nesting, an empty one.
const DIRS = [
  'docs',
  'docs/a b c',
  'docs/a b c/Ünïcödé é ü',
  '日本',
  '日本/資料 2024',
  'deep/1/2/3/4/5/6',
  'zeros',
  'spaces  double',
  'mixed/über/çà',
  'big',
  'empty dir',
];
const STEMS = ['file', 'é-note', 'über daten', '日本語', 'résumé final', 'a b', 'x'];
const EXTS = ['.txt', '.bin', '.dat', '', '.tar.gz'];

/**
 * Builds the tree under `root`: `count` small files (about 1 in 9 empty, a
 * few up to 2 MiB) spread over the folders, plus one big file of `bigSize`.
 */
export function generateTree(root: string, seed: number, count: number, bigSize: number): Tree {
  const rnd = prng(seed);
  const dirs = new Set<string>();
  for (const d of DIRS) {
    const parts = d.split('/');
    for (let i = 1; i <= parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  for (const d of dirs) mkdirSync(join(root, d), { recursive: true });
  const fileDirs = ['', ...[...dirs].filter((d) => d !== 'empty dir' && d !== 'big')];
  const files: TreeFile[] = [];
  const used = new Set<string>();
  for (let i = 0; files.length < count; i++) {
    const dir = i < 20 ? 'zeros' : fileDirs[Math.floor(rnd() * fileDirs.length)]!;
    const name = `${STEMS[Math.floor(rnd() * STEMS.length)]} ${i}${EXTS[Math.floor(rnd() * EXTS.length)]}`;
    const rel = dir ? `${dir}/${name}` : name;
    if (used.has(rel)) continue;
    used.add(rel);
    const r = rnd();
    const size =
      dir === 'zeros' || r < 0.11
        ? 0
        : r < 0.95
          ? 1 + Math.floor(rnd() * 32 * 1024)
          : 100_000 + Math.floor(rnd() * 2 * 1024 * 1024);
    files.push({ path: rel, size, sha256: writeSeeded(join(root, rel), size, seed, rel) });
  }
  const bigRel = 'big/big file é 日本.bin';
  const big = { path: bigRel, size: bigSize, sha256: writeSeeded(join(root, bigRel), bigSize, seed, bigRel) };
  files.push(big);
  return { root, files, dirs: [...dirs].sort(), big };
}

// one definition, in the shared helpers; re-exported for the tests that import it from here
export { sha256File } from './api-check.js';

/** Files and folders found under `root` (relative paths), for comparing a download. */
export function walk(root: string): { files: Map<string, number>; dirs: Set<string> } {
  const files = new Map<string, number>();
  const dirs = new Set<string>();
  const visit = (rel: string) => {
    for (const ent of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${ent.name}` : ent.name;
      if (ent.isDirectory()) {
        dirs.add(p);
        visit(p);
      } else files.set(p, statSync(join(root, p)).size);
    }
  };
  visit('');
  return { files, dirs };
}
