// The shapes the read engine's modules share: the file being read, a
// handle's read pattern, the options (and their resolved form), and the
// per-file table of chunks in memory or on their way. Kept apart so that
// chunk-store, segments, seq-stream and reader import each other in one
// direction only.
import type { ChunkParts } from './chunk-assembler.js';

export interface RemoteFile {
  repo: string;
  path: string;
  size: number;
  /** identifies the content: the file id, or a synthetic key when the id is unknown */
  version: string;
  /** an earlier version: the file at `path` as it was at this commit (read through revision links) */
  commit?: string;
  /**
   * the server named another version than the listing (download-links.ts):
   * `version` is the new one, `size` still the listed version's
   */
  sizeUnsure?: boolean;
}

/** Per open handle: where the last read ended and the current readahead window. */
export interface ReadPattern {
  next: number;
  window: number;
  /** the handle has read before */
  started?: boolean;
  /** the streaming GET feeding this sequential reader, if any */
  stream?: SeqStream;
  /** chunks below this one were let go behind the streaming reader (RemoteReader.releaseBehind) */
  released?: number;
}

export interface ReaderOptions {
  chunkSize?: number;
  initialWindow?: number;
  maxWindow?: number;
  segmentSize?: number;
  memoryBytes?: number;
  linkTtlMs?: number;
  maxSegmentsPerFile?: number;
  /** files above this size are read ahead by one streaming GET (default 8 MiB) */
  streamMinBytes?: number;
  /**
   * after this many random reads of a file, fetch all of it into the disk cache
   * (default 32; fewer for files under 256 MiB: one per 8 MiB, at least 2)
   */
  fillAfterRandomReads?: number;
  /** largest file fetched that way (default 2 GiB; the disk cache must hold it too) */
  fillMaxBytes?: number;
  /** a stream paused this long with no reader moving on ends (default 5 s) */
  streamIdleMs?: number;
  /**
   * a streamed sequential pass of a file up to this size (bytes) is written to
   * the disk cache too (default 256 MiB; 0: never; Infinity: any size the cache
   * takes). Writing what a stream brings costs CPU and memory per byte (measured
   * on 1 GiB: 216 vs 395 MB/s, 3.7 vs 1.8 CPU-s/GiB, 174 vs 134 MiB peak RSS) and
   * one pass of a large file would evict the working set, so by default only
   * files of a working-set size survive a remount this way.
   */
  cacheStreamsUpTo?: number;
  /** the server's block size (Seafile's fixed_block_size; default 8 MiB): blocks reused across versions */
  blockBytes?: number;
  /**
   * files above this size take the blocks other cached versions hold instead
   * of downloading them (default 16 MiB; Infinity: off); see block-reuse.ts
   */
  blockReuseMinBytes?: number;
  /**
   * a stream that receives nothing this long is given up and what readers wait
   * for is fetched again by ranged GETs (default: the API's own call timeout)
   */
  stallMs?: number;
}

/** ReaderOptions with the defaults applied (see readConfig in reader.ts). */
export interface ReadConfig {
  chunk: number;
  initialWindow: number;
  maxWindow: number;
  /** chunks per ranged GET */
  segChunks: number;
  /** ranged GETs of readahead at once per file */
  maxSegs: number;
  linkTtl: number;
  memBudget: number;
  fillAfter: number;
  streamMin: number;
  /** skipping this much of a stream costs about what a new request costs */
  jumpAhead: number;
  /** chunks a streaming reader keeps behind where it reads (the kernel's reads arrive out of order) */
  keepBehind: number;
  fillMax: number;
  streamIdle: number;
  /** undefined: the streaming GET's own default (the client's timeout) */
  stall: number | undefined;
  cacheStreamsUpTo: number;
}

/** What the read engine counts (shown by `status`, asserted by tests). */
export type ReaderStats = {
  linkRequests: number;
  rangeRequests: number;
  bytesFetched: number;
  diskChunks: number;
  fills: number;
  streams: number;
  activeStreams: number;
};

/** ReaderStats with every count at zero */
export function newReaderStats(): ReaderStats {
  return { linkRequests: 0, rangeRequests: 0, bytesFetched: 0, diskChunks: 0, fills: 0, streams: 0, activeStreams: 0 };
}

/** The read engine's memory (shown by `status`, asserted by tests), in bytes. */
export type ReaderMemory = {
  /** chunks held */
  used: number;
  budget: number;
  /** chunk buffers waiting in the pool for reuse */
  pooled: number;
  /** chunk buffers allocated so far (the pool had none) */
  allocated: number;
};

/** A chunk's bytes: the slices of the received network buffers, or one buffer read into directly. */
export type Chunk = ChunkParts;

/** A chunk on its way; `wanted` once a read waits for it (not only readahead). */
export type Pending = Promise<Chunk> & { wanted?: boolean };

export interface Deferred {
  promise: Pending;
  resolve(b: Chunk): void;
  reject(e: unknown): void;
}

/** The chunks of one file version: in memory, or being fetched. */
export interface FileChunks {
  have: Map<number, Chunk>;
  inflight: Map<number, Pending>;
  /** GETs (ranged or streams) running for this file */
  segs: number;
  bytes: number;
  /** reads that did not follow the previous one */
  randomReads: number;
  /** a background download of the whole file is running */
  filling: boolean;
}

/**
 * One GET from a chunk to the end of the file (or of a stretch missing from
 * the disk cache), consumed chunk by chunk as far as `until` and then paused
 * (TCP flow control holds the server back) until the reader moves on: a
 * sequential reader pays the round trip once, not once per segment.
 */
export interface SeqStream {
  fc: FileChunks;
  /** next chunk the stream will deliver */
  next: number;
  /**
   * the last chunk its GET asks for: the file's last, or the one before the
   * next chunk on disk (past it the disk cache serves, and a GET without an
   * end would have the server push into the socket buffers what is not used)
   */
  last: number;
  /** deliver up to this chunk, then pause */
  until: number;
  waits: Map<number, Deferred>;
  wake: (() => void) | null;
  dead: boolean;
}
