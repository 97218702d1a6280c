// The multipart/form-data encoder of every upload body: text fields, the
// header of a file part, and the closing boundary, with parameter values
// quoted one way. The bodies built from it are server/fileserver/multipart.ts (one local
// file, through undici), upload-batch.ts (several files) and
// stream-upload.ts (a file still being written, chunked).
import { randomBytes } from 'node:crypto';

/** Quotes a value for a Content-Disposition parameter the way browsers do (HTML spec). */
function quoteParam(v: string): string {
  return v.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');
}

export function newBoundary(): string {
  return `----seafsFormBoundary${randomBytes(12).toString('hex')}`;
}

export function formDataType(boundary: string): string {
  return `multipart/form-data; boundary=${boundary}`;
}

/** The parts of text fields, in order, each ending with its CRLF. */
export function fieldParts(boundary: string, fields: [string, string][]): string {
  let out = '';
  for (const [name, value] of fields) {
    out += `--${boundary}\r\nContent-Disposition: form-data; name="${quoteParam(name)}"\r\n\r\n${value}\r\n`;
  }
  return out;
}

/** The header of a file part; the file's bytes follow it, then CRLF. */
export function filePartHead(boundary: string, field: string, filename: string): string {
  return (
    `--${boundary}\r\nContent-Disposition: form-data; name="${quoteParam(field)}"; filename="${quoteParam(filename)}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n'
  );
}

/** The closing boundary (after the CRLF that ends the last part). */
export function closingBoundary(boundary: string): string {
  return `--${boundary}--\r\n`;
}
