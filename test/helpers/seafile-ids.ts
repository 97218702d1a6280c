// Seafile's ids for file contents, written out independently of the server's
// code (checked against a real 10.0 server: a 10,000,000-byte upload's id):
// a block's id is the sha1 of its bytes, web and API uploads cut files into
// fixed 8 MiB blocks, and a file's id is the sha1 of the JSON object
// {"block_ids": [...], "size": N, "type": 1, "version": 1} (40 zeros when empty).
import { createHash } from 'node:crypto';

export const SEAFILE_BLOCK = 8 << 20;

export const sha1hex = (b: Buffer | string): string => createHash('sha1').update(b).digest('hex');

/** the ids of `content` cut into blocks of `size` bytes */
export function blockIdsOf(content: Buffer, size = SEAFILE_BLOCK): string[] {
  const ids: string[] = [];
  for (let off = 0; off < content.length; off += size) ids.push(sha1hex(content.subarray(off, off + size)));
  return ids;
}

/** the file id of a file made of `blockIds` with `size` bytes */
export function fileIdOfBlocks(blockIds: string[], size: number): string {
  if (blockIds.length === 0) return '0'.repeat(40);
  return sha1hex(JSON.stringify({ block_ids: blockIds, size, type: 1, version: 1 }).replace(/([,:])/g, '$1 '));
}

/** the id a real server gives `content` uploaded through upload-api */
export const seafileFileId = (content: Buffer): string => fileIdOfBlocks(blockIdsOf(content), content.length);
