// The ids and on-disk forms of Seafile blocks and file records: a block's id
// is the sha1 of its bytes, a file's id the sha1 of its object (fileIdOf); a
// block placed inside a larger file is a symlink naming where (placeTarget).
import { createHash } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { ZERO_ID } from './objects.js';

/** Seafile's DEFAULT_FIXED_BLOCK_SIZE: what web and API uploads cut files into */
export const BLOCK_SIZE = 8 << 20;

export const BLOCK_ID = /^[0-9a-f]{40}$/;

export interface FileRecord {
  block_ids: string[];
  size: number;
  /** sizes of the blocks, in order (not part of the object whose sha1 is the id) */
  block_sizes: number[];
}

/** The real server's file id for `blockIds` and a file size (40 zeros without blocks). */
export function fileIdOf(blockIds: string[], size: number): string {
  if (blockIds.length === 0) return ZERO_ID;
  const ids = blockIds.map((b) => `"${b}"`).join(', ');
  return createHash('sha1').update(`{"block_ids": [${ids}], "size": ${size}, "type": 1, "version": 1}`).digest('hex');
}

/** where a block's bytes are: `size` bytes of `path` from `start` */
export interface Place {
  path: string;
  start: number;
  size: number;
}

export const errno = (e: unknown) => (e as NodeJS.ErrnoException).code;

/**
 * A block symlink's target, `c|o:<id>:<offset>:<size>` with the numbers in
 * base 36: at most 59 bytes below 3.6 PB, which ext4 keeps in the inode
 * itself (a "fast" symlink: metadata only, no data block to flush).
 */
export function placeTarget(kind: 'c' | 'o', id: string, offset: number, size: number): string {
  return `${kind}:${id}:${offset.toString(36)}:${size.toString(36)}`;
}

/** creates a symlink (metadata only); one already there says the same */
export function symlinkOnce(target: string, at: string): void {
  try {
    symlinkSync(target, at);
  } catch (e) {
    if (errno(e) !== 'EEXIST') throw e;
  }
}
