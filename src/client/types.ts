// The client surface the rest of seafs codes against (SeafileApi: the vfs
// depends on this interface, not on the HTTP implementation, so it can be
// tested with fakes), and the shapes of the service's web API as the client
// returns them, re-exported from shapes/ (by family) so that this file stays
// the one the vfs imports.
import type { AccountInfo, ChangeFeed, ChangeFeedHooks, ServerInfo } from './shapes/account.js';
import type { DirListing, FileDetail, ShareLink, Thumbnail } from './shapes/files.js';
import type { CommitRecord, Library, LibraryInfo, LibraryType, TrashPage } from './shapes/libraries.js';
import type {
  BlockPiece,
  BlocksCommit,
  BlocksLink,
  DownloadLink,
  FileBlocks,
  RangeDownload,
  StartUploadStream,
  StreamControl,
  StreamSink,
  UploadBatch,
  UploadedFile,
} from './shapes/transfers.js';

export * from './shapes/account.js';
export * from './shapes/files.js';
export * from './shapes/libraries.js';
export * from './shapes/transfers.js';

/**
 * The operations the filesystem core needs. `SeafileClient` implements it;
 * tests of the vfs may implement it with fakes.
 * Paths are library paths starting with '/'. Errors are thrown as ApiError.
 */
export interface SeafileApi {
  accountInfo(): Promise<AccountInfo>;
  /** the server's version and features (no login needed) */
  serverInfo?(): Promise<ServerInfo>;
  listLibraries(type?: LibraryType): Promise<Library[]>;
  getLibrary(repoId: string): Promise<LibraryInfo>;
  unlockLibrary(repoId: string, password: string): Promise<void>;

  listDir(
    repoId: string,
    path: string,
    opts?: { oid?: string; type?: 'f' | 'd'; recursive?: boolean },
  ): Promise<DirListing>;
  /**
   * Creates the folder and returns nothing. Without `createParents` a name
   * taken is auto-renamed by the server; with it, what is missing above is
   * made too and a folder that exists is no error.
   */
  mkdir(repoId: string, path: string, opts?: { createParents?: boolean }): Promise<void>;
  renameDir(repoId: string, path: string, newName: string): Promise<void>;
  deleteDir(repoId: string, path: string): Promise<void>;

  fileDetail(repoId: string, path: string): Promise<FileDetail>;
  downloadLink(repoId: string, path: string, opts?: { reuse?: boolean }): Promise<DownloadLink>;
  /**
   * GET a download URL, optionally with a byte range [start, end] inclusive; streams the body.
   * File-server calls (this, upload, update, uploadBatch, streamGet) take the library's id
   * (`repoId`): the file server refuses them when it forgot an encrypted library's password,
   * and the client then unlocks again and resends once.
   */
  download(url: string, range?: { start: number; end?: number }, opts?: { repoId?: string }): Promise<RangeDownload>;
  /**
   * Seafile 12.0+: the file server's direct URL of a file (no download link first), null while not
   * known; download() and streamGet() send it the API token. Its answers name their version in the ETag.
   */
  directDownloadUrl?(repoId: string, path: string): string | null;
  /**
   * The server's thumbnail of a picture: scaled to fit size x size, aspect kept, never up (seahub answers PNG;
   * 400 for a file it cannot read as a picture or over its size limit, 403 in an encrypted library). The
   * server reads the file itself: nothing of the file is downloaded.
   */
  thumbnail?(repoId: string, path: string, size: number): Promise<Thumbnail>;
  createFile(repoId: string, path: string): Promise<void>;
  renameFile(repoId: string, path: string, newName: string): Promise<void>;
  moveFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void>;
  copyFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void>;
  deleteFile(repoId: string, path: string): Promise<void>;

