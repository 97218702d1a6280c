// Shapes of the service's web API as the client returns them, and the
// client surface the rest of seafs codes against (the vfs depends on this
// interface, not on the HTTP implementation, so it can be tested with fakes).
import type { Readable } from 'node:stream';

export type LibraryType = 'mine' | 'shared' | 'group' | 'org';

export interface Library {
  id: string;
  name: string;
  owner: string;
  permission: 'r' | 'rw';
  encrypted: boolean;
  mtime: number; // epoch seconds
  size: number;
  type: 'repo' | 'srepo' | 'grepo';
  root?: string;
  head_commit_id?: string;
  [extra: string]: unknown;
}

export interface LibraryInfo {
  id: string;
  name: string;
  /** "self" or "share" (whose it is, from the caller's side), not an e-mail: the list's `owner` is the e-mail */
  owner: string;
  size: number;
  root?: string;
  encrypted: boolean;
  mtime: number | null;
  permission?: 'r' | 'rw';
  [extra: string]: unknown;
}

/** The id the service gives every empty file and empty folder (no content object behind it). */
export const ZERO_ID = '0000000000000000000000000000000000000000';

export interface DirEntry {
  type: 'file' | 'dir';
  name: string;
  id: string;
  mtime: number; // epoch seconds
  size?: number; // files only
  permission?: 'r' | 'rw';
  parent_dir?: string; // recursive listings only, normalised to '/a/b' (no trailing slash except root)
  /** servers with locking: the file is locked, by whom, and whether by this account */
  is_locked?: boolean;
  lock_owner?: string;
  locked_by_me?: boolean;
  [extra: string]: unknown;
}

/** Result of a folder listing. `uptodate` means the `oid` passed in is still current. */
export type DirListing = { uptodate: false; oid: string | null; entries: DirEntry[] } | { uptodate: true; oid: string };

/** a picture's thumbnail as the server sent it */
export interface Thumbnail {
  /** the media type of the answer ('image/png' from seahub) */
  type: string;
  bytes: Buffer;
}

export interface FileDetail {
  type: 'file';
  id: string;
  name: string;
  mtime: number;
  size: number;
  permission?: 'r' | 'rw';
  [extra: string]: unknown;
}

export interface AccountInfo {
  usage: number;
  total: number; // -2 means unlimited
  email: string;
  name?: string;
  [extra: string]: unknown;
}

/** What a login tells the server of the device (seahub's platform, device_id, device_name...). */
export interface LoginDevice {
  /** 'linux', 'mac', 'windows' (desktop: a 40-character device id), 'android', 'ios' */
  platform: string;
  deviceId: string;
  deviceName: string;
  clientVersion?: string;
  platformVersion?: string;
}

export interface ServerInfo {
  version: string;
  features: string[];
  [extra: string]: unknown;
}

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

export interface CommitRecord {
  id: string;
  parent_id: string | null;
  second_parent_id: string | null;
  root_id: string;
  repo_id: string;
  creator: string;
  creator_name: string;
  ctime: number;
  desc: string;
  rev_file_id?: string | null;
  rev_file_size?: number;
  rev_renamed_old_path?: string | null;
  [extra: string]: unknown;
}

export interface HistoryEntryV21 {
  commit_id: string;
  time: string;
  description: string;
  creator: string;
}

export interface TrashEntry {
  commit_id: string;
  obj_id: string;
  obj_name: string;
  is_dir: boolean;
  parent_dir: string;
  size: number;
  deleted_time: string;
  scan_stat: string | null;
}

export interface ShareLink {
  username: string;
  repo_id: string;
  ctime: string;
  expire_date: string | null;
  token: string;
  view_cnt: number;
  link: string;
  path: string;
  is_expired: boolean;
  obj_name?: string;
  is_dir?: boolean;
  repo_name?: string;
}

export interface UploadLinkShare {
  username: string;
  repo_id: string;
  ctime: string;
  token: string;
  link: string;
  path: string;
}

export interface StarredFile {
  repo: string;
  mtime: number;
  org: number;
  path: string;
  dir: boolean;
  size: number;
}

export interface SearchResult {
  total: number;
  has_more: boolean;
  results: { repo_id: string; name: string; oid: string; fullpath: string; size: number; last_modified: number }[];
}

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

/** What POST /api2/repos/ answers. */
export interface CreatedLibrary {
  repo_id: string;
  repo_name: string;
  encrypted: boolean | string | number;
  [extra: string]: unknown;
}

/** GET /api2/repos/{id}/history/ (V2). */
export interface LibraryHistory {
  commits: CommitRecord[];
  page_next: boolean;
}

/** GET /api/v2.1/repos/{id}/history/. */
export interface LibraryHistoryPage {
  data: HistoryEntryV21[];
  more: boolean;
}

/** GET /api/v2.1/repos/{id}/trash/: pass `scan_stat` back to get the next page. */
export interface TrashPage {
  data: TrashEntry[];
  scan_stat: string | null;
  more: boolean;
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

/** A change the notification server told of. */
export interface ServerChange {
  repo: string;
  kind: 'repo-update' | 'file-lock-changed' | 'folder-perm-changed';
  /** repo-update: the library's new head */
  commitId?: string;
  /** file-lock-changed and folder-perm-changed: the path concerned */
  path?: string;
  /** file-lock-changed: 'locked' or 'unlocked' */
  changeEvent?: string;
  /** file-lock-changed: who holds the lock now ('' when unlocked) */
  lockUser?: string;
}

/** how changes made elsewhere reach the mount: pushed by the notification server, or found by revalidating */
export type ChangeMode = 'notification' | 'polling';

export interface ChangeFeedHooks {
  onChange(c: ServerChange): void;
  /** subscribed again after a break: changes made meanwhile were not told */
  onResubscribed(): void;
  onMode(mode: ChangeMode): void;
  log(line: string): void;
}

export interface ChangeFeed {
  readonly mode: ChangeMode;
  close(): void;
}
