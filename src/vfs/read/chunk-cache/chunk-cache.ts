// A bounded on-disk cache of downloaded chunks (fixed-size pieces of a file
// version, not Seafile's content blocks) that outlives the mount, so that
// data the kernel and the in-memory chunks have let go of, or that an
// earlier mount downloaded, is read from local disk rather than the network.
// Its pieces: the file of a version (cache-file.ts), write batching
// (write-batcher.ts), when markers reach the disk (marker-writer.ts), the
// size cap (eviction.ts) and chunks reserved for another version's blocks
// (reservations.ts). This file is their face: what the read path may ask of
// the cache, one method each, kept together (hence just over 500 lines).
//
// A crash leaves at worst chunks without (trusted) markers, which are never
// served; a header that does not match (another chunk size, a torn creation)
// drops the file. Versions without a real file id (synthetic keys) get a
// nameless file, gone with the process. Any number of mounts may use one dir
// at once; each reads the markers when it first reads a version.
//
// A stream whose file is kept holds back while the disk is behind (whenRoom),
// so a file read once is whole on disk. For other writers a chunk beyond the
// write bound is skipped (counted) and remembered: the reader offers it again
// when its memory lets the chunk go and at unmount, so a busy disk delays
// caching rather than losing it; a chunk gone from memory by then is fetched
// again by a later read.
import { mkdir, open, readdir, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../../common/process-alive.js';
import {
  cacheName,
  chunkLen,
  chunksOnDisk,
  createCacheFile,
  currentBootId,
  newCachedVersion,
  readMarkers,
  type CachedVersion,
} from './cache-file.js';
import { ChunkReads, closeReadFd } from './chunk-reads.js';
import { CacheDirUsage } from './eviction.js';
import { MarkerWriter } from './marker-writer.js';
import {
  BRINGING,
  reservedAmong,
  reserveChunks,
  takeReserved,
  unreserveChunks,
  writeReserved,
} from './reservations.js';
import { WriteBatcher, type Batch } from './write-batcher.js';

export { cacheName, currentBootId, wholeBytes } from './cache-file.js';

const TOUCH_MS = 60_000;

type Entry = CachedVersion;

export class ChunkCache {
  readonly stats = { hits: 0, writes: 0, evictions: 0, skipped: 0, skippedBytes: 0, writtenBytes: 0, reopened: 0 };
  /** versions this process opened (read the markers of, or created) */
  private readonly entries = new Map<string, Entry>();
  /** the dir's bytes, and eviction */
  private readonly usageOf: CacheDirUsage;
  private readonly batcher: WriteBatcher;
  private readonly markers: MarkerWriter;
  private readonly reads: ChunkReads;
  /** versions (by file name) kept whatever the LRU says: pinned files (src/vfs/pin/) */
  private kept: (name: string) => boolean = () => false;
  /** chunks first..first+count-1 of a version were written and are on disk (block-reuse.ts indexes them) */
  private onStored: ((version: string, first: number, count: number) => void) | null = null;

  constructor(
    /** the account's blocks folder, shared by its mounts */
    private readonly dir: string,
    private readonly chunk: number,
    private readonly maxBytes: number,
    /** bytes of chunk writes allowed to wait for the disk at once */
    private readonly maxQueuedBytes = 16 * 1024 * 1024,
    /** how long written chunks wait for their markers (and the datasync before them) */
    private readonly markDelayMs = 1000,
    /** versions kept open at once (a file descriptor each) */
    private readonly maxOpen = 512,
    /** a version with no write for this long has its markers made durable (datasync, then 1s) */
    private readonly settleMs = 30_000,
    /** this boot's id (tests pass another to play a reboot) */
    private readonly boot = currentBootId(),
  ) {
    const versions = () => this.entries.values();
    this.usageOf = new CacheDirUsage(
      dir,
      maxBytes,
      versions,
      (name) => this.kept(name),
      (e) => this.drop(e),
      () => this.stats.evictions++,
    );
    this.batcher = new WriteBatcher(
      maxQueuedBytes,
      (b) => this.writeBatch(b),
      (b, ok) => this.batchWritten(b, ok),
    );
    // the chunks on their way to the disk count already: eviction makes room before they land
    this.usageOf.queued = () => this.batcher.queued;
    this.markers = new MarkerWriter(versions, boot, markDelayMs, settleMs);
    this.reads = new ChunkReads(this.entries, chunk, (e, n) => {
      this.stats.hits += n;
      this.touch(e);
    });
  }

  /** Finds what earlier mounts left; removes leftovers of dead processes (and of the per-process layout). */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const n of await readdir(this.dir)) {
      const pid = /^\d+$/.test(n) ? Number(n) : Number(/\.tmp-(\d+)-/.exec(n)?.[1] ?? NaN);
      if (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid))
        await rm(join(this.dir, n), { recursive: true, force: true }).catch(() => {});
    }
    await this.usageOf.scan();
    if (this.usageOf.over) await this.usageOf.evict(null);
  }

  /** `keep(name)`: the version's file stays, never evicted or cleared (pinned files) */
  setKeep(keep: (name: string) => boolean): void {
    this.kept = keep;
  }

  /** told of chunks written and marked (block reuse indexes them: block-reuse.ts) */
  setOnStored(onStored: typeof this.onStored): void {
    this.onStored = onStored;
  }

  /** the cache dir */
  get folder(): string {
    return this.dir;
  }

  /** the chunk size the cache was made with */
  get chunkBytes(): number {
    return this.chunk;
  }

  /** versions larger than this are not cached (they would evict everything else and themselves) */
  worthCaching(size: number): boolean {
    return this.maxBytes > 0 && size <= this.maxBytes / 2;
  }

  /** `bytes()`: what the cache dir holds besides the chunks (files being written); the chunks make way for it */
  setReserved(bytes: () => number): void {
    this.usageOf.reserved = bytes;
  }

  /** Evicts (in the background) until the chunks and the reserved bytes fit under the cap. */
  makeRoom(): void {
    if (this.usageOf.over) void this.usageOf.evict(null);
  }

  /** bytes the cache dir holds as far as this process knows, and the cap */
  usage(): { used: number; max: number } {
    return { used: this.usageOf.total, max: this.maxBytes };
  }

  /** open() has run for this version: has() answers for it */
  ready(version: string): boolean {
    return this.entries.has(version);
  }

  /**
   * Reads what the disk holds of a version (its markers) before the first
   * has() about it. Never rejects: a file that cannot be read is a miss.
   */
  async open(version: string, size: number): Promise<void> {
    if (this.entries.has(version)) return;
    const name = cacheName(version);
    const cached = (this.worthCaching(size) || this.kept(name)) && size > 0;
    const e = newCachedVersion(version, size, this.chunk, cached, this.boot);
    if (e.present && e.persistent) {
      const fh = await open(join(this.dir, name), 'r+').catch(() => null);
      if (fh && (await readMarkers(fh, e, this.chunk, this.boot).catch(() => false))) {
        e.fh = Promise.resolve(fh);
        e.handle = fh;
        this.stats.reopened++;
        this.touch(e);
      } else if (fh) {
        await fh.close().catch(() => {});
        await unlink(join(this.dir, name)).catch(() => {});
      }
    }
    if (this.entries.has(version)) {
      // opened meanwhile by another read
      void e.fh?.then((h) => h.close()).catch(() => {});
      return;
    }
    const found = this.usageOf.onDisk.get(name);
    if (found) {
      this.usageOf.onDisk.delete(name);
      this.usageOf.total -= found.bytes;
    }
    this.entries.set(version, e);
    this.usageOf.total += e.bytes;
    if (this.entries.size > this.maxOpen) this.forgetOldest();
  }

  /**
   * Too many versions open (each holds a file descriptor): the least recently
   * used one with nothing waiting is closed and counted as a file on disk
   * again; a later read of it opens it anew.
   */
  private forgetOldest(): void {
    let victim: Entry | null = null;
    for (const e of this.entries.values()) {
      if (e.marks.length || this.batcher.gathering(e) || e.present?.includes(2)) continue;
      if (!victim || e.used < victim.used) victim = e;
    }
    if (!victim) return;
    this.entries.delete(victim.version);
    this.usageOf.total -= victim.bytes;
    if (victim.persistent && victim.bytes > 0) {
      this.usageOf.onDisk.set(victim.name, { bytes: victim.bytes, used: victim.used });
      this.usageOf.total += victim.bytes;
    }
    closeReadFd(victim);
    const fh = victim.fh;
    // a read of it may be under way: closed a little later (should it fail, that read downloads instead)
    if (fh) setTimeout(() => void fh.then((h) => h.close()).catch(() => {}), 5000).unref();
  }

  private chunkSize(e: Entry, i: number): number {
    return chunkLen(e, this.chunk, i);
  }

  /** A writable file for the version (cache-file.ts); one another mount made first is used as it is. */
  private async create(e: Entry): Promise<FileHandle> {
    const { fh, adopted } = await createCacheFile(this.dir, e, this.chunk, this.boot);
    if (adopted) this.usageOf.total += e.bytes;
    return fh;
  }

  /**
   * A version opened while too large to cache that is now kept: forgotten, so
   * that the next open() gives it room for its chunks.
   */
  reconsider(version: string): void {
    const e = this.entries.get(version);
    if (!e || e.present || e.size === 0 || !this.kept(e.name)) return;
    this.entries.delete(version);
    closeReadFd(e);
  }

  /** chunks of the version on disk, and its chunk count (after open()) */
  held(version: string): { have: number; of: number } {
    const e = this.entries.get(version);
    if (!e) return { have: 0, of: 1 };
    if (e.size === 0) return { have: 1, of: 1 };
    if (!e.present) return { have: 0, of: Math.ceil(e.size / this.chunk) };
    let have = 0;
    for (const m of e.present) if (m === 1) have++;
    return { have, of: e.present.length };
  }

  /** whether the disk holds anything of the version, without opening it (a file left there, or opened here) */
  known(version: string): boolean {
    return this.entries.has(version) || this.usageOf.onDisk.has(cacheName(version));
  }

  /**
   * held() for any version, without opening it for use: a file only on disk
   * has its markers read and is closed again, its place in the LRU untouched
   * (getfattr over a tree must not make every file look recently used).
   */
  async peek(version: string, size: number): Promise<{ have: number; of: number }> {
    const of = Math.max(1, Math.ceil(size / this.chunk));
    if (this.entries.has(version)) return this.held(version);
    const name = cacheName(version);
    if (!this.usageOf.onDisk.has(name) || size <= 0) return { have: 0, of };
    const have = await chunksOnDisk(join(this.dir, name), version, size, this.chunk, this.boot);
    return { have, of };
  }

  /** a read of the chunk is served from disk: it is there, or reserved or being brought (from another version) */
  has(version: string, idx: number): boolean {
    const m = this.entries.get(version)?.present?.[idx];
    return m === 1 || m === 4 || m === BRINGING;
  }

  /** the chunk is on disk now (not merely reserved) */
  stored(version: string, idx: number): boolean {
    return this.entries.get(version)?.present?.[idx] === 1;
  }

  /** where a persistent version's data lies (its file and the offset of chunk 0), once its file exists */
  locate(version: string): { path: string; dataOff: number } | null {
    const e = this.entries.get(version);
    if (!e?.persistent || !e.fh || e.dead) return null;
    return { path: join(this.dir, e.name), dataOff: e.dataOff };
  }

  /** Reserves the absent chunks first..last of an opened version; returns how many. */
  reserve(version: string, first: number, last: number): number {
    const e = this.entries.get(version);
    if (!e?.present || e.dead) return 0;
    return reserveChunks(e.present, first, last);
  }

  /** Gives up reservations among chunks first..last (a read fetches them as usual). */
  unreserve(version: string, first: number, last: number): void {
    const p = this.entries.get(version)?.present;
    if (p) unreserveChunks(p, first, last);
  }

  /**
   * Writes the bytes of chunks first, first+1, ... (`data`: whole chunks, the
   * last may be the file's short one) into those of them still reserved, then
   * counts them as on disk and queues their markers as put() does. Resolves
   * with the bytes written, or -1 when it could not (those chunks are absent again).
   */
  async fillReserved(version: string, first: number, data: Buffer): Promise<number> {
    const e = this.entries.get(version);
    if (!e?.present || e.dead) return -1;
    const count = Math.ceil(data.length / this.chunk);
    const mine = takeReserved(e.present, first, count);
    if (!mine.length) return 0;
    this.batcher.inFlight++;
    let bytes = -1;
    try {
      bytes = await writeReserved(e, first, mine, data, this.chunk, () => this.create(e));
    } finally {
      this.batcher.inFlight--;
    }
    this.written(e, mine, bytes >= 0);
    return bytes;
  }

  /**
   * Keep a chunk (after open()). `copy`: its buffers are reused by their
   * owner once it lets go of them, so they are copied now. `force`: queued
   * even when the disk is behind (the caller waits for whenRoom() before
   * it offers more). `release`: the buffers are lent, not copied, and
   * given back by calling it once written (or at once when not kept).
   */
  put(
    version: string,
    idx: number,
    parts: Buffer[],
    size: number,
    copy = false,
    force = false,
    release?: () => void,
  ): boolean {
    const e = this.entries.get(version);
    // a reserved chunk (4) that came from the network meanwhile is simply written
    const m = e?.present?.[idx];
    if (!e?.present || e.dead || (m !== 0 && m !== 3 && m !== 4)) {
      release?.();
      return false;
    }
    if (!this.batcher.add(e, idx, parts, size, copy, force, release)) {
      this.stats.skipped++;
      this.stats.skippedBytes += size;
      if (m !== 4) e.present[idx] = 3;
      return false;
    }
    e.present[idx] = 2;
    e.used = Date.now();
    this.batcher.flushIfFull();
    return true;
  }

  /** as many bytes wait for the disk as may: a put() now would be skipped */
  behind(): boolean {
    return this.batcher.behind();
  }

  /** Calls `fn` once the disk is no longer behind (now, if it is not). */
  whenRoom(fn: () => void): void {
    this.batcher.whenRoom(fn);
  }

  /** the chunk was offered while the disk was behind and is not on disk: worth offering again */
  wasSkipped(version: string, idx: number): boolean {
    return this.entries.get(version)?.present?.[idx] === 3;
  }

  /** Writes a gathered batch into its version's file; never rejects (false: the chunks are absent again). */
  private async writeBatch(b: Batch): Promise<boolean> {
    const e = b.e;
    try {
      e.fh ??= this.create(e);
      const fh = await e.fh;
      e.handle ??= fh;
      if (e.dead) return false;
      await fh.writev(b.bufs, e.dataOff + b.first * this.chunk);
      return true;
    } catch {
      if (e.fh && !e.dead) e.fh = null; // a failed creation is tried again by a later write
      return false;
    }
  }

  private batchWritten(b: Batch, ok: boolean): void {
    const idx: number[] = [];
    for (let i = b.first; i < b.first + b.count; i++) idx.push(i);
    if (this.written(b.e, idx, ok)) {
      this.stats.writes += b.count;
      this.stats.writtenBytes += b.len;
      this.onStored?.(b.e.version, b.first, b.count);
    }
  }

  /**
   * Chunks whose write (started with them at 2) has ended: on disk (1, their
   * markers queued) when it went well, else absent again. True when it did.
   */
  private written(e: Entry, idx: number[], ok: boolean): boolean {
    for (const i of idx) {
      if (e.present![i] !== 2 && e.present![i] !== BRINGING) continue;
      if (!ok || e.dead) {
        e.present![i] = 0;
        continue;
      }
      e.present![i] = 1;
      e.marks.push(i);
      e.wrote = Date.now();
      const n = this.chunkSize(e, i);
      e.bytes += n;
      if (!e.dead) this.usageOf.total += n;
    }
    if (!ok || e.dead) return false;
    if (e.persistent) this.markers.schedule();
    if (this.usageOf.over) void this.usageOf.evict(e);
    return true;
  }

  /** versions whose markers are trusted for this boot only (not synced yet) */
  get unsyncedVersions(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.unsynced.length && !e.dead) n++;
    return n;
  }

  /** chunk writes started by put() and not finished yet (they are fire-and-forget) */
  get pendingWrites(): number {
    return this.batcher.inFlight;
  }

  /** Writes what waits now, and the markers of everything written (for tests and unmount). */
  async flush(): Promise<void> {
    this.batcher.flush();
    while (this.batcher.inFlight > 0) await new Promise((r) => setTimeout(r, 5));
    await this.markers.writeNow();
  }

  /** the chunk's bytes from disk, or null when it is not (or no longer) there */
  get(version: string, idx: number, size: number): Promise<Buffer | null> {
    return this.reads.get(version, idx, size);
  }

  /** Chunks first, first+1, ... into `bufs` in one read (chunk-reads.ts). */
  getRun(version: string, first: number, bufs: Buffer[]): Promise<boolean> {
    return this.reads.getRun(version, first, bufs);
  }

  /** Bytes [offset, offset + len) of a version straight into `target` (chunk-reads.ts). */
  readAt(version: string, offset: number, target: Buffer, len: number): Promise<boolean> {
    return this.reads.readAt(version, offset, target, len);
  }

  /** readAt without leaving the event loop; null: ask readAt (chunk-reads.ts). */
  readAtNow(version: string, offset: number, target: Buffer, len: number): boolean | null {
    return this.reads.readAtNow(version, offset, target, len);
  }

  /** the chunks among first..last of a version still reserved or being brought (null: none) */
  reservedAmong(version: string, first: number, last: number): number[] | null {
    const p = this.entries.get(version)?.present;
    return p ? reservedAmong(p, first, last) : null;
  }

  /** the file's modification time is its last use, for the eviction order of later mounts */
  private touch(e: Entry): void {
    if (!e.persistent || e.used - e.touched < TOUCH_MS || !e.fh) return;
    e.touched = e.used;
    const t = new Date(e.used);
    void e.fh.then((fh) => fh.utimes(t, t)).catch(() => {});
  }

  private drop(e: Entry): void {
    e.dead = true;
    this.entries.delete(e.version);
    this.usageOf.total -= e.bytes;
    this.stats.evictions++;
    closeReadFd(e);
    const fh = e.fh;
    const name = join(this.dir, e.name);
    void (async () => {
      if (e.persistent) await unlink(name).catch(() => {});
      await fh?.then((h) => h.close()).catch(() => {});
    })();
  }

  /** Drop every cached chunk now (`seafs cache clear`), other mounts' too, but kept ones; returns the bytes freed. */
  clear(): number {
    const before = this.usageOf.total;
    for (const e of [...this.entries.values()]) if (!this.kept(e.name)) this.drop(e);
    this.usageOf.clearOthers();
    return before - this.usageOf.total;
  }

  /** Writes what waits and the markers (made durable), then closes every file (they stay for the next mount). */
  async close(): Promise<void> {
    await this.flush().catch(() => {});
    await this.markers.write(true).catch(() => {});
    this.markers.stop();
    for (const e of [...this.entries.values()]) {
      e.dead = true;
      this.entries.delete(e.version);
      closeReadFd(e);
      await e.fh?.then((h) => h.close()).catch(() => {});
    }
  }
}