  batchMove(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void>;
  batchCopy(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void>;
  batchDelete(repoId: string, srcDir: string, names: string[]): Promise<void>;

  uploadLink(repoId: string, dir: string): Promise<string>;
  /** multipart upload of a local file, streamed from disk; returns what the server says it stored */
  upload(
    link: string,
    parentDir: string,
    localFile: string,
    name: string,
    opts?: { replace?: boolean; relativePath?: string; repoId?: string },
  ): Promise<UploadedFile[]>;
  updateLink(repoId: string, dir: string): Promise<string>;
  /** replaces the content of an existing file; returns the new file id */
  update(
    link: string,
    targetFile: string,
    localFile: string,
    opts?: { lastModify?: number; repoId?: string },
  ): Promise<string>;

  // --- optional capabilities: multi-file and streaming uploads (write path) ---
  // Like rclone's Features: absent when the implementation (or its options)
  // does not offer them; the write path then sends one upload() per file,
  // after the file's last close.
  /** several new files of one folder in one POST (one server commit instead of one per file) */
  readonly uploadBatch?: UploadBatch;
  /** a chunked upload that runs while a large file is written */
  readonly startUploadStream?: StartUploadStream;

  // --- optional capability: changes pushed by the server's notification server (notification-feed.ts) ---
  /** follows changes to `repos` (by notification where the server has them; `mode` says which) */
  watchChanges?(repos: string[], hooks: ChangeFeedHooks): ChangeFeed;

  // --- optional capability: uploads by blocks (endpoints/blocks.ts; the write path's blocks/ modules) ---
  /** POST upload-blks-link: which of `ids` the server lacks, and the links for blocks and the commit */
  blocksLink?(repoId: string, dir: string, ids: string[]): Promise<BlocksLink>;
  /** POST blocks to a BlocksLink's rawUrl (several per request) */
  uploadBlocks?(rawUrl: string, blocks: BlockPiece[], opts?: { repoId?: string }): Promise<void>;
  /** POST the commit of a file made of blocks; returns its file id (446: a block is missing) */
  commitBlocks?(commitUrl: string, c: BlocksCommit): Promise<string>;
  /** GET file/?op=downloadblks: the block ids of the file at `path` */
  fileBlocks?(repoId: string, path: string): Promise<FileBlocks>;

  // --- optional capability: file locks (servers whose edition has them) ---
  /** lock a file for this account (others then cannot change it) */
  lockFile?(repoId: string, path: string): Promise<void>;
  unlockFile?(repoId: string, path: string): Promise<void>;
  /** whether the server has file locks (Pro); learned once. Absent: as lockFile is */
  supportsFileLocks?(): Promise<boolean>;
  /** one request, no retries: true when the server answers at all (an offline mount's quick look) */
  reachable?(): Promise<boolean>;
  // --- optional capability: share links (the mount's user.seafile.share_link attribute) ---
  /** the account's share links, of one library when `repoId` is given */
  listShareLinks?(opts?: { repoId?: string; path?: string }): Promise<ShareLink[]>;
  createShareLink?(repoId: string, path: string, opts?: { password?: string; expireDays?: number }): Promise<ShareLink>;
  /** delete one of the account's links (an expired link must go before its path gets a new one) */
  deleteShareLink?(token: string): Promise<void>;

  // --- optional capability: history and trash (the mount's .seafile-history and .seafile-trash) ---
  /** the versions of a file, newest first (404 when it does not exist now) */
  fileHistory?(repoId: string, path: string): Promise<CommitRecord[]>;
  /** a download URL of the file as it was at `commitId` (single use on real servers) */
  fileRevisionLink?(repoId: string, path: string, commitId: string): Promise<string>;
  /** one page of the library's trash; pass the previous page's `scan_stat` to continue */
  libraryTrash?(
    repoId: string,
    opts: { path?: string; perPage?: number; scanStat?: string | null },
  ): Promise<TrashPage>;
  /** the file (or folder) as it was at `commitId` is put back at `path` */
  revertFile?(repoId: string, path: string, commitId: string): Promise<void>;
  revertDir?(repoId: string, path: string, commitId: string): Promise<void>;

  // --- optional capability: streaming GET (read path) ---
  // A GET of a download URL from byte `start` (to `end` or the end of the file) whose body is read
  // straight into buffers the sink hands out: no copy and no allocation per network read.
  // The reader's sequential stream uses it when present, and `download()` otherwise.
  // Refusals are ApiError (through sink.end); a URL or answer it cannot read is
  // StreamUnsupported (thrown, or through sink.end before head()): the caller then uses
  // `download()`. `idleMs`: give up (ApiError 'timeout') when nothing arrives this long
  // (default: the client's call timeout, the mount's --timeout). `end`: the last byte
  // wanted (inclusive); without it the GET runs to the end of the file.
  // SeafileClient: over a bare socket for plain-http URLs (its `rawStreams` option).
  streamGet?(
    url: string,
    start: number,
    sink: StreamSink,
    opts?: { idleMs?: number; end?: number; repoId?: string },
  ): StreamControl;
}
