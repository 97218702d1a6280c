// A bounded on-disk cache of downloaded chunks that outlives the mount, so
// that data the kernel and the in-memory chunks have let go of, or that an
// earlier mount downloaded, is read from local disk rather than the network.
//
// Layout: one file per file version in `dir`, named by the sha256 of its
// file id. Seafile's file ids are content hashes, so a file that changes gets
// a new id and is never served from old blocks, and two processes writing the
// same chunk write the same bytes. A file holds a 128-byte header (magic, chunk
// size, file size, file id, boot id), one marker byte per chunk, then the
// chunks at fixed offsets (sparse). A marker is set only after its chunk's
// data was written: 2 once the write returned, 1 once a datasync followed.
// A process that dies (kill -9) leaves its writes in the page cache, so a 2
// is good for as long as the machine runs: the header names the boot
// (/proc/sys/kernel/random/boot_id) whose 2s they are, and a later boot (a
// power loss may have lost the data behind them) trusts only the 1s. Before
// a file gets new 2s under a new boot id, the old boot's 2s are zeroed and
// that is synced, so none of them can pass for the new boot's. A version's
// 2s become 1s (one datasync) once it has had no write for a while and at
// unmount: a sync per batch of a stream would cost CPU and disk on the read
// path. Without a boot id (not Linux) every marker waits for its datasync.
// So a crash leaves at worst chunks without (trusted) markers, which are
// never served; a header that does not match (another chunk size, a torn
// creation) drops the file.
//
// Versions without a real file id (synthetic keys) get a nameless file,
// gone with the process. Sharing: any number of mounts may use one dir at
// once; each reads the markers when it first reads a version. Eviction
// unlinks a file (a process holding it open keeps reading its own copy).
// `maxBytes` caps the whole dir: each process counts the files it found at
// start and its own writes, and rescans the dir before it evicts, least
// recently used first by modification time (touched at most once a minute
// on use).
//
// Writes are off the read path and fire-and-forget: contiguous chunks are
// gathered into one write of up to 4 MiB (copied when their buffers are the
// stream's pooled ones), with a bounded amount of data waiting for the disk.
// A stream whose file is kept holds back while the disk is behind (whenRoom),
// so a file read once is whole on disk. For other writers a chunk beyond the
// bound is skipped (counted) and remembered: the reader offers it again when
// its memory lets the chunk go and at unmount, so a busy disk delays caching
// rather than losing it; a chunk gone from memory by then is fetched again
// by a later read.
//
// Reserved chunks (block-reuse.ts): chunks of a version that another
// version's cached blocks hold too (same Seafile block id) are reserved: the
// read engine counts them as on disk (has), and the first read that meets
// them has the filler copy them in (fillReserved: data, then markers, as for
// any chunk) or give them up (unreserve: fetched as usual). A reservation is
// never written to the file; a chunk fetched meanwhile simply replaces it.
import { createHash, randomBytes } from 'node:crypto';
import { close as closeFd, openSync, read as readFd, readFileSync, readSync } from 'node:fs';
import { link, mkdir, open, readdir, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../shared/process-alive.js';

const MAGIC = 'SEAFSBC2';
const HEADER = 128;
/** the header's fixed part (magic, chunk size, file size, file id); the boot id follows */
const FIXED = 64;
const BOOT_LEN = 36;
const BATCH = 4 * 1024 * 1024;
const TOUCH_MS = 60_000;
const ID = /^[0-9a-f]{40}$/;
const ZERO_ID = '0'.repeat(40);

/** the name of a version's file in the cache dir */
export function cacheName(version: string): string {
  return createHash('sha256').update(version).digest('hex');
}

/** bytes a whole version of `size` takes on disk: the header and markers, then the data, in 4 KiB pages */
export function wholeBytes(size: number, chunk: number): number {
  if (size <= 0) return 0;
  return Math.ceil((HEADER + Math.ceil(size / chunk)) / 4096) * 4096 + Math.ceil(size / 4096) * 4096;
}

/** this boot of the machine ('' when unknown: then every marker waits for a datasync) */
export function currentBootId(): string {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    return /^[0-9a-f-]{36}$/.test(id) ? id : '';
  } catch {
    return '';
  }
}

