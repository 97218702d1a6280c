// The shapes of moving bytes: uploads (one file, several in one POST, a
// streamed upload), uploads by blocks, download links and ranged or streamed
// downloads.
import type { Readable } from 'node:stream';

export interface UploadedFile {
  name: string;
  id: string;
  size: number;
}

// ---- types of the optional write-path capabilities (multi-file and streaming uploads) ----

/** A local file sent in a multi-file upload. */
export interface BatchFile {
  /** local temp file */
  path: string;
  /** name in the folder */
  name: string;
  /** the content, when it is held in memory (then `path` is not read) */
  data?: Buffer;
}

/** Several files of one folder in one multipart POST to an upload link. */
export type UploadBatch = (
  link: string,
  parentDir: string,
  files: BatchFile[],
  /**
   * lastModify (ms): the modification time the server records for the files;
   * repoId: the library, unlocked again when the file server refuses for want of its password
   */
  opts: { replace: boolean; lastModify?: number; repoId?: string },
) => Promise<UploadedFile[]>;

/** An upload of unknown length, fed piece by piece while the file is written. */
export interface FileUploadStream {
  /** sends bytes of the file part; resolves when the transport took them */
  write(b: Buffer): Promise<void>;
  /** sends `trailing` fields, ends the body; resolves with the new file id */
  finish(trailing?: [string, string][]): Promise<string>;
  /** drops the request: the body never ends, so the server stores nothing */
  abort(): void;
  /** file bytes written so far */
  readonly sent: number;
}

/**
 * Opens a streaming upload to an upload or update link; `leading` are the
 * form fields sent before the file part (parent_dir, replace, target_file).
 * A server that does not take chunked bodies fails it with an error that
 * `refusesChunked` (errors.ts) recognises.
 */
export type StartUploadStream = (
  link: string,
  leading: [string, string][],
  filename: string,
) => Promise<FileUploadStream>;

// ---- the block path of uploads (endpoints/blocks.ts) ----

/** What upload-blks-link answers to a list of block ids. */
export interface BlocksLink {
  /** where missing blocks go (upload-raw-blks-api) */
  rawUrl: string;
  /** where the file is committed from its block ids (upload-blks-api?commitonly=true) */
  commitUrl: string;
  /** the ids of the list the server does not have */
  missing: string[];
}

/** One block of a raw-blocks POST: `length` bytes at `offset` of the local file `path` (or `data`). */
export interface BlockPiece {
  id: string;
  length: number;
  path?: string;
  offset: number;
  data?: Buffer;
}

export interface BlocksCommit {
  parentDir: string;
  name: string;
  size: number;
  ids: string[];
  replace: boolean;
  /** ms: the modification time the server records (last_modify) */
  lastModify?: number;
  repoId?: string;
}

/** op=downloadblks: the file's id and its block ids in order (no sizes). */
export interface FileBlocks {
  fileId: string;
  ids: string[];
  encrypted: boolean;
}

export interface DownloadLink {
  url: string;
  /** the file id from the `oid` response header, when sent */
  oid: string | null;
}

export interface RangeDownload {
  /**
   * 200 (whole file: the server ignored Range, as encrypted libraries do; `start` is then 0),
   * 206 (the range asked for), or 416 (range past the end: `body` is empty, `totalSize` the size when sent)
   */
  status: number;
  /** first byte offset of `body` within the file */
  start: number;
  /** total file size when known (Content-Range or Content-Length of a 200) */
  totalSize: number | null;
  /** the ETag without quotes (real servers send the file id) */
  etag: string | null;
  /** stream errors are ApiError (timeout/network); destroy it to abandon the transfer */
  body: Readable;
}

// --- streaming GET (read path): the two sides of SeafileApi.streamGet ---

/** Where a streaming GET puts the body. */
export interface StreamSink {
  /** status 200 (the whole file: Range ignored) or 206, the offset of the first body byte, the body length */
  head(status: number, start: number, length: number, etag?: string): void;
  /**
   * Where the next body bytes go; the socket reads into it directly, so it
   * must stay the caller's until wrote() (or end()) and must not be empty.
   */
  space(): Buffer;
  /** `n` body bytes were put at the start of the last space() */
  wrote(n: number): void;
  /** called once: null after the whole body (or destroy()), else the failure */
  end(err: unknown | null): void;
}

/** The caller's hold on a streaming GET: flow control, and the end of it. */
export interface StreamControl {
  pause(): void;
  resume(): void;
  /** ends the transfer; the sink's end(null) follows */
  destroy(): void;
}
