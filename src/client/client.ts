// One file on purpose, though over 500 lines: it is the one class behind SeafileApi, a one-line delegation per operation; split, it would need partial classes.
// SeafileClient: every web API operation seafs uses, over one keep-alive
// undici Agent (http.ts). The operations live by endpoint family in
// endpoints/ (session, libraries, folders, files, downloads, uploads,
// history, share links, starred and search, notifications), each a function of the HTTP
// core naming its operation (for errors), its retry class (retry.ts) and
// its error context (status-map.ts); the class holds the session state
// (token, library passwords, options) and delegates. The one exception is
// streamGet, the reader's sequential stream, over a bare socket
// (raw-get.ts) unless the rawStreams option is off.
import { StreamUnsupported } from './errors.js';
import type { RateLimits } from './bandwidth.js';
import { httpOptionsOf, type ClientOptions } from './client-options.js';
import { FileLocks } from './file-locks.js';
import { HttpCore, type Call } from './http.js';
import { LibraryPasswords, type UnlockEvent } from './library-passwords.js';
import { DirectDownloads } from './direct-download.js';
import { rawGet } from './raw-get.js';
import { relockingStream } from './relock.js';
import { streamUploadFor } from './stream-upload.js';
import { uploadManyFor } from './upload-many.js';
import { changeWatcher } from './endpoints/notifications.js';
import { batchDelete, batchTransfer, type BatchState } from './endpoints/batch.js';
import * as downloads from './endpoints/downloads.js';
import * as files from './endpoints/files.js';
import * as folders from './endpoints/folders.js';
import * as history from './endpoints/history.js';
import * as libraries from './endpoints/libraries.js';
import * as links from './endpoints/share-links.js';
import * as session from './endpoints/session.js';
import * as starred from './endpoints/starred-search.js';
import * as uploads from './endpoints/uploads.js';
import { thumbnail } from './endpoints/thumbnails.js';
import * as blocks from './endpoints/blocks.js';
import type {
  AccountInfo,
  ChangeFeed,
  ChangeFeedHooks,
  BlockPiece,
  BlocksCommit,
  BlocksLink,
  FileBlocks,
  CommitRecord,
  CreatedLibrary,
  DirListing,
  DownloadLink,
  FileDetail,
  Thumbnail,
  Library,
  LibraryHistory,
  LibraryHistoryPage,
  LibraryInfo,
  LibraryType,
  RangeDownload,
  SearchResult,
  SeafileApi,
  LoginDevice,
  ServerInfo,
  StartUploadStream,
  ShareLink,
  StarredFile,
  StreamControl,
  StreamSink,
  TrashPage,
  UploadBatch,
  UploadedFile,
  UploadLinkShare,
} from './types.js';

export type { ClientOptions, RateLimits };

export class SeafileClient implements SeafileApi {
  readonly http: HttpCore;
  readonly uploadBatch: UploadBatch;
  readonly startUploadStream?: StartUploadStream;
  readonly watchChanges?: (repos: string[], hooks: ChangeFeedHooks) => ChangeFeed;
  private readonly rawStreams: boolean;
  /** the file server's direct download (12.0+), its address learned from download links */
  private readonly direct = new DirectDownloads();
  private readonly locks: FileLocks;
  private readonly batch: BatchState = { missing: new Set() };

  /** told when a library password was sent again by the client itself (the mount logs it) */
  onUnlockAgain: ((ev: UnlockEvent) => void) | undefined;
  /** Passwords of encrypted libraries unlocked through this client: re-sent on a timer and when the server forgot them. */
  private readonly libraryPasswords: LibraryPasswords;

  constructor(opts: ClientOptions) {
    this.rawStreams = opts.rawStreams ?? true;
    this.http = new HttpCore(httpOptionsOf(opts));
    this.locks = new FileLocks(this.http);
    this.onUnlockAgain = opts.onUnlockAgain;
    this.libraryPasswords = new LibraryPasswords(
      (repo, password) => libraries.unlockLibrary(this.http, repo, password),
      opts.unlockRefreshMs,
      (ev) => this.onUnlockAgain?.(ev),
    );
    this.http.relock = (repo, since) => this.libraryPasswords.again(repo, since);
    this.uploadBatch = uploadManyFor(this, { raw: opts.rawUploads ?? true });
    if (opts.streamUploads !== false) this.startUploadStream = streamUploadFor(this.http.tls, this.http.bandwidth.up);
    const notify = opts.notifications;
    if (notify !== false) this.watchChanges = changeWatcher(this.http, opts.baseUrl, notify);
  }