interface Entry {
  version: string;
  name: string;
  /** a real file id: kept under its name for later mounts */
  persistent: boolean;
  size: number;
  dataOff: number;
  /**
   * per chunk: 0 absent, 1 on disk, 2 being written, 3 skipped (offer it again), 4 reserved (the
   * filler brings it from another version's blocks); null: not cached (too large)
   */
  present: Uint8Array | null;
  fh: Promise<FileHandle> | null;
  /** what fh resolved to, once it has */
  handle: FileHandle | null;
  /**
   * readAt's own descriptor of the same open file (opened through
   * /proc/self/fd, so it is the file `handle` has even if the name now
   * belongs to another): a read with a callback costs less than one through
   * the FileHandle's promises. -1: not opened yet; -2: none (closed, or not
   * to be had); readAt then reads through `handle`.
   */
  rfd: number;
  /** readAt's reads under way on rfd (it is closed once they are done) */
  rreads: number;
  bytes: number;
  /** last use, ms since the epoch */
  used: number;
  touched: number;
  /** chunks written whose markers are not on disk yet */
  marks: number[];
  /** the boot whose unsynced markers (2) the file's header vouches for */
  boot: string;
  /** chunks marked 2 by an earlier boot: not trusted, zeroed before the header names this boot */
  stale: number[];
  /** chunks this process marked 2: they become 1 after a datasync */
  unsynced: number[];
  /** last chunk write, ms since the epoch */
  wrote: number;
  dead: boolean;
}

interface Batch {
  e: Entry;
  first: number;
  count: number;
  len: number;
  bufs: Buffer[];
  arena: Buffer | null;
  timer: NodeJS.Timeout;
}

