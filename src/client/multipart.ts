// A multipart/form-data body for uploads, built as a stream: the text fields
// and the file part's header (preamble), the file read from disk, and the
// closing boundary (epilogue). Its exact length is known up front from
// fs.stat, so the request carries a Content-Length and no chunked encoding,
// and the file is never held in memory.
import { createReadStream, promises as fsp } from 'node:fs';
import { Readable } from 'node:stream';
import { closingBoundary, fieldParts, filePartHead, formDataType, newBoundary } from './raw/form-data.js';

export interface MultipartBody {
  contentType: string;
  length: number;
  /** the bytes of the file as stat'ed when the body was built */
  fileSize: number;
  stream: Readable;
}

/** The bytes before and after the file content. Fields come first so a streaming server knows them before the file. */
export function multipartFraming(
  boundary: string,
  fields: [string, string][],
  file: { field: string; filename: string },
): { preamble: Buffer; epilogue: Buffer } {
  const head = fieldParts(boundary, fields) + filePartHead(boundary, file.field, file.filename);
  return { preamble: Buffer.from(head, 'utf8'), epilogue: Buffer.from(`\r\n${closingBoundary(boundary)}`, 'utf8') };
}

/**
 * Builds the streamed body for `localFile`. The file is read only up to the
 * size it had at stat time, so the declared length always holds even if the
 * file grows meanwhile (a shrinking file fails the request, as it should).
 */
export async function multipartFromFile(
  fields: [string, string][],
  file: { field: string; filename: string; path: string },
  boundary = newBoundary(),
): Promise<MultipartBody> {
  const st = await fsp.stat(file.path);
  if (!st.isFile()) throw Object.assign(new Error(`${file.path} is not a regular file`), { code: 'EISDIR' });
  const size = st.size;
  const { preamble, epilogue } = multipartFraming(boundary, fields, file);
  async function* parts(): AsyncGenerator<Buffer> {
    yield preamble;
    if (size > 0) {
      const rs = createReadStream(file.path, { start: 0, end: size - 1, highWaterMark: 256 * 1024 });
      let sent = 0;
      for await (const chunk of rs) {
        sent += (chunk as Buffer).length;
        yield chunk as Buffer;
      }
      if (sent !== size) throw new Error(`${file.path} shrank during upload (${sent} of ${size} bytes)`);
    }
    yield epilogue;
  }
  return {
    contentType: formDataType(boundary),
    length: preamble.length + size + epilogue.length,
    fileSize: size,
    stream: Readable.from(parts(), { objectMode: false }),
  };
}
