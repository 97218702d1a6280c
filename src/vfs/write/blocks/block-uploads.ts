// Uploads by blocks: a large file of an unencrypted library is cut into
// fixed blocks (8 MiB, the cut of the server's own web and API uploads),
// each named by its SHA-1 (hashed in worker threads, common/block-hasher.ts); the server
// is asked which of them it lacks (upload-blks-link with blklist), only those
// are sent (several per request, a few requests at once), and the file is
// committed from its list of ids with replace=1. So an edit of a big file
// sends the blocks it changed, an upload cut off resumes where the server's
// blocks end, and a copy of a file the library holds sends nothing.
//
// While a file is written in order, each block the writes have passed is
// hashed and sent at once (the pump), so a fresh large file is on its way
// as it is written, as the streamed upload was. What is left (the last
// block, blocks written again) goes at the upload after the last close.
// Where the server lacks the path (404/405 on the link, 446 at the commit)
// the upload falls back to the whole-file one, and the mount remembers it
// (a file in the cache dir), so the next uploads do not ask again.
//
// This module plans: which blocks a file has (block-map.ts), what the write
// path tells, and the upload after the last close. block-pump.ts sends while
// the file is written, block-commit.ts runs the commit, block-sender.ts asks
// and sends, block-support.ts knows whether blocks can be used at all.
import type { SeafileApi } from '../../../client/types.js';
import { baseOf, parentOf } from '../../common/paths.js';
import type { FileState } from '../file-state.js';
import { setTimeOf, uploadsUnderTempName, type BlockOptions, type UploadResult } from '../types.js';
import { commitBlocks, type CommitDeps } from './block-commit.js';
import { BlockMap } from './block-map.js';
import { BlockPumps } from './block-pump.js';
import { BlockSender, type BlockProgress, type BlockStats } from './block-sender.js';
import { BlockSupport, NoBlocks } from './block-support.js';
import type { Hasher } from '../../common/block-hasher.js';

export const BLOCK_SIZE = 8 * 1024 * 1024;

export class BlockUploads {
  readonly stats: BlockStats = {
    uploads: 0,
    blocksSent: 0,
    bytesSent: 0,
    blocksSkipped: 0,
    fallbacks: 0,
    hashedBytes: 0,
  };
  readonly blockSize: number;
  private readonly threshold: number;
  private readonly support: BlockSupport;
  private readonly sender: BlockSender;
  private readonly pumps: BlockPumps;
  private readonly commitDeps: CommitDeps;
  private readonly maps = new WeakMap<FileState, BlockMap>();
  private readonly bases = new WeakMap<FileState, Promise<void>>();
  private readonly progress = new WeakMap<FileState, BlockProgress>();
  /** block lists of versions this mount hashed itself (file id -> ids), newest last */
  private readonly own = new Map<string, string[]>();

  constructor(
    private readonly api: SeafileApi,
    private readonly hasher: Hasher,
    private readonly log: (msg: string) => void,
    folderReady: (repo: string, dir: string) => Promise<void>,
    o: BlockOptions = {},
  ) {
    this.blockSize = o.blockSize ?? BLOCK_SIZE;
    this.threshold = o.threshold ?? BLOCK_SIZE;
    const off =
      !api.blocksLink || !api.uploadBlocks || !api.commitBlocks
        ? 'the client has no block calls'
        : !(this.threshold < Infinity)
          ? 'switched off'
          : null;
    this.support = new BlockSupport(api, log, o.stateFile, off);
    this.sender = new BlockSender(api, hasher, this.support, this.stats, this.blockSize, o);
    this.pumps = new BlockPumps(
      this.sender,
      hasher,
      this.blockSize,
      log,
      folderReady,
      (s, m) => this.maps.get(s) === m,
    );
    this.commitDeps = {
      api,
      hasher,
      sender: this.sender,
      support: this.support,
      stats: this.stats,
      blockSize: this.blockSize,
    };
  }

  /** Reads what an earlier mount noted about the server (it lacks the block path). */
  init(): Promise<void> {
    return this.support.init();
  }

  close(): void {
    this.hasher.close();
  }

  /** could `s` go by blocks (its size aside)? An unknown library counts as yes (asked meanwhile). */
  private candidate(s: FileState): boolean {
    return (
      this.support.off === null && !uploadsUnderTempName(baseOf(s.path)) && this.support.plainNow(s.repo) !== false
    );
  }

  /**
   * Whether the whole-file stream should stay off for `s` (it goes by blocks
   * instead): files that may go by blocks once they reach `streamThreshold`.
   */
  skipsStream(s: FileState, streamThreshold: number): boolean {
    return this.candidate(s) && (this.threshold <= streamThreshold || s.size > this.threshold);
  }

  private map(s: FileState): BlockMap {
    let m = this.maps.get(s);
    if (!m || m.blockSize !== this.blockSize) {
      m = new BlockMap(this.blockSize, s.size);
      this.maps.set(s, m);
    }
    return m;
  }

  // ---- what the write path tells ----