  /** Stops re-sending a library's password. */
  forgetLibraryPassword(repoId: string): void {
    this.libraryPasswords.forget(repoId);
  }

  get token(): string | undefined {
    return this.http.token;
  }

  setToken(token: string | undefined): void {
    this.http.token = token;
  }

  /** The bandwidth limits of uploads and downloads of file content (bytes/s; null: none). */
  get bandwidth(): RateLimits {
    return this.http.bandwidth.limits();
  }

  /** Changes the bandwidth limits; transfers under way keep to the new ones from their next chunk. */
  setBandwidth(limits: RateLimits): void {
    this.http.bandwidth.set(limits);
  }

  /** Closes the keep-alive connections and stops re-sending library passwords. */
  close(): Promise<void> {
    this.libraryPasswords.close();
    return this.http.close();
  }

  // ---- session and account (endpoints/session.ts) ----

  /**
   * Logs in and returns a client holding the token. A server that resets,
   * times out or fails (5xx, 429) is asked again with backoff for up to
   * loginRetryMs (a mount must not die at start on one lost answer);
   * a login with a one-time code is not repeated (the code may be spent).
   */
  static async login(
    opts: ClientOptions,
    username: string,
    password: string,
    otp?: string,
    device?: LoginDevice,
  ): Promise<{ client: SeafileClient; token: string }> {
    const client = new SeafileClient({ ...opts, token: undefined });
    const attempt = () => client.login(username, password, otp, device);
    const token = await session.loginPatiently(
      client.http,
      attempt,
      otp !== undefined,
      opts.loginRetryMs ?? 30_000,
      () => client.close(),
    );
    return { client, token };
  }

  /** POST /api2/auth-token/; keeps the token for later calls and returns it (`device`: a token of that device). */
  login(username: string, password: string, otp?: string, device?: LoginDevice): Promise<string> {
    return session.login(this.http, username, password, otp, device);
  }

  /** GET /api2/ping/ (no auth). */
  ping(): Promise<void> {
    return session.ping(this.http);
  }

  reachable(): Promise<boolean> {
    return session.reachable(this.http);
  }

  /** GET /api2/auth/ping/: throws `unauthorized` when the token is not valid. */
  authPing(): Promise<void> {
    return session.authPing(this.http);
  }

  serverInfo(): Promise<ServerInfo> {
    return session.serverInfo(this.http);
  }

  accountInfo(): Promise<AccountInfo> {
    return session.accountInfo(this.http);
  }

  /** GET /api2/devices/: the account's devices, as the web interface lists them. */
  listDevices(): Promise<session.DeviceEntry[]> {
    return session.listDevices(this.http);
  }

  /** POST /api2/logout-device/: the server deletes this client's token. */
  logoutDevice(): Promise<void> {
    return session.logoutDevice(this.http);
  }

  /** DELETE /api2/devices/: unlinks a device of the account (its token is deleted). */
  unlinkDevice(platform: string, deviceId: string): Promise<void> {
    return session.unlinkDevice(this.http, platform, deviceId);
  }

  /** GET /api2/default-repo/: the account's default library's id, or null. */
  defaultLibrary(): Promise<string | null> {
    return session.defaultLibrary(this.http);
  }

  /** PUT /api2/accounts/{email}/ (administrators): creates or updates an account. */
  putAccount(email: string, fields: session.AccountFields): Promise<void> {
    return session.putAccount(this.http, email, fields);
  }

  deleteAccount(email: string): Promise<void> {
    return session.deleteAccount(this.http, email);
  }

  // ---- libraries and sharing (endpoints/libraries.ts) ----

  /** PUT /api2/shared-repos/{repo}/ with share_type=personal: shares a library with users. */
  shareLibrary(repoId: string, users: string[], permission: 'r' | 'rw'): Promise<void> {
    return libraries.shareLibrary(this.http, repoId, users, permission);
  }

  unshareLibrary(repoId: string, user: string): Promise<void> {
    return libraries.unshareLibrary(this.http, repoId, user);
  }

