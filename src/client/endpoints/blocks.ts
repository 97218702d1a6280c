// The block path of uploads (seahub api2 UploadBlksLinkView, the file
// server's upload-raw-blks-api and upload-blks-api): a large file is cut
// into fixed blocks named by their SHA-1; the server says which it lacks,
// only those are sent, and the file is committed from its list of ids.
// Raw blocks and a commit with replace=1 are idempotent (a block is stored
// under its own checksum), so both are resent after a lost answer.
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { HttpCore } from '../http.js';
import { protocolError } from '../http.js';
import { closingBoundary, fieldParts, filePartHead, formDataType, newBoundary } from '../raw/form-data.js';
import type { BlockPiece, BlocksCommit, BlocksLink, FileBlocks } from '../types.js';
import { expectObject, expectString } from './expect.js';
import { q, repoPath } from './paths.js';
import { postUploadRetried } from './uploads.js';

const HEX40 = /^[0-9a-f]{40}$/;

function ids(op: string, v: unknown): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && HEX40.test(x)))
    throw protocolError(op, `expected a list of block ids, got ${JSON.stringify(v)?.slice(0, 200)}`);
  return v as string[];
}

/** POST upload-blks-link with blklist: the ids the server lacks, and where to send blocks and the commit. */
export async function blocksLink(http: HttpCore, repoId: string, dir: string, blockIds: string[]): Promise<BlocksLink> {
  const op = 'blocks link';
  const r = await http.json({
    op,
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'upload-blks-link/'),
    query: { p: q(dir) },
    form: { blklist: blockIds.join(',') },
    // asks and hands out a token; nothing changes on the server
    retry: 'idempotent',
    ctx: 'transfer-link',
  });
  const o = expectObject<{ rawblksurl: unknown; commiturl: unknown; blklist: unknown }>(op, r.value, 'commiturl');
  return {
    rawUrl: expectString(op, o.rawblksurl),
    commitUrl: expectString(op, o.commiturl),
    missing: ids(op, o.blklist ?? []),
  };
}

/**
 * POST the blocks to a rawblksurl, one multipart part per block (named by its id), read from disk as sent.
 * Not resent here: after a failure the caller asks which blocks the server lacks and sends only those.
 */
export async function uploadBlocks(
  http: HttpCore,
  rawUrl: string,
  blocks: BlockPiece[],
  opts: { repoId?: string } = {},
): Promise<void> {
  const op = 'upload blocks';
  await postUploadRetried(http, op, rawUrl, 'never', undefined, opts.repoId, async () => blocksBody(blocks));
}

function blocksBody(blocks: BlockPiece[]) {
  const boundary = newBoundary();
  const heads = blocks.map((b, i) => Buffer.from((i ? '\r\n' : '') + filePartHead(boundary, 'file', b.id), 'utf8'));
  const tail = Buffer.from(`\r\n${closingBoundary(boundary)}`, 'utf8');
  const length = heads.reduce((n, h) => n + h.length, 0) + blocks.reduce((n, b) => n + b.length, 0) + tail.length;
  async function* parts(): AsyncGenerator<Buffer> {
    for (let i = 0; i < blocks.length; i++) {
      const b = blocks[i];
      yield heads[i];
      if (b.data) {
        yield b.data.subarray(0, b.length);
        continue;
      }
      if (b.length === 0) continue;
      let sent = 0;
      const rs = createReadStream(b.path!, { start: b.offset, end: b.offset + b.length - 1, highWaterMark: 1 << 20 });
      for await (const c of rs) {
        sent += (c as Buffer).length;
        yield c as Buffer;
      }
      if (sent !== b.length) throw new Error(`block ${b.id}: ${b.path} shrank during the upload`);
    }
    yield tail;
  }
  return { contentType: formDataType(boundary), length, stream: Readable.from(parts(), { objectMode: false }) };
}

/** POST the commit: the file `name` of `parentDir` made of `ids` (446 when the server lacks one). Returns the file id. */
export async function commitBlocks(http: HttpCore, commitUrl: string, c: BlocksCommit): Promise<string> {
  const op = 'commit blocks';
  const fields: [string, string][] = [
    ['parent_dir', q(c.parentDir)],
    ['file_name', c.name],
    ['file_size', String(c.size)],
    ['blockids', JSON.stringify(c.ids)],
    ['replace', c.replace ? '1' : '0'],
  ];
  if (c.lastModify) fields.push(['last_modify', new Date(Math.floor(c.lastModify / 1000) * 1000).toISOString()]);
  const boundary = newBoundary();
  const text = (await postUploadRetried(
    http,
    op,
    commitUrl,
    c.replace ? 'idempotent' : 'write',
    undefined,
    c.repoId,
    async () => {
      const buf = Buffer.from(fieldParts(boundary, fields) + closingBoundary(boundary), 'utf8');
      return { contentType: formDataType(boundary), length: buf.length, stream: Readable.from([buf]) };
    },
  )) as string;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    v = text.trim();
  }
  const id = typeof v === 'string' ? v : (v as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || !HEX40.test(id)) throw protocolError(op, `no file id in ${text.slice(0, 200)}`);
  return id;
}

/** GET file/?op=downloadblks: the file's id and its block ids in order. */
export async function fileBlocks(http: HttpCore, repoId: string, path: string): Promise<FileBlocks> {
  const op = 'file blocks';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path), op: 'downloadblks' },
    retry: 'read',
  });
  const o = expectObject<{ file_id: unknown; blklist: unknown; encrypted: unknown }>(op, r.value, 'blklist');
  return { fileId: expectString(op, o.file_id), ids: ids(op, o.blklist), encrypted: !!o.encrypted };
}