  /** A new file (or one emptied): nothing of it is known. */
  created(s: FileState): void {
    if (this.support.off) return;
    this.support.plainNow(s.repo);
    this.maps.set(s, new BlockMap(this.blockSize, 0));
  }

  /**
   * An existing file's local copy is ready: its blocks are those of the
   * server's version `id` (known here when this mount hashed it, else asked
   * of the server in the background).
   */
  opened(s: FileState, id: string | null, size: number): void {
    if (this.support.off || size <= this.threshold) return;
    const plain = this.support.plainNow(s.repo);
    const m = this.map(s);
    const mine = id ? this.own.get(id) : undefined;
    if (mine) {
      if (mine.length === m.count(size)) m.adoptOwn(mine);
      return;
    }
    if (!id || plain === false || !this.api.fileBlocks) return;
    const path = s.path;
    const p = this.api.fileBlocks(s.repo, path).then(
      (fb) => {
        if (fb.fileId !== id || fb.encrypted || this.maps.get(s) !== m) return;
        if (!m.adoptBase(fb.ids, size))
          this.log(`${path}: the server's blocks are not of the ${this.blockSize} byte cut; it is hashed whole`);
      },
      () => {}, // not known: the blocks are hashed
    );
    this.bases.set(s, p);
  }

  /** `len` bytes were written at `pos` (the file is `s.size` bytes now). */
  wrote(s: FileState, pos: number, len: number): void {
    const m = this.maps.get(s);
    if (!m) return;
    m.touch(pos, len, s.size);
    // a file held in memory has no temp file to hash yet
    if (
      m.seqEnd !== null &&
      m.seqEnd >= this.blockSize &&
      s.size > this.threshold &&
      s.mem === null &&
      this.candidate(s)
    )
      this.pumps.kick(s, m);
  }

  /** The file was truncated to `size`. */
  truncated(s: FileState, size: number): void {
    const m = this.maps.get(s);
    if (!m) return;
    if (size === 0) {
      this.pumps.halt(s);
      m.reset(0);
    } else m.resize(size);
  }

  /** what `seafs status` shows of the file's upload by blocks (null: none runs) */
  progressOf(s: FileState): BlockProgress | null {
    return this.progress.get(s) ?? null;
  }

  // ---- the upload ----

  /**
   * Uploads the current content of `s` to `path` by blocks; null when it
   * does not go by blocks (too small, encrypted library, no block path on
   * this server): the caller uploads it whole. The caller holds the file's lock.
   */
  async upload(
    s: FileState,
    repo: string,
    path: string,
    /** moves a file held in memory to its temp file (the hashes read it) */
    toDisk: () => Promise<void>,
  ): Promise<UploadResult | null> {
    if (this.support.off || s.size <= this.threshold || uploadsUnderTempName(baseOf(path))) return null;
    if (!(await this.support.plainOf(repo))) return null;
    await toDisk();
    await this.bases.get(s);
    await this.pumps.stop(s);
    const size = s.size;
    const m = this.map(s);
    m.resize(size);
    const time = setTimeOf(s, true);
    const dir = parentOf(path);
    const progress: BlockProgress = { toSend: 0, sent: 0, onServer: 0, blocks: m.count(size) };
    this.progress.set(s, progress);
    try {
      if (m.unverified) await this.verify(s, m, size);
      const { id, ids } = await commitBlocks(this.commitDeps, s, m, repo, dir, baseOf(path), size, progress);
      this.remember(id, ids);
      this.stats.uploads++;
      this.log(
        `${path}: uploaded by blocks (${size} bytes; ${progress.toSend} sent after close, ` +
          `${progress.onServer} of ${progress.blocks} blocks on the server by then)`,
      );
      return { id, size, ...time };
    } catch (e) {
      if (!(e instanceof NoBlocks)) throw e;
      this.stats.fallbacks++;
      return null;
    } finally {
      this.progress.delete(s);
    }
  }

  /**
   * Checks ids taken from the server's list against the local bytes: the
   * first and the last block still unwritten are hashed here. A mismatch
   * (another cut) drops them all: every block is hashed.
   */
  private async verify(s: FileState, m: BlockMap, size: number): Promise<void> {
    m.unverified = false;
    const clean = m.ids.map((x, i) => (x ? i : -1)).filter((i) => i >= 0);
    const probe = [...new Set([clean[0], clean[clean.length - 1]])].filter((i) => i !== undefined);
    for (const i of probe) {
      const gen = m.gen[i];
      const h = await this.hasher.hash(s.tmp, i * this.blockSize, m.lengthOf(i, size));
      this.stats.hashedBytes += m.lengthOf(i, size);
      if (h.id === m.ids[i]) continue;
      if (m.gen[i] !== gen) continue; // written meanwhile: its id is gone anyway
      this.log(`${s.path}: the server's block list does not match the local copy; it is hashed whole`);
      for (let k = 0; k < m.ids.length; k++) if (m.gen[k] === 0) m.ids[k] = null;
      return;
    }
  }

  private remember(fileId: string, ids: string[]): void {
    this.own.delete(fileId);
    this.own.set(fileId, [...ids]);
    if (this.own.size > 256) this.own.delete(this.own.keys().next().value!);
  }
}