  listLibraries(type?: LibraryType): Promise<Library[]> {
    return libraries.listLibraries(this.http, type);
  }

  getLibrary(repoId: string): Promise<LibraryInfo> {
    return libraries.getLibrary(this.http, repoId);
  }

  /** POST /api2/repos/; with `password` the library is encrypted. */
  createLibrary(name: string, opts: { desc?: string; password?: string } = {}): Promise<CreatedLibrary> {
    return libraries.createLibrary(this.http, name, opts);
  }

  deleteLibrary(repoId: string): Promise<void> {
    return libraries.deleteLibrary(this.http, repoId);
  }

  /** POST /api2/repos/{id}/?op=rename: libraries are renamed as asked (no auto-rename), so this is idempotent. */
  renameLibrary(repoId: string, newName: string): Promise<void> {
    return libraries.renameLibrary(this.http, repoId, newName);
  }

  /**
   * POST /api2/repos/{id}/ with the password. The server forgets it an hour
   * after it was given (and at a restart); the client remembers it, sends it
   * again every `unlockRefreshMs`, and when a later call on this library is
   * refused for want of it (file-server calls: given their `repoId`), unlocks
   * again and resends that call once.
   */
  async unlockLibrary(repoId: string, password: string): Promise<void> {
    await libraries.unlockLibrary(this.http, repoId, password);
    this.libraryPasswords.remember(repoId, password);
  }

  // ---- history and trash (endpoints/history.ts) ----

  libraryHistory(repoId: string): Promise<LibraryHistory> {
    return history.libraryHistory(this.http, repoId);
  }

  libraryHistoryV21(repoId: string, opts: { page?: number; perPage?: number } = {}): Promise<LibraryHistoryPage> {
    return history.libraryHistoryV21(this.http, repoId, opts);
  }

  /** One page of the trash; pass the previous page's `scan_stat` to continue. */
  libraryTrash(
    repoId: string,
    opts: { path?: string; perPage?: number; scanStat?: string | null } = {},
  ): Promise<TrashPage> {
    return history.libraryTrash(this.http, repoId, opts);
  }

  fileHistory(repoId: string, path: string): Promise<CommitRecord[]> {
    return history.fileHistory(this.http, repoId, path);
  }

  /** A download URL of the file as it was at `commitId`. */
  fileRevisionLink(repoId: string, path: string, commitId: string): Promise<string> {
    return history.fileRevisionLink(this.http, repoId, path, commitId);
  }

  /** PUT .../dir/revert/: the folder as it was at `commitId` is put back (restoring a trashed folder). */
  revertDir(repoId: string, path: string, commitId: string): Promise<void> {
    return history.revert(this.http, 'dir', repoId, path, commitId);
  }

  // ---- folders (endpoints/folders.ts) ----

  listDir(
    repoId: string,
    path: string,
    opts: { oid?: string; type?: 'f' | 'd'; recursive?: boolean } = {},
  ): Promise<DirListing> {
    return folders.listDir(this.http, repoId, path, opts);
  }

  /** POST .../dir/?p= operation=mkdir; without createParents a lost answer is checked before a resend. */
  mkdir(repoId: string, path: string, opts: { createParents?: boolean } = {}): Promise<void> {
    return folders.mkdir(this.http, repoId, path, opts);
  }

  renameDir(repoId: string, path: string, newName: string): Promise<void> {
    return folders.renameDir(this.http, repoId, path, newName);
  }

  deleteDir(repoId: string, path: string): Promise<void> {
    return folders.deleteDir(this.http, repoId, path);
  }

  // ---- files (endpoints/files.ts) ----

  fileDetail(repoId: string, path: string): Promise<FileDetail> {
    return files.fileDetail(this.http, repoId, path);
  }

  thumbnail(repoId: string, path: string, size: number): Promise<Thumbnail> {
    return thumbnail(this.http, repoId, path, size);
  }

  /** POST .../file/?p= operation=create (201); a clash is auto-renamed by the server, so a lost answer is checked before a resend. */
  createFile(repoId: string, path: string): Promise<void> {
    return files.createFile(this.http, repoId, path);
  }

  /** 301 is success and is not followed; an existing target name is auto-renamed by the server. */
  renameFile(repoId: string, path: string, newName: string): Promise<void> {
    return files.renameFile(this.http, repoId, path, newName);
  }

  moveFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    return files.moveFile(this.http, repoId, path, dstRepo, dstDir);
  }

  copyFile(repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
    return files.copyFile(this.http, repoId, path, dstRepo, dstDir);
  }

  /** Real servers answer success for a missing file too. */
  deleteFile(repoId: string, path: string): Promise<void> {
    return files.deleteFile(this.http, repoId, path);
  }

  /** Pro only: on a server without locks this fails with `unsupported` (file-locks.ts). */
  lockFile(repoId: string, path: string): Promise<void> {
    return this.locks.set(repoId, path, 'lock');
  }

  /** An unlock of a file nobody locked succeeds (Pro); `unsupported` without locks. */
  unlockFile(repoId: string, path: string): Promise<void> {
    return this.locks.set(repoId, path, 'unlock');
  }

  /** Whether the server has file locks, learned once (server-info, or the answer of a lock). */
  supportsFileLocks(): Promise<boolean> {
    return this.locks.supported();
  }

  /** PUT .../file/revert/: the file's content at `commitId` becomes current again. */
  revertFile(repoId: string, path: string, commitId: string): Promise<void> {
    return history.revert(this.http, 'file', repoId, path, commitId);
  }

  /** sync-batch-move-item (names as a JSON array; fileops only on servers without it); clashes are auto-renamed. */
  batchMove(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    return batchTransfer(this.http, this.batch, 'move', repoId, srcDir, names, dstRepo, dstDir);
  }

  batchCopy(repoId: string, srcDir: string, names: string[], dstRepo: string, dstDir: string): Promise<void> {
    return batchTransfer(this.http, this.batch, 'copy', repoId, srcDir, names, dstRepo, dstDir);
  }

  /** batch-delete-item (names as a JSON array; fileops only on servers without it) */
  batchDelete(repoId: string, srcDir: string, names: string[]): Promise<void> {
    return batchDelete(this.http, this.batch, repoId, srcDir, names);
  }

  // ---- downloads (endpoints/downloads.ts, raw-get.ts) ----

  /** A download URL; with reuse it serves many requests for about an hour, without it only one. */
  downloadLink(repoId: string, path: string, opts: { reuse?: boolean } = {}): Promise<DownloadLink> {
    return downloads.downloadLink(this.http, repoId, path, opts).then((l) => {
      this.direct.noteLink(l.url);
      return l;
    });
  }

  /**
   * The direct download URL of a file (Seafile 12.0+: no download link first), or null while the file
   * server's address is not known (it is learned from the first download link). The caller checks that
   * the server has it (its version) and compares each answer's ETag with the version it reads.
   */
  directDownloadUrl(repoId: string, path: string): string | null {
    return this.direct.urlFor(repoId, path);
  }

  /**
   * SeafileApi's streaming GET: over a bare socket, straight into the sink's
   * buffers (raw-get.ts); a socket silent for `idleMs` (default: the call
   * timeout) ends the stream with a timeout error. Throws StreamUnsupported for what it cannot read
   * (https) and when the `rawStreams` option is off.
   */
  streamGet(
    url: string,
    start: number,
    sink: StreamSink,
    opts: { idleMs?: number; end?: number; repoId?: string } = {},
  ): StreamControl {
    if (!this.rawStreams) throw new StreamUnsupported('raw streams are off');
    const auth = this.direct.isDirect(url) && this.http.token ? `Token ${this.http.token}` : undefined;
    const open = (s: StreamSink) =>
      rawGet(url, start, s, opts.idleMs ?? this.timeoutMs, opts.end, auth, this.http.bandwidth.down);
    if (opts.repoId === undefined) return open(sink);
    return relockingStream(open, sink, opts.repoId, (repo, since) => this.libraryPasswords.again(repo, since));
  }

  /** how long a call may wait for an answer (the mount's --timeout); also a stream's idle limit */
  get timeoutMs(): number {
    return this.http.opts.timeoutMs;
  }

  /** GET of a download URL with an optional single range; the body streams. */
  download(
    url: string,
    range?: { start: number; end?: number },
    opts: { repoId?: string } = {},
  ): Promise<RangeDownload> {
    return downloads.download(this.http, url, range, { ...opts, auth: this.direct.isDirect(url) });
  }

  // ---- uploads (endpoints/uploads.ts) ----

  /** An upload URL for folder `dir` (reusable for about an hour). Over quota: `quota`. */
  uploadLink(repoId: string, dir: string): Promise<string> {
    return uploads.uploadLink(this.http, repoId, dir);
  }

  updateLink(repoId: string, dir: string): Promise<string> {
    return uploads.updateLink(this.http, repoId, dir);
  }

  /**
   * Streams `localFile` to an upload link, retried by the retry policy with
   * a fresh body each time. With replace a resend is harmless; without it a
   * resend after a lost answer would make "name (1)", so the folder is looked
   * at first: a file of this name (or the server's renaming of it) with this
   * size, stored since the first attempt began, means the upload is done.
   * `repoId` enables that check (without it a lost answer is not resent) and
   * the unlock again when the file server forgot the library's password.
   */
  upload(
    link: string,
    parentDir: string,
    localFile: string,
    name: string,
    opts: { replace?: boolean; relativePath?: string; repoId?: string } = {},
  ): Promise<UploadedFile[]> {
    return uploads.upload(this.http, link, parentDir, localFile, name, opts);
  }

  /**
   * Replaces the content of `targetFile` (a full library path) with `localFile`; returns the new file id. A resend is
   * harmless. `opts.lastModify` (ms): the modification time the server records (last_modify).
   */
  update(
    link: string,
    targetFile: string,
    localFile: string,
    opts: { lastModify?: number; repoId?: string } = {},
  ): Promise<string> {
    return uploads.update(this.http, link, targetFile, localFile, opts);
  }

  /**
   * POSTs a multipart body to an upload or update link and returns the answer's text.
   * Never retried: the body is a one-shot stream and a repeat could create "name (1)".
   */
  postUpload(op: string, link: string, body: Call['body']): Promise<{ text: string }> {
    return uploads.postUpload(this.http, op, link, body);
  }

  // ---- uploads by blocks (endpoints/blocks.ts) ----

  blocksLink(repoId: string, dir: string, ids: string[]): Promise<BlocksLink> {
    return blocks.blocksLink(this.http, repoId, dir, ids);
  }

  uploadBlocks(rawUrl: string, pieces: BlockPiece[], opts: { repoId?: string } = {}): Promise<void> {
    return blocks.uploadBlocks(this.http, rawUrl, pieces, opts);
  }

  commitBlocks(commitUrl: string, c: BlocksCommit): Promise<string> {
    return blocks.commitBlocks(this.http, commitUrl, c);
  }

  fileBlocks(repoId: string, path: string): Promise<FileBlocks> {
    return blocks.fileBlocks(this.http, repoId, path);
  }

  // ---- share links and upload links, V2.1 (endpoints/share-links.ts) ----

  createShareLink(
    repoId: string,
    path: string,
    opts: { password?: string; expireDays?: number } = {},
  ): Promise<ShareLink> {
    return links.createShareLink(this.http, repoId, path, opts);
  }

  listShareLinks(opts: { repoId?: string; path?: string } = {}): Promise<ShareLink[]> {
    return links.listShareLinks(this.http, opts);
  }

  deleteShareLink(token: string): Promise<void> {
    return links.deleteShareLink(this.http, token);
  }

  /** A public upload link (V2.1 upload-links), not to be confused with uploadLink(). */
  createPublicUploadLink(repoId: string, path: string, opts: { password?: string } = {}): Promise<UploadLinkShare> {
    return links.createPublicUploadLink(this.http, repoId, path, opts);
  }

  listPublicUploadLinks(): Promise<UploadLinkShare[]> {
    return links.listPublicUploadLinks(this.http);
  }

  deletePublicUploadLink(token: string): Promise<void> {
    return links.deletePublicUploadLink(this.http, token);
  }

  // ---- starred files and search (endpoints/starred-search.ts) ----

  listStarred(): Promise<StarredFile[]> {
    return starred.listStarred(this.http);
  }

  starFile(repoId: string, path: string): Promise<void> {
    return starred.starFile(this.http, repoId, path);
  }

  unstarFile(repoId: string, path: string): Promise<void> {
    return starred.unstarFile(this.http, repoId, path);
  }

  search(query: string, opts: { perPage?: number } = {}): Promise<SearchResult> {
    return starred.search(this.http, query, opts);
  }
}
