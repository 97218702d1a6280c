// A small streaming multipart/form-data parser for uploads. File parts are
// hashed as they arrive, 8 MiB block by block (unless told: store/block-store.ts), each
// block's sha1 its id, and go to temp files: a
// small one (the files of a batch upload) is held until it ends and then
// written with synchronous calls, its fsync running in the thread pool while
// the next parts are read (one hand-off per file instead of one per call:
// open, each write, fsync, close); a larger one streams to its file, so
// memory stays flat whatever the size. Other fields are kept, at most
// MAX_FORM_BYTES of them all together (upload links need no login: a body of
// millions of small fields must not fill the memory).
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isUtf8 } from 'node:buffer';
import { fsyncFd, writeAllSync } from '../store/atomic.js';
import { FileServerError, HttpError } from '../http.js';
import { BLOCK_SIZE, fileIdOf } from '../store/block-store.js';

export interface UploadedPart {
  field: string;
  filename: string;
  /** the received bytes; '' once the store has taken the file (nothing left to remove) */
  tmpPath: string;
  size: number;
  /** the file id of its blocks (store/block-format.ts fileIdOf), or 40 zeros when empty */
  id: string;
  /** ids and sizes of its blocks, in order (none when empty) */
  blocks: { id: string; size: number }[];
}

export interface MultipartResult {
  fields: Map<string, string[]>;
  files: UploadedPart[];
}

export interface MultipartOptions {
  tmpDir: string;
  /** called as file bytes arrive; throw an HttpError to stop (too large, over quota) */
  onBytes?: (totalFileBytes: number) => void;
  /** block size to cut file parts into (default BLOCK_SIZE); Infinity keeps each part one block */
  blockSize?: number;
  /** bound of the non-file parts together (default MAX_FORM_BYTES) */
  maxFormBytes?: number;
}

/**
 * The text fields of the upload forms. A part with one of these names is a
 * field even when it comes with a filename, as some HTTP libraries send every
 * part (the C fileserver takes only a part named `file` as a file).
 */
const TEXT_FIELDS = new Set([
  'parent_dir',
  'relative_path',
  'replace',
  'target_file',
  'filename',
  'last_modify',
  'file_name',
  'file_size',
  'blockids',
]);

/** All non-file parts (their headers and values) together; the upload fields are a few paths and flags. */
export const MAX_FORM_BYTES = 16 << 10;
/** Headers of all file parts together (a batch of many files has one header each). */
const MAX_FILE_HEADERS_BYTES = 1 << 20;
const MAX_HEADER_BYTES = 16 << 10;
/** a file part up to this size is held in memory until it ends */
const SMALL_PART = 256 << 10;
/** bytes of small parts whose fsync is under way, per upload, before the parser waits for them */
const SYNCING_MAX = 8 << 20;
const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

function boundaryOf(contentType: string): string {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!m) throw new HttpError(400, 'Invalid multipart body.');
  return m[1] ?? m[2];
}

function parseDisposition(headerText: string): { name: string; filename: string | null } {
  const line = headerText.split('\r\n').find((l) => /^content-disposition:/i.test(l)) ?? '';
  const param = (key: string): string | null => {
    // filename*=UTF-8''percent-encoded (RFC 5987) wins over filename="..."
    if (key === 'filename') {
      const ext = /filename\*\s*=\s*([^;]+)/i.exec(line);
      if (ext) {
        const v = ext[1].trim().replace(/^"|"$/g, '');
        const idx = v.indexOf("''");
        try {
          return decodeURIComponent(idx >= 0 ? v.slice(idx + 2) : v);
        } catch {
          /* fall through */
        }
      }
    }
    const re = new RegExp(`(?:^|;)\\s*${key}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i');
    const m = re.exec(line.slice(line.indexOf(':') + 1));
    if (!m) return null;
    // taken as it is between the quotes, as the C fileserver does (get_mime_header_param_value):
    // a backslash is no escape (browsers send `"` as %22 and keep `\`), so "a\b.txt" arrives
    // whole, and uploadName (store/names.ts) then keeps "b.txt" as that server does
    return m[1] !== undefined ? m[1] : m[2].trim();
  };
  return { name: param('name') ?? '', filename: param('filename') };
}

async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  let off = 0;
  while (off < data.length) off += (await fh.write(data, off, data.length - off)).bytesWritten;
}

