// A small streaming multipart/form-data parser for uploads. File parts are
// cut into blocks as they arrive (8 MiB unless told: blocks.ts), each hashed
// (sha1 = its block id) into a temp file of its own: a small part (the files
// of a batch upload) is held until it ends and then written with synchronous
// calls, its fsync running in the thread pool while the next parts are read
// (one hand-off per file instead of one per call: open, each write, fsync,
// close); a larger one streams to its blocks' files, each fsync'd in the
// background once full, so memory stays flat whatever the size. Other fields are kept, at most
// MAX_FORM_BYTES of them all together (upload links need no login: a body of
// millions of small fields must not fill the memory).
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isUtf8 } from 'node:buffer';
import { fsyncFd, writeAllSync } from './atomic.js';
import { FileServerError, HttpError } from './http.js';
import { BLOCK_SIZE, fileIdOf } from './blocks.js';

export interface ReceivedBlock {
  id: string; // sha1 of its bytes
  size: number;
  /** its bytes; '' once the store has taken the block (nothing left to remove) */
  tmpPath: string;
}

export interface UploadedPart {
  field: string;
  filename: string;
  size: number;
  /** the file id of its blocks (blocks.ts fileIdOf), or 40 zeros when empty */
  id: string;
  /** the content cut into blocks, in order (none when empty) */
  blocks: ReceivedBlock[];
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
}

/** All non-file parts (their headers and values) together; the upload fields are a few paths and flags. */
export const MAX_FORM_BYTES = 16 << 10;
/** Headers of all file parts together (a batch of many files has one header each). */
const MAX_FILE_HEADERS_BYTES = 1 << 20;
const MAX_HEADER_BYTES = 16 << 10;
/** a file part up to this size is held in memory until it ends */
const SMALL_PART = 256 << 10;
/** bytes of small parts whose fsync is under way, per upload, before the parser waits for them */
const SYNCING_MAX = 8 << 20;
/** full blocks of large parts whose fsync is under way before the parser waits for the oldest */
const BLOCK_SYNCS_MAX = 4;
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
    // whole, and uploadName (names.ts) then keeps "b.txt" as that server does
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
        /** the bytes of a part still small enough to be held (null: it streams to block files) */
        chunks: Buffer[] | null;
        /** the current block's file while streaming (null between blocks) */
        fh: FileHandle | null;
        tmpPath: string;
      }
    | null = null;
  /** fsyncs of small parts' temp files under way (each closes its descriptor when done) */
  let syncing: Promise<void>[] = [];
  let syncingBytes = 0;
  /** fsyncs (then closes) of full blocks of large parts */
  let blockSyncs: Promise<void>[] = [];
  const syncsDone = async () => {
    const all = [...syncing, ...blockSyncs];
    syncing = [];
    blockSyncs = [];
    syncingBytes = 0;
    await Promise.all(all);
  };
  const newTmp = () => path.join(opts.tmpDir, `up-${randomBytes(8).toString('hex')}`);

  type FileState = { part: UploadedPart; hash: ReturnType<typeof createHash>; inBlock: number } & {
    fh: FileHandle | null;
    tmpPath: string;
  };
  const startBlock = async (c: FileState) => {
    c.tmpPath = newTmp();
    c.fh = await fsp.open(c.tmpPath, 'w', 0o600);
  };
  const endBlock = async (c: FileState) => {
    const fh = c.fh!;
    c.fh = null;
    c.part.blocks.push({ id: c.hash.digest('hex'), size: c.inBlock, tmpPath: c.tmpPath });
    c.hash = createHash('sha1');
    c.inBlock = 0;
    const sync = fh.sync().then(
      () => fh.close(),
      async (e: unknown) => {
        await fh.close().catch(() => undefined);
        throw e;
      },
    );
    sync.catch(() => undefined); // awaited by syncsDone; never an unhandled rejection meanwhile
    blockSyncs.push(sync);
    if (blockSyncs.length > BLOCK_SYNCS_MAX) await blockSyncs.shift();
  };

  const openPart = async (headerText: string) => {
    const { name, filename } = parseDisposition(headerText);
    if (filename !== null) {
      fileHeaderBytes += headerText.length;
      if (fileHeaderBytes > MAX_FILE_HEADERS_BYTES) throw tooMuchForm();
      const part: UploadedPart = { field: name, filename, size: 0, id: '', blocks: [] };
      files.push(part);
      cur = { kind: 'file', part, hash: createHash('sha1'), inBlock: 0, chunks: [], fh: null, tmpPath: '' };
    } else {
      formBytes += headerText.length + 4;
      if (formBytes > MAX_FORM_BYTES) throw tooMuchForm();
      cur = { kind: 'field', name, chunks: [], size: 0 };
    }
  };

  const feed = async (data: Buffer) => {
    if (!cur || data.length === 0) return;
    if (cur.kind === 'field') {
      cur.size += data.length;
      formBytes += data.length;
      if (formBytes > MAX_FORM_BYTES) throw tooMuchForm();
      cur.chunks.push(data);
    } else {
      const c = cur;
      c.part.size += data.length;
      fileBytes += data.length;
      opts.onBytes?.(fileBytes);
      if (c.chunks && c.part.size <= SMALL_PART && c.part.size <= blockSize) {
        // the socket's chunks are fresh buffers, never reused: holding views of them is safe
        c.hash.update(data);
        c.inBlock += data.length;
        c.chunks.push(data);
        return;
      }
      if (c.chunks) {
        // too large to hold: the held bytes (hashed already) start the first block's file
        const held = c.chunks;
        c.chunks = null;
        if (c.inBlock > 0) {
          await startBlock(c);
          for (const b of held) await writeAll(c.fh!, b);
        }
      }
      let off = 0;
      while (off < data.length) {
        if (!c.fh) await startBlock(c);
        const n = Math.min(data.length - off, blockSize - c.inBlock);
        const piece = off === 0 && n === data.length ? data : data.subarray(off, off + n);
        c.hash.update(piece);
        await writeAll(c.fh!, piece);
        c.inBlock += n;
        off += n;
        if (c.inBlock === blockSize) await endBlock(c);
      }
    }
  };

  const closePart = async () => {
    const c = cur;
    cur = null;
    if (!c) return;
    if (c.kind === 'field') {
      fields.set(c.name, [...(fields.get(c.name) ?? []), Buffer.concat(c.chunks).toString('utf8')]);
    } else {
      const done = () => {
        c.part.id = fileIdOf(
          c.part.blocks.map((b) => b.id),
          c.part.size,
        );
      };
      if (!c.chunks) {
        if (c.fh) await endBlock(c);
        return done();
      }
      if (c.part.size === 0) return done();
      const tmpPath = newTmp();
      c.part.blocks.push({ id: c.hash.digest('hex'), size: c.part.size, tmpPath });
      done();
      const fd = openSync(tmpPath, 'w', 0o600);
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
    const c = cur as { kind: string; fh?: FileHandle | null; tmpPath?: string } | null;
    if (c?.kind === 'file' && c.fh) {
      await c.fh.close().catch(() => undefined);
      await fsp.rm(c.tmpPath!, { force: true });
    }
    await Promise.allSettled([...syncing, ...blockSyncs]);
    await Promise.all(files.flatMap((f) => f.blocks.map((b) => fsp.rm(b.tmpPath, { force: true }))));
    throw e;
  }
}
