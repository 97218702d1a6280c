// Several small new files of one folder in one multipart POST to the
// folder's upload link: one request and one server commit instead of one
// per file. The body streams from the temp files (or the bytes held in
// memory); its length is exact.
import { createReadStream, promises as fsp } from 'node:fs';
import { Readable } from 'node:stream';
import { closingBoundary, fieldParts, filePartHead, formDataType, newBoundary } from './raw/form-data.js';
import type { BatchFile } from './types.js';

/** The framing of a multipart body for `files` (their sizes read now): part headers, closing boundary, length. */
export async function batchFraming(
  fields: [string, string][],
  files: BatchFile[],
): Promise<{ contentType: string; heads: Buffer[]; tail: Buffer; sizes: number[]; length: number }> {
  const boundary = newBoundary();
  const sizes = await Promise.all(files.map(async (f) => f.data?.length ?? (await fsp.stat(f.path)).size));
  const head = fieldParts(boundary, fields);
  const heads = files.map((f, i) =>
    Buffer.from(`${i === 0 ? head : '\r\n'}${filePartHead(boundary, 'file', f.name)}`, 'utf8'),
  );
  const tail = Buffer.from(`\r\n${closingBoundary(boundary)}`, 'utf8');
  const length = heads.reduce((a, h) => a + h.length, 0) + sizes.reduce((a, s) => a + s, 0) + tail.length;
  return { contentType: formDataType(boundary), heads, tail, sizes, length };
}

export async function multipartOfFiles(
  fields: [string, string][],
  files: BatchFile[],
): Promise<{ contentType: string; length: number; sizes: number[]; stream: Readable }> {
  const { contentType, heads, tail, sizes, length } = await batchFraming(fields, files);
  async function* parts(): AsyncGenerator<Buffer> {
    for (let i = 0; i < files.length; i++) {
      yield heads[i];
      const data = files[i].data;
      if (data) {
        if (data.length > 0) yield data;
      } else if (sizes[i] > 0) {
        let sent = 0;
        for await (const c of createReadStream(files[i].path, {
          start: 0,
          end: sizes[i] - 1,
          highWaterMark: 256 * 1024,
        })) {
          sent += (c as Buffer).length;
          yield c as Buffer;
        }
        if (sent !== sizes[i]) throw new Error(`${files[i].path} shrank during upload`);
      }
    }
    yield tail;
  }
  return { contentType, length, sizes, stream: Readable.from(parts(), { objectMode: false }) };
}