export class BlockCache {
  readonly stats = { hits: 0, writes: 0, evictions: 0, skipped: 0, skippedBytes: 0, writtenBytes: 0, reopened: 0 };
  /** versions this process opened (read the markers of, or created) */
  private readonly entries = new Map<string, Entry>();
  /** files found in the dir that this process has not opened: name -> size and last use */
  private readonly onDisk = new Map<string, { bytes: number; used: number }>();
  private total = 0;
  private batch: Batch | null = null;
  private writesInFlight = 0;
  private queuedBytes = 0;
  private readonly arenas: Buffer[] = [];
  private marksTimer: NodeJS.Timeout | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
  private marking: Promise<void> = Promise.resolve();
  private rescanning: Promise<void> | null = null;
  /** callers holding back until the disk catches up (whenRoom) */
  private roomWaiters: (() => void)[] = [];
  /** versions (by file name) kept whatever the LRU says: pinned files (src/vfs/pin/) */
  private kept: (name: string) => boolean = () => false;
  /** brings reserved chunks (block-reuse.ts): resolves once chunk `idx` of the version is no longer reserved */
  private filler: ((version: string, idx: number) => Promise<void>) | null = null;
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
  ) {}

  /** Finds what earlier mounts left; removes leftovers of dead processes (and of the per-process layout). */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const n of await readdir(this.dir)) {
      const pid = /^\d+$/.test(n) ? Number(n) : Number(/\.tmp-(\d+)-/.exec(n)?.[1] ?? NaN);
      if (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid))
        await rm(join(this.dir, n), { recursive: true, force: true }).catch(() => {});
    }
    await this.scan();
    if (this.total > this.maxBytes) await this.evict(null);
  }

  private async scan(): Promise<void> {
    const mine = new Set<string>();
    for (const e of this.entries.values()) mine.add(e.name);
    this.onDisk.clear();
    for (const n of await readdir(this.dir).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{64}$/.test(n) || mine.has(n)) continue;
      const st = await stat(join(this.dir, n)).catch(() => null);
      if (st?.isFile()) this.onDisk.set(n, { bytes: st.blocks * 512, used: st.mtimeMs });
    }
    this.total = 0;
    for (const e of this.entries.values()) this.total += e.bytes;
    for (const d of this.onDisk.values()) this.total += d.bytes;
  }

  /** `keep(name)`: the version's file stays, never evicted or cleared (pinned files) */
  setKeep(keep: (name: string) => boolean): void {
    this.kept = keep;
  }

  /** the hooks of block reuse (block-reuse.ts) */
  setReuse(filler: (version: string, idx: number) => Promise<void>, onStored: typeof this.onStored): void {
    this.filler = filler;
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

  /** bytes the cache dir holds as far as this process knows, and the cap */
  usage(): { used: number; max: number } {
    return { used: this.total, max: this.maxBytes };
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
    const nChunks = Math.ceil(size / this.chunk);
    const e: Entry = {
      version,
      name,
      persistent: ID.test(version) && version !== ZERO_ID,
      size,
      dataOff: Math.ceil((HEADER + nChunks) / 4096) * 4096,
      present: (this.worthCaching(size) || this.kept(name)) && size > 0 ? new Uint8Array(nChunks) : null,
      fh: null,
      handle: null,
      rfd: -1,
      rreads: 0,
      bytes: 0,
      used: Date.now(),
      touched: 0,
      marks: [],
      boot: this.boot,
      stale: [],
      unsynced: [],
      wrote: 0,
      dead: false,
    };
    if (e.present && e.persistent) {
      const fh = await open(join(this.dir, name), 'r+').catch(() => null);
      if (fh && (await this.readMarkers(fh, e).catch(() => false))) {
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
    const found = this.onDisk.get(name);
    if (found) {
      this.onDisk.delete(name);
      this.total -= found.bytes;
    }
    this.entries.set(version, e);
    this.total += e.bytes;
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
      if (e.marks.length || this.batch?.e === e || e.present?.includes(2)) continue;
      if (!victim || e.used < victim.used) victim = e;
    }
    if (!victim) return;
    this.entries.delete(victim.version);
    this.total -= victim.bytes;
    if (victim.persistent && victim.bytes > 0) {
      this.onDisk.set(victim.name, { bytes: victim.bytes, used: victim.used });
      this.total += victim.bytes;
    }
    this.closeReadFd(victim);
    const fh = victim.fh;
    // a read of it may be under way: closed a little later (should it fail, that read downloads instead)
    if (fh) setTimeout(() => void fh.then((h) => h.close()).catch(() => {}), 5000).unref();
  }

  /**
   * The header must say this version, size and chunk size; then the markers
   * are read into `present`: 1s, and 2s when the header names this boot.
   */
  private async readMarkers(fh: FileHandle, e: Entry): Promise<boolean> {
    const n = e.present!.length;
    const buf = Buffer.alloc(HEADER + n);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    if (bytesRead < HEADER) return false;
    const h = this.header(e);
    if (!buf.subarray(0, FIXED).equals(h.subarray(0, FIXED))) return false;
    e.boot = buf.toString('latin1', FIXED, FIXED + BOOT_LEN).replace(/\0+$/, '');
    const sameBoot = this.boot !== '' && e.boot === this.boot;
    for (let i = 0; i < n && HEADER + i < bytesRead; i++) {
      const m = buf[HEADER + i];
      if (m === 2 && !sameBoot) e.stale.push(i);
      if (m !== 1 && !(m === 2 && sameBoot)) continue;
      e.present![i] = 1;
      e.bytes += this.chunkSize(e, i);
    }
    return true;
  }

  private header(e: Entry): Buffer {
    const h = Buffer.alloc(HEADER);
    h.write(MAGIC, 0, 'latin1');
    h.writeUInt32LE(this.chunk, 8);
    h.writeDoubleLE(e.size, 12);
    h.write(e.version, 20, 40, 'latin1');
    h.write(this.boot, FIXED, BOOT_LEN, 'latin1');
    return h;
  }

  private chunkSize(e: Entry, i: number): number {
    return Math.min(this.chunk, e.size - i * this.chunk);
  }

  /** A writable file for the version: created under a temp name with its header, then linked into place. */
  private async create(e: Entry): Promise<FileHandle> {
    const tmp = join(this.dir, `${e.name}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    const fh = await open(tmp, 'w+', 0o600);
    if (!e.persistent) {
      await unlink(tmp); // nameless: gone with the process
      return fh;
    }
    try {
      await fh.write(this.header(e), 0, HEADER, 0);
      await link(tmp, join(this.dir, e.name));
      return fh;
    } catch (err) {
      await fh.close().catch(() => {});
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // another mount created it first: use theirs (same content, so their chunks are ours too)
      const theirs = await open(join(this.dir, e.name), 'r+');
      const mine = e.present!.slice();
      e.present!.fill(0);
      e.bytes = 0;
      if (!(await this.readMarkers(theirs, e))) {
        await theirs.close();
        throw new Error('cache file of another process does not match');
      }
      this.total += e.bytes;
      for (let i = 0; i < mine.length; i++) if (mine[i] >= 2 && e.present![i] === 0) e.present![i] = mine[i];
      return theirs;
    } finally {
      if (e.persistent) await unlink(tmp).catch(() => {});
    }
  }

  /**
   * A version opened while too large to cache that is now kept: forgotten, so
   * that the next open() gives it room for its chunks.
   */
  reconsider(version: string): void {
    const e = this.entries.get(version);
    if (!e || e.present || e.size === 0 || !this.kept(e.name)) return;
    this.entries.delete(version);
    this.closeReadFd(e);
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
    return this.entries.has(version) || this.onDisk.has(cacheName(version));
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
    if (!this.onDisk.has(name) || size <= 0) return { have: 0, of };
    const fh = await open(join(this.dir, name), 'r').catch(() => null);
    if (!fh) return { have: 0, of };
    const e = { version, size, present: new Uint8Array(of), stale: [] as number[], bytes: 0, boot: '' } as unknown;
    try {
      if (!(await this.readMarkers(fh, e as Entry).catch(() => false))) return { have: 0, of };
      let have = 0;
      for (const m of (e as Entry).present!) if (m === 1) have++;
      return { have, of };
    } finally {
      await fh.close().catch(() => {});
    }
  }

  /** a read of the chunk is served from disk: it is there, or reserved (brought from another version) */
  has(version: string, idx: number): boolean {
    const m = this.entries.get(version)?.present?.[idx];
    return m === 1 || m === 4;
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
    let n = 0;
    for (let i = first; i <= last && i < e.present.length; i++)
      if (e.present[i] === 0) {
        e.present[i] = 4;
        n++;
      }
    return n;
  }

  /** Gives up reservations among chunks first..last (a read fetches them as usual). */
  unreserve(version: string, first: number, last: number): void {
    const p = this.entries.get(version)?.present;
    if (!p) return;
    for (let i = first; i <= last && i < p.length; i++) if (p[i] === 4) p[i] = 0;
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
    const mine: number[] = [];
    for (let i = first; i < first + count && i < e.present.length; i++)
      if (e.present[i] === 4) {
        e.present[i] = 2;
        mine.push(i);
      }
    if (!mine.length) return 0;
    this.writesInFlight++;
    let ok = false;
    let bytes = 0;
    try {
      e.fh ??= this.create(e);
      const fh = await e.fh;
      e.handle ??= fh;
      // one write per run of consecutive chunks
      for (let k = 0; k < mine.length && !e.dead;) {
        let j = k;
        while (j + 1 < mine.length && mine[j + 1] === mine[j] + 1) j++;
        const from = (mine[k] - first) * this.chunk;
        const to = Math.min(data.length, (mine[j] - first + 1) * this.chunk);
        const { bytesWritten } = await fh.write(data, from, to - from, e.dataOff + mine[k] * this.chunk);
        if (bytesWritten !== to - from) throw new Error('short write');
        bytes += bytesWritten;
        k = j + 1;
      }
      ok = !e.dead;
    } catch {
      if (e.fh && !e.dead) e.fh = null;
    } finally {
      this.writesInFlight--;
    }
    this.written(e, mine, ok);
    return ok ? bytes : -1;
  }

  /**
   * Keep a chunk (after open()). `copy`: its buffers are reused by their
   * owner once it lets go of them, so they are copied now. `force`: queued
   * even when the disk is behind (the caller waits for whenRoom() before
   * it offers more).
   */
  put(version: string, idx: number, parts: Buffer[], size: number, copy = false, force = false): boolean {
    const e = this.entries.get(version);
    // a reserved chunk (4) that came from the network meanwhile is simply written
    const m = e?.present?.[idx];
    if (!e?.present || e.dead || (m !== 0 && m !== 3 && m !== 4)) return false;
    let b = this.batch;
    if (b && (b.e !== e || idx !== b.first + b.count || b.len + size > BATCH)) {
      this.flushBatch();
      b = null;
    }
    // each queued write holds its chunks' bytes: when the disk falls behind, skip caching
    // (a later miss costs a fetch) rather than let memory grow with the backlog; `force`:
    // the caller holds back (whenRoom) instead, so the backlog passes the cap by a chunk or so
    if (!force && this.queuedBytes + size > this.maxQueuedBytes) {
      this.stats.skipped++;
      this.stats.skippedBytes += size;
      if (m !== 4) e.present[idx] = 3;
      return false;
    }
    if (!b) {
      b = this.batch = {
        e,
        first: idx,
        count: 0,
        len: 0,
        bufs: [],
        arena: null,
        timer: setTimeout(() => this.flushBatch(), 20),
      };
      b.timer.unref();
      this.writesInFlight++;
    }
    if (copy) {
      b.arena ??= this.arenas.pop() ?? Buffer.allocUnsafe(BATCH);
      let at = b.len;
      for (const p of parts) at += p.copy(b.arena, at);
      b.bufs.push(b.arena.subarray(b.len, at));
    } else b.bufs.push(...parts);
    b.len += size;
    b.count++;
    this.queuedBytes += size;
    e.present[idx] = 2;
    e.used = Date.now();
    if (b.len >= BATCH) this.flushBatch();
    return true;
  }

  /** as many bytes wait for the disk as may: a put() now would be skipped */
  behind(): boolean {
    return this.queuedBytes >= this.maxQueuedBytes;
  }

  /** Calls `fn` once the disk is no longer behind (now, if it is not). */
  whenRoom(fn: () => void): void {
    if (!this.behind()) return fn();
    this.roomWaiters.push(fn);
    this.flushBatch(); // what still gathers is written now rather than after its timer
  }

  /** the chunk was offered while the disk was behind and is not on disk: worth offering again */
  wasSkipped(version: string, idx: number): boolean {
    return this.entries.get(version)?.present?.[idx] === 3;
  }

  private flushBatch(): void {
    const b = this.batch;
    if (!b) return;
    this.batch = null;
    clearTimeout(b.timer);
    const e = b.e;
    void (async () => {
      let ok = false;
      try {
        e.fh ??= this.create(e);
        const fh = await e.fh;
        e.handle ??= fh;
        if (!e.dead) {
          await fh.writev(b.bufs, e.dataOff + b.first * this.chunk);
          ok = true;
        }
      } catch {
        if (e.fh && !e.dead) e.fh = null; // a failed creation is tried again by a later write
      } finally {
        this.writesInFlight--;
        this.queuedBytes -= b.len;
        if (b.arena && this.arenas.length < 2) this.arenas.push(b.arena);
        if (this.roomWaiters.length && !this.behind()) {
          const ws = this.roomWaiters;
          this.roomWaiters = [];
          for (const w of ws) w();
        }
      }
      const idx: number[] = [];
      for (let i = b.first; i < b.first + b.count; i++) idx.push(i);
      if (this.written(e, idx, ok)) {
        this.stats.writes += b.count;
        this.stats.writtenBytes += b.len;
        this.onStored?.(e.version, b.first, b.count);
      }
    })();
  }

  /**
   * Chunks whose write (started with them at 2) has ended: on disk (1, their
   * markers queued) when it went well, else absent again. True when it did.
   */
  private written(e: Entry, idx: number[], ok: boolean): boolean {
    for (const i of idx) {
      if (e.present![i] !== 2) continue;
      if (!ok || e.dead) {
        e.present![i] = 0;
        continue;
      }
      e.present![i] = 1;
      e.marks.push(i);
      e.wrote = Date.now();
      const n = this.chunkSize(e, i);
      e.bytes += n;
      if (!e.dead) this.total += n;
    }
    if (!ok || e.dead) return false;
    if (e.persistent) this.scheduleMarks();
    if (this.total > this.maxBytes) void this.evict(e);
    return true;
  }

  private scheduleMarks(): void {
    if (this.marksTimer) return;
    this.marksTimer = setTimeout(() => {
      this.marksTimer = null;
      void this.writeMarks();
    }, this.markDelayMs);
    this.marksTimer.unref();
  }

  /**
   * For each version with new chunks, set their markers: 2 (written, good
   * for this boot), or without a boot id 1 after a datasync. `settle`: the
   * 2s of every version (else those of versions idle for settleMs) become
   * 1s after a datasync.
   */
  private writeMarks(settle = false): Promise<void> {
    this.marking = this.marking.then(async () => {
      const now = Date.now();
      for (const e of this.entries.values()) {
        if (!e.fh || e.dead) continue;
        try {
          if (e.marks.length) {
            const marks = e.marks.sort((a, b) => a - b);
            e.marks = [];
            const fh = await e.fh;
            if (!this.boot) {
              await fh.datasync();
              await this.setMarkers(fh, marks, 1);
              continue;
            }
            if (e.boot !== this.boot) {
              // an earlier boot's unsynced markers must never pass for this boot's: zeroed, durably, first
              if (e.stale.length) {
                await this.setMarkers(
                  fh,
                  e.stale.sort((a, b) => a - b),
                  0,
                );
                await fh.datasync();
              }
              e.stale = [];
              await fh.write(Buffer.from(this.boot, 'latin1'), 0, BOOT_LEN, FIXED);
              e.boot = this.boot;
            }
            await this.setMarkers(fh, marks, 2);
            for (const i of marks) e.unsynced.push(i);
          }
          if (e.unsynced.length && (settle || now - e.wrote >= this.settleMs)) {
            const marks = e.unsynced.sort((a, b) => a - b);
            e.unsynced = [];
            const fh = await e.fh;
            await fh.datasync();
            await this.setMarkers(fh, marks, 1);
          }
        } catch {
          // markers not written: those chunks are misses for the next mount
        }
      }
      this.scheduleSettle();
    });
    return this.marking;
  }

  /** one write per run of consecutive chunks (`marks` sorted) */
  private async setMarkers(fh: FileHandle, marks: number[], value: number): Promise<void> {
    for (let k = 0; k < marks.length;) {
      let j = k;
      while (j + 1 < marks.length && marks[j + 1] === marks[j] + 1) j++;
      await fh.write(Buffer.alloc(j - k + 1, value), 0, j - k + 1, HEADER + marks[k]);
      k = j + 1;
    }
  }

  /** versions with unsynced markers are looked at again once they may have been idle for settleMs */
  private scheduleSettle(): void {
    if (this.settleTimer) return;
    let pending = false;
    for (const e of this.entries.values()) if (e.unsynced.length && !e.dead) pending = true;
    if (!pending) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = null;
      void this.writeMarks();
    }, this.settleMs);
    this.settleTimer.unref();
  }

  /** versions whose markers are trusted for this boot only (not synced yet) */
  get unsyncedVersions(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.unsynced.length && !e.dead) n++;
    return n;
  }

  /** chunk writes started by put() and not finished yet (they are fire-and-forget) */
  get pendingWrites(): number {
    return this.writesInFlight;
  }

  /** Writes what waits now, and the markers of everything written (for tests and unmount). */
  async flush(): Promise<void> {
    this.flushBatch();
    while (this.writesInFlight > 0) await new Promise((r) => setTimeout(r, 5));
    if (this.marksTimer) clearTimeout(this.marksTimer);
    this.marksTimer = null;
    await this.writeMarks();
  }

  /** the chunk's bytes from disk, or null when it is not (or no longer) there */
  async get(version: string, idx: number, size: number): Promise<Buffer | null> {
    const buf = Buffer.allocUnsafe(size);
    return (await this.getRun(version, idx, [buf])) ? buf : null;
  }

  /**
   * Chunks first, first+1, ... into `bufs` (one per chunk, each its chunk's
   * size) in one read; false unless every one of them is there.
   */
  async getRun(version: string, first: number, bufs: Buffer[]): Promise<boolean> {
    const e = this.entries.get(version);
    if (!e?.present) return false;
    const brought = this.bring(e, first, first + bufs.length - 1);
    if (brought !== false) {
      await brought;
      return this.getRun(version, first, bufs);
    }
    if (!e.fh) return false;
    for (let i = first; i < first + bufs.length; i++) if (e.present[i] !== 1) return false;
    e.used = Date.now();
    try {
      const fh = await e.fh;
      let bytes = 0;
      for (const b of bufs) bytes += b.length;
      const { bytesRead } = await fh.readv(bufs, e.dataOff + first * this.chunk);
      if (bytesRead !== bytes || e.dead) return false;
      this.stats.hits += bufs.length;
      this.touch(e);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Bytes [offset, offset + len) of a version straight into `target` (a
   * chunk's data sits at its fixed place, so a range of chunks is one range
   * of the file); false unless every chunk they touch is there.
   */
  readAt(version: string, offset: number, target: Buffer, len: number): Promise<boolean> {
    const e = this.entries.get(version);
    if (!e?.present) return Promise.resolve(false);
    const last = Math.floor((offset + len - 1) / this.chunk);
    const brought = this.bring(e, Math.floor(offset / this.chunk), last);
    if (brought !== false) return brought.then(() => this.readAt(version, offset, target, len));
    if (!e.fh) return Promise.resolve(false);
    for (let i = Math.floor(offset / this.chunk); i <= last; i++) if (e.present[i] !== 1) return Promise.resolve(false);
    e.used = Date.now();
    const fd = this.readFdOf(e);
    if (fd < 0) return this.readAtHandle(e, offset, target, len);
    e.rreads++;
    return new Promise((resolve) =>
      readFd(fd, target, 0, len, e.dataOff + offset, (err, bytesRead) => {
        if (--e.rreads === 0 && e.rfd === -2) closeFd(fd, () => {});
        const ok = !err && bytesRead === len;
        if (ok) {
          this.stats.hits++;
          this.touch(e);
        }
        resolve(ok);
      }),
    );
  }

  /**
   * readAt without leaving the event loop: a read of the cache file is a copy
   * from the page cache (or a disk read the kernel's readahead has started),
   * cheaper than the thread pool's hand-off and the promise it resolves.
   * null when it cannot say synchronously (the file not open yet): ask readAt.
   */
  readAtNow(version: string, offset: number, target: Buffer, len: number): boolean | null {
    const e = this.entries.get(version);
    if (!e?.present) return false;
    const last = Math.floor((offset + len - 1) / this.chunk);
    for (let i = Math.floor(offset / this.chunk); i <= last; i++) {
      if (e.present[i] === 4) return null; // readAt brings it first
      if (e.present[i] !== 1) return false;
    }
    if (!e.fh) return false;
    const fd = this.readFdOf(e);
    if (fd < 0) return null;
    e.used = Date.now();
    let n = -1;
    try {
      n = readSync(fd, target, 0, len, e.dataOff + offset);
    } catch {
      // a failing cache is a miss: the network has the data
    }
    if (n !== len) return false;
    this.stats.hits++;
    this.touch(e);
    return true;
  }

  /** Brings (or gives up) the reserved chunks first..last of an opened version (a pin's download, before it fetches). */
  async bringReserved(version: string, first: number, last: number): Promise<void> {
    const e = this.entries.get(version);
    if (!e?.present) return;
    await (this.bring(e, first, last) || undefined);
  }

  /**
   * The reserved chunks among first..last brought (or given up) by the
   * filler: false when there is none (nothing to wait for), else resolves
   * once none of them is reserved any more.
   */
  private bring(e: Entry, first: number, last: number): Promise<void> | false {
    const p = e.present!;
    let todo: number[] | null = null;
    for (let i = first; i <= last && i < p.length; i++) if (p[i] === 4) (todo ??= []).push(i);
    if (!todo) return false;
    const filler = this.filler;
    return (async () => {
      for (const i of todo) {
        if (p[i] !== 4) continue;
        if (filler) await filler(e.version, i).catch(() => {});
        if (p[i] === 4) p[i] = 0; // not brought: fetched as usual
      }
    })();
  }

  private async readAtHandle(e: Entry, offset: number, target: Buffer, len: number): Promise<boolean> {
    try {
      const fh = await e.fh!;
      const { bytesRead } = await fh.read(target, 0, len, e.dataOff + offset);
      if (bytesRead !== len) return false;
      this.stats.hits++;
      this.touch(e);
      return true;
    } catch {
      return false;
    }
  }

  /** readAt's descriptor for `e`, opened on first use; < 0 when there is none */
  private readFdOf(e: Entry): number {
    if (e.rfd !== -1) return e.rfd;
    const fd = e.handle?.fd ?? -1;
    if (fd < 0 || e.dead) return -1; // not open yet: read through the handle for now
    try {
      e.rfd = openSync(`/proc/self/fd/${fd}`, 'r');
    } catch {
      e.rfd = -2;
    }
    return e.rfd;
  }

  /** `e` leaves: its read descriptor is closed (after the reads under way on it) */
  private closeReadFd(e: Entry): void {
    const fd = e.rfd;
    e.rfd = -2;
    if (fd >= 0 && e.rreads === 0) closeFd(fd, () => {});
  }

  /** the file's modification time is its last use, for the eviction order of later mounts */
  private touch(e: Entry): void {
    if (!e.persistent || e.used - e.touched < TOUCH_MS || !e.fh) return;
    e.touched = e.used;
    const t = new Date(e.used);
    void e.fh.then((fh) => fh.utimes(t, t)).catch(() => {});
  }

  /** Least recently used first, among this process' versions and the files others left, until under the cap. */
  private evict(keep: Entry | null): Promise<void> {
    this.rescanning ??= (async () => {
      try {
        await this.scan();
        const target = this.maxBytes * 0.9;
        const victims: { used: number; drop: () => void }[] = [];
        for (const e of this.entries.values())
          if (e !== keep && e.bytes > 0 && !this.kept(e.name)) victims.push({ used: e.used, drop: () => this.drop(e) });
        for (const [n, d] of this.onDisk) {
          if (this.kept(n)) continue;
          victims.push({
            used: d.used,
            drop: () => {
              this.onDisk.delete(n);
              this.total -= d.bytes;
              this.stats.evictions++;
              void unlink(join(this.dir, n)).catch(() => {});
            },
          });
        }
        victims.sort((a, b) => a.used - b.used);
        for (const v of victims) {
          if (this.total <= target) break;
          v.drop();
        }
      } finally {
        this.rescanning = null;
      }
    })();
    return this.rescanning;
  }

  private drop(e: Entry): void {
    e.dead = true;
    this.entries.delete(e.version);
    this.total -= e.bytes;
    this.stats.evictions++;
    this.closeReadFd(e);
    const fh = e.fh;
    const name = join(this.dir, e.name);
    void (async () => {
      if (e.persistent) await unlink(name).catch(() => {});
      await fh?.then((h) => h.close()).catch(() => {});
    })();
  }

  /** Drop every cached chunk now (`seafs cache clear`), other mounts' too, but kept ones; returns the bytes freed. */
  clear(): number {
    const before = this.total;
    for (const e of [...this.entries.values()]) if (!this.kept(e.name)) this.drop(e);
    for (const [n, d] of [...this.onDisk]) {
      if (this.kept(n)) continue;
      void unlink(join(this.dir, n)).catch(() => {});
      this.onDisk.delete(n);
      this.total -= d.bytes;
    }
    return before - this.total;
  }

  /** Writes what waits and the markers (made durable), then closes every file (they stay for the next mount). */
  async close(): Promise<void> {
    await this.flush().catch(() => {});
    await this.writeMarks(true).catch(() => {});
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = null;
    for (const e of [...this.entries.values()]) {
      e.dead = true;
      this.entries.delete(e.version);
      this.closeReadFd(e);
      await e.fh?.then((h) => h.close()).catch(() => {});
    }
  }
}
