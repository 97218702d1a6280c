// Shapes shared by the write path's modules (kept apart so that the modules
// import them without importing each other in a ring).
import type { FileState } from './file-state.js';
import type { ReadCacheShare } from './cache-room.js';

/** uploads by blocks (blocks/block-uploads.ts): the threshold and request sizes */
export interface BlockOptions {
  /** files larger than this go by blocks (bytes; default 8 MiB: more than one block); Infinity: never */
  threshold?: number;
  /** the cut (tests only: the server's is 8 MiB) */
  blockSize?: number;
  /** a request of raw blocks carries at most this many bytes (default 32 MiB; halved after a 442/413) */
  maxRequestBytes?: number;
  /** raw-block requests of one file at once (default 2) */
  concurrency?: number;
  /** where the mount notes that the server lacks the block path */
  stateFile?: string;
}

export interface UploadResult {
  id: string;
  size: number;
  /** the path the upload landed at when not the file's own (a conflict copy) */
  landed?: string;
  /**
   * the modification time of the version sent (ms: its last write's, or one set by utimens), and
   * whether last_modify carried it; a server that ignores last_modify shows the upload's time
   * instead, so the mount keeps this one (mtimes/kept-mtimes.ts)
   */
  setTime?: { mtimeMs: number; sent: boolean };
}

/** UploadResult.setTime of the version of `s` about to be sent (taken before the upload: a write may follow) */
export function setTimeOf(s: FileState, sent: boolean): Pick<UploadResult, 'setTime'> {
  return { setTime: { mtimeMs: Math.floor(s.mtime / 1000) * 1000, sent } };
}

export interface WriteBackHooks {
  /** a version of `s` is now on the server at (repo, path) */
  onUploaded(s: FileState, res: UploadResult, repo: string, path: string): void;
  /** the local version of the file at `path` was saved as `copy` (the server's version keeps `path`) */
  onConflict?(repo: string, path: string, copy: string): void;
  /** a folder made in the mount is on the server now (pending-folders.ts) */
  folderCreated?(repo: string, path: string): void;
  /** a folder deleted on the server was created again to hold a file */
  folderRecreated?(repo: string, dir: string): void;
  /** the server is unreachable: uploads wait until it is back (retryNow) instead of spending attempts */
  offline?(): boolean;
  log(msg: string): void;
}

export interface WriteBackOptions {
  /** bytes the cache dir may hold (--cache-max-size): writes wait for uploads past it (cache-room.ts; 0: no limit) */
  cacheMaxBytes?: number;
  /** the read cache, which gives way to files being written */
  readCache?: ReadCacheShare;
  concurrency?: number;
  /** several new small files of a folder in one POST (when the API offers uploadBatch; default 128) */
  batchMaxFiles?: number;
  batchMaxBytes?: number;
  /** larger files are uploaded on their own */
  batchFileMax?: number;
  /** batches of one folder sent at once (default 1); files closed meanwhile gather into the next */
  batchesPerFolder?: number;
  /**
   * a folder's next batch starts at least this long after its last one
   * started (unless it is full): in a burst (untar, cp -r) fewer, fuller
   * batches, each one listing and one commit (default 50 ms)
   */
  batchGapMs?: number;
  /**
   * a new file waits this long after its last close before its upload starts,
   * so that a write-temp-then-rename lands in one upload at the final name
   * (default 0: uploads start at close, which keeps the server closest to the mount)
   */
  newFileDelayMs?: number;
  maxAttempts?: number;
  /** at unmount, how long uploads wait for an unreachable server before they are left in the journal (default 30 s) */
  offlineGraceMs?: number;
  linkTtlMs?: number;
  retryBaseMs?: number;
  /** a file written from offset 0 starts streaming (when the API offers startUploadStream) once it is this large (default 8 MiB) */
  streamThresholdBytes?: number;
  /** at most this many files stream at once; others upload after close (default 4) */
  maxStreams?: number;
  /** a new file is held in memory until it is larger than this (default 1 MiB; 0: never in memory) */
  memoryFileMax?: number;
  /**
   * bytes all new files held in memory may take together (default 8 MiB; up to 4x that while the server's
   * round trip is above 20 ms: local-data.ts); others go to temp files
   */
  memoryBudget?: number;
  /** uploads by blocks (blocks/block-uploads.ts): the threshold and request sizes */
  blocks?: BlockOptions;
}

/** Counters of the write path, shown by `status`. */
export interface WriteStats {
  uploads: number;
  uploadedBytes: number;
  failures: number;
  linkRequests: number;
  batches: number;
  streams: number;
  streamed: number;
  streamAborts: number;
  streamFailures: number;
  /** local versions saved as conflict copies */
  conflicts: number;
  /** uploads the server stored at another size than was sent (sent again) */
  storedWrong: number;
  /** the conflict check's window: from the listing's answer to the upload's answer (ms), summed, worst, count */
  checkWindowTotalMs: number;
  checkWindowMaxMs: number;
  checkWindows: number;
}

export function newWriteStats(): WriteStats {
  return {
    uploads: 0,
    uploadedBytes: 0,
    failures: 0,
    linkRequests: 0,
    batches: 0,
    streams: 0,
    streamed: 0,
    streamAborts: 0,
    streamFailures: 0,
    conflicts: 0,
    storedWrong: 0,
    checkWindowTotalMs: 0,
    checkWindowMaxMs: 0,
    checkWindows: 0,
  };
}

/**
 * Names an upload cannot carry faithfully, so such files are uploaded under a
 * temporary name and renamed through the API (which keeps them as they are):
 * a double quote or CR/LF (a multipart filename="..." turns them into %22,
 * %0D, %0A); a backslash (the C fileserver keeps only what follows the last
 * `\` or `/` of an upload's name, so "a\b.txt" would be stored as "b.txt");
 * and names over 249 bytes (the C fileserver writes the upload to a temporary
 * file named after it plus 6 characters, which fails with 500 past 255).
 */
export function uploadsUnderTempName(name: string): boolean {
  return /["\r\n\\]/.test(name) || Buffer.byteLength(name, 'utf8') > MAX_UPLOAD_NAME;
}

/** the longest name (bytes) the C fileserver's upload takes (seafile-server upload-file.c open_temp_file) */
export const MAX_UPLOAD_NAME = 249;
