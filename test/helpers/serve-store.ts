// Reading `seafs serve`'s block store directly (src/server/blocks.ts), for
// tests that check what is on disk: a block is a file of its own or a symlink
// `c:<file id>:<offset>:<size>` (numbers in base 36) into contents/ (`o:` into an older store's
// objects/); a file's block list is a symlink to its one block or JSON.
import { lstatSync, readFileSync, readlinkSync, readdirSync } from 'node:fs';
import path from 'node:path';

const fan = (dataDir: string, dir: string, id: string) => path.join(dataDir, dir, id.slice(0, 2), id.slice(2));

/** the bytes of block `id` as the store holds them */
export function storedBlock(dataDir: string, id: string): Buffer {
  const at = fan(dataDir, 'blocks', id);
  if (!lstatSync(at).isSymbolicLink()) return readFileSync(at);
  const m = /^([co]):([0-9a-f]{40}):([0-9a-z]+):([0-9a-z]+)$/.exec(readlinkSync(at));
  if (!m) throw new Error(`block ${id}: a symlink to ${readlinkSync(at)}`);
  const whole = readFileSync(fan(dataDir, m[1] === 'c' ? 'contents' : 'objects', m[2]));
  const [off, size] = [parseInt(m[3], 36), parseInt(m[4], 36)];
  return whole.subarray(off, off + size);
}

/** the block ids and size recorded for file `id` */
export function storedFile(dataDir: string, id: string): { block_ids: string[]; size: number } {
  const at = fan(dataDir, 'files', id);
  if (lstatSync(at).isSymbolicLink()) {
    const block = readlinkSync(at);
    return { block_ids: [block], size: storedBlock(dataDir, block).length };
  }
  return JSON.parse(readFileSync(at, 'utf8'));
}

/** every block id in the store */
export function storedBlockIds(dataDir: string): string[] {
  const dir = path.join(dataDir, 'blocks');
  return readdirSync(dir).flatMap((d) => readdirSync(path.join(dir, d)).map((f) => d + f));
}