export async function parseMultipart(
  body: Readable,
  contentType: string,
  opts: MultipartOptions,
): Promise<MultipartResult> {
  const delim = Buffer.from('\r\n--' + boundaryOf(contentType));
  const fields = new Map<string, string[]>();
  const files: UploadedPart[] = [];
  const blockSize = opts.blockSize ?? BLOCK_SIZE;
  const maxFormBytes = opts.maxFormBytes ?? MAX_FORM_BYTES;
  let fileBytes = 0;
  let formBytes = 0;
  let fileHeaderBytes = 0;
  const tooMuchForm = () => new HttpError(400, 'Too many form fields.');

  type State = 'preamble' | 'afterDelim' | 'headers' | 'body' | 'done';
  let state = 'preamble' as State;
  // A leading CRLF lets the first boundary match the same delimiter as the others.
  let buf: Buffer = Buffer.from(CRLF);

  let cur:
    | { kind: 'field'; name: string; chunks: Buffer[]; size: number }
    | {
        kind: 'file';
        part: UploadedPart;
        /** of the current block */
        hash: ReturnType<typeof createHash>;
        /** bytes in the current block */
        inBlock: number;
        /** the bytes of a part still small enough to be held (null: it streams to `fh`) */
        chunks: Buffer[] | null;
        fh: FileHandle | null;
      }
    | null = null;
  /** fsyncs of small parts' temp files under way (each closes its descriptor when done) */
  let syncing: Promise<void>[] = [];
  let syncingBytes = 0;
  const syncsDone = async () => {
    const all = syncing;
    syncing = [];
    syncingBytes = 0;
    await Promise.all(all);
  };

  const openPart = async (headerText: string) => {
    const { name, filename } = parseDisposition(headerText);
    if (filename !== null && !TEXT_FIELDS.has(name)) {
      fileHeaderBytes += headerText.length;
      if (fileHeaderBytes > MAX_FILE_HEADERS_BYTES) throw tooMuchForm();
      const tmpPath = path.join(opts.tmpDir, `up-${randomBytes(8).toString('hex')}`);
      const part: UploadedPart = { field: name, filename, tmpPath, size: 0, id: '', blocks: [] };
      files.push(part);
      cur = { kind: 'file', part, hash: createHash('sha1'), inBlock: 0, chunks: [], fh: null };
    } else {
      formBytes += headerText.length + 4;
      if (formBytes > maxFormBytes) throw tooMuchForm();
      cur = { kind: 'field', name, chunks: [], size: 0 };
    }
  };

  const feed = async (data: Buffer) => {
    if (!cur || data.length === 0) return;
    if (cur.kind === 'field') {
      cur.size += data.length;
      formBytes += data.length;
      if (formBytes > maxFormBytes) throw tooMuchForm();
      cur.chunks.push(data);
    } else {
      const c = cur;
      for (let off = 0; off < data.length;) {
        const n = Math.min(data.length - off, blockSize - c.inBlock);
        c.hash.update(n === data.length ? data : data.subarray(off, off + n));
        c.inBlock += n;
        off += n;
        if (c.inBlock === blockSize) {
          c.part.blocks.push({ id: c.hash.digest('hex'), size: c.inBlock });
          c.hash = createHash('sha1');
          c.inBlock = 0;
        }
      }
      c.part.size += data.length;
      fileBytes += data.length;
      opts.onBytes?.(fileBytes);
      if (c.chunks && c.part.size <= SMALL_PART) {
        // the socket's chunks are fresh buffers, never reused: holding views of them is safe
        c.chunks.push(data);
        return;
      }
      if (!c.fh) {
        c.fh = await fsp.open(c.part.tmpPath, 'w', 0o600);
        const held = c.chunks ?? [];
        c.chunks = null;
        for (const b of held) await writeAll(c.fh, b);
      }
      await writeAll(c.fh, data);
    }
  };

  const closePart = async () => {
    const c = cur;
    cur = null;
    if (!c) return;
    if (c.kind === 'field') {
      fields.set(c.name, [...(fields.get(c.name) ?? []), Buffer.concat(c.chunks).toString('utf8')]);
    } else {
      if (c.inBlock > 0) c.part.blocks.push({ id: c.hash.digest('hex'), size: c.inBlock });
      c.part.id = fileIdOf(
        c.part.blocks.map((b) => b.id),
        c.part.size,
      );
      if (c.fh) {
        await c.fh.sync();
        await c.fh.close();
        return;
      }
      const fd = openSync(c.part.tmpPath, 'w', 0o600);
      try {
        writeAllSync(fd, c.chunks ?? []);
      } catch (e) {
        closeSync(fd);
        throw e;
      }
      const sync = fsyncFd(fd).finally(() => closeSync(fd));
      sync.catch(() => undefined); // awaited by syncsDone; never an unhandled rejection meanwhile
      syncing.push(sync);
      syncingBytes += c.part.size;
      if (syncingBytes > SYNCING_MAX) await syncsDone();
    }
  };

  const step = async (): Promise<boolean> => {
    switch (state) {
      case 'preamble': {
        const i = buf.indexOf(delim);
        if (i < 0) {
          buf = buf.subarray(Math.max(0, buf.length - delim.length + 1));
          return false;
        }
        buf = buf.subarray(i + delim.length);
        state = 'afterDelim';
        return true;
      }
      case 'afterDelim': {
        if (buf.length < 2) return false;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = 'done';
          return false;
        }
        // transport padding (spaces/tabs) may precede the CRLF
        const i = buf.indexOf(CRLF);
        if (i < 0) {
          if (buf.length > 256) throw new HttpError(400, 'Invalid multipart body.');
          return false;
        }
        buf = buf.subarray(i + 2);
        state = 'headers';
        return true;
      }
      case 'headers': {
        // a part with no headers at all starts with the blank line directly
        if (buf.length >= 2 && buf[0] === 0x0d && buf[1] === 0x0a) {
          buf = buf.subarray(2);
          await openPart('');
          state = 'body';
          return true;
        }
        const i = buf.indexOf(HEADER_END);
        if (i < 0) {
          if (buf.length > MAX_HEADER_BYTES) throw new HttpError(400, 'Invalid multipart body.');
          return false;
        }
        // a part header that is not UTF-8 names a file real servers refuse (440), not one stored with U+FFFD
        if (!isUtf8(buf.subarray(0, i))) throw new FileServerError(440, 'Invalid filename.');
        await openPart(buf.subarray(0, i).toString('utf8'));
        buf = buf.subarray(i + 4);
        state = 'body';
        return true;
      }
      case 'body': {
        const i = buf.indexOf(delim);
        if (i < 0) {
          // keep a tail that may be the start of the delimiter
          const keep = Math.min(buf.length, delim.length - 1);
          await feed(buf.subarray(0, buf.length - keep));
          buf = buf.subarray(buf.length - keep);
          return false;
        }
        await feed(buf.subarray(0, i));
        await closePart();
        buf = buf.subarray(i + delim.length);
        state = 'afterDelim';
        return true;
      }
      case 'done':
        return false;
    }
  };

  try {
    // Stopping early (too large, over quota) must not destroy the request: the
    // caller still answers on it.
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      if (state === 'done') continue; // epilogue: drain and ignore
      const c = chunk as Buffer;
      if (state === 'body' && buf.length > 0 && buf.length < delim.length && c.length >= delim.length) {
        // In a file body the kept tail is shorter than the delimiter. A delimiter
        // starting in it ends within the chunk's first delim.length-1 bytes: look
        // only there, and otherwise go on with the chunk itself, uncopied.
        const i = Buffer.concat([buf, c.subarray(0, delim.length - 1)]).indexOf(delim);
        if (i >= 0 && i < buf.length) {
          buf = Buffer.concat([buf, c]);
        } else {
          await feed(buf);
          buf = c;
        }
      } else {
        buf = buf.length ? Buffer.concat([buf, c]) : c;
      }
      while (await step());
    }
    if (state !== 'done') throw new HttpError(400, 'Invalid multipart body.');
    await syncsDone();
    return { fields, files };
  } catch (e) {
    const c = cur as { kind: string; fh?: FileHandle | null } | null;
    if (c?.kind === 'file' && c.fh) await c.fh.close().catch(() => undefined);
    await Promise.allSettled(syncing);
    await Promise.all(files.map((f) => fsp.rm(f.tmpPath, { force: true })));
    throw e;
  }
}
