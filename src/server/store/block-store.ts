// File contents as blocks, with the real server's ids: a block's id is the
// sha1 of its bytes (uploads cut files into fixed 8 MiB blocks, as Seafile's
// web and API uploads do), a file's id is the sha1 of its object, the JSON
// {"block_ids": [...], "size": N, "type": 1, "version": 1} (fs-mgr.c
// create_seafile_json: jansson, sorted keys, ", " and ": " separators).
//
// On disk:
//   contents/xx/yyyy…       a file uploaded whole (upload-api, update-api), as it came: one
//                           file and one fsync per upload (an fsync per 8 MiB block halved a
//                           large upload's speed), read back in one stream;
//   blocks/xx/yyyy…         a block: its bytes (sent through upload-raw-blks-api), or a
//                           symlink `c:<file id>:<offset>:<size>` (base 36) into a content (`o:` into
//                           an object of an older store). A symlink is metadata only: no
//                           fsync of its own, it is journalled before the head that uses it;
//   files/xx/yyyy…          a file's block list: a symlink to its one block's id, or JSON
//                           {block_ids, size, block_sizes};
//   repo-blocks/<repo>/<id> a hard link per block a library holds: which blocks a library
//                           "has" (real servers keep blocks per library, and the blocks API
//                           must not reveal or lend another account's blocks by their hash);
//   pending-blocks/<repo>/<id>  a block sent raw to a library that no commit of it used yet: a
//                           symlink to its size, made when it came (its mtime). Such blocks count
//                           against the owner's quota and are removed after a grace period
//                           (sweep), unless something else holds them.
// Identical blocks are kept once: an upload whose blocks are all known keeps
// no content, and a block is placed where it was first seen. Stores written
// before blocks hold a file's whole content as objects/<sha1 of the content>,
// that sha1 being the file id, with no block list: such files read as before,
// and asking for their block list cuts them into blocks (symlinks) once.
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  linkSync,
  lstatSync,
  lutimesSync,
  mkdirSync,
  promises as fsp,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { writeFileAtomic } from './atomic.js';
import { pumpRanges, type FileRange } from './range-pump.js';
import { type ObjectStore, ZERO_ID } from './objects.js';

/** Seafile's DEFAULT_FIXED_BLOCK_SIZE: what web and API uploads cut files into */
export const BLOCK_SIZE = 8 << 20;

export const BLOCK_ID = /^[0-9a-f]{40}$/;

export interface FileRecord {
  block_ids: string[];
  size: number;
  /** sizes of the blocks, in order (not part of the object whose sha1 is the id) */
  block_sizes: number[];
}

/** The real server's file id for `blockIds` and a file size (40 zeros without blocks). */
export function fileIdOf(blockIds: string[], size: number): string {
  if (blockIds.length === 0) return ZERO_ID;
  const ids = blockIds.map((b) => `"${b}"`).join(', ');
  return createHash('sha1').update(`{"block_ids": [${ids}], "size": ${size}, "type": 1, "version": 1}`).digest('hex');
}

/** where a block's bytes are: `size` bytes of `path` from `start` */
export interface Place {
  path: string;
  start: number;
  size: number;
}

const errno = (e: unknown) => (e as NodeJS.ErrnoException).code;

/**
 * A block symlink's target, `c|o:<id>:<offset>:<size>` with the numbers in
 * base 36: at most 59 bytes below 3.6 PB, which ext4 keeps in the inode
 * itself (a "fast" symlink: metadata only, no data block to flush).
 */
function placeTarget(kind: 'c' | 'o', id: string, offset: number, size: number): string {
  return `${kind}:${id}:${offset.toString(36)}:${size.toString(36)}`;
}

/** creates a symlink (metadata only); one already there says the same */
function symlinkOnce(target: string, at: string): void {
  try {
    symlinkSync(target, at);
  } catch (e) {
    if (errno(e) !== 'EEXIST') throw e;
  }
}

export class BlockStore {
  readonly blocksDir: string;
  readonly filesDir: string;
  readonly contentsDir: string;
  readonly presenceDir: string;
  readonly pendingDir: string;
  private records = new LRUCache<string, FileRecord>({ max: 4096 });
  private places = new LRUCache<string, Place>({ max: 8192 });
  private presenceMade = new Set<string>();
  private pendingMade = new Set<string>();
  /** per library, the blocks sent raw that no commit used yet: size and when they came (ms) */
  private pending = new Map<string, Map<string, { size: number; at: number }>>();
  /** `repo\nid` of those taken by commits under way: how many, and whether one of them or another use took it */
  private committing = new Map<string, { size: number; at: number; count: number; used: boolean }>();

  constructor(
    dataDir: string,
    private readonly objects: ObjectStore,
  ) {
    this.blocksDir = path.join(dataDir, 'blocks');
    this.filesDir = path.join(dataDir, 'files');
    this.contentsDir = path.join(dataDir, 'contents');
    this.presenceDir = path.join(dataDir, 'repo-blocks');
    this.pendingDir = path.join(dataDir, 'pending-blocks');
  }

  async init(): Promise<void> {
    await fsp.mkdir(this.presenceDir, { recursive: true, mode: 0o700 });
    await fsp.mkdir(this.pendingDir, { recursive: true, mode: 0o700 });
    for (const repoId of await fsp.readdir(this.pendingDir)) {
      const marks = new Map<string, { size: number; at: number }>();
      for (const id of await fsp.readdir(path.join(this.pendingDir, repoId))) {
        const at = path.join(this.pendingDir, repoId, id);
        try {
          const st = await fsp.lstat(at);
          marks.set(id, { size: Number(await fsp.readlink(at)) || 0, at: st.mtimeMs });
        } catch {
          await fsp.rm(at, { force: true }); // not a mark of ours
        }
      }
      if (marks.size) this.pending.set(repoId, marks);
    }
    for (const dir of [this.blocksDir, this.filesDir, this.contentsDir]) {
      await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
      await Promise.all(
        Array.from({ length: 256 }, async (_, i) => {
          const sub = path.join(dir, i.toString(16).padStart(2, '0'));
          await fsp.mkdir(sub, { recursive: true, mode: 0o700 });
          // temp files of writes cut short by a crash
          for (const f of await fsp.readdir(sub))
            if (f.startsWith('.tmp-')) await fsp.rm(path.join(sub, f), { force: true });
        }),
      );
    }
  }

  private static fan(dir: string, id: string): string {
    return path.join(dir, id.slice(0, 2), id.slice(2));
  }
  blockPath(id: string): string {
    return BlockStore.fan(this.blocksDir, id);
  }
  private recordPath(id: string): string {
    return BlockStore.fan(this.filesDir, id);
  }
  private contentPath(id: string): string {
    return BlockStore.fan(this.contentsDir, id);
  }
  private presencePath(repoId: string, id: string): string {
    return path.join(this.presenceDir, repoId, id);
  }

  /** a block symlink's target as a place (null: not one of ours) */
  private placeOf(target: string): Place | null {
    const m = /^([co]):([0-9a-f]{40}):([0-9a-z]+):([0-9a-z]+)$/.exec(target);
    if (!m) return null;
    const file = m[1] === 'c' ? this.contentPath(m[2]) : this.objects.pathOf(m[2]);
    return { path: file, start: parseInt(m[3], 36), size: parseInt(m[4], 36) };
  }

  /** Where block `id`'s bytes are, or null when the store has no such block. */
  resolve(id: string): Place | null {
    if (!BLOCK_ID.test(id)) return null;
    const hit = this.places.get(id);
    if (hit) return hit;
    const at = this.blockPath(id);
    let place: Place | null;
    try {
      place = this.placeOf(readlinkSync(at));
    } catch (e) {
      if (errno(e) === 'ENOENT') return null;
      if (errno(e) !== 'EINVAL') throw e;
      place = { path: at, start: 0, size: statSync(at).size }; // a block file of its own
    }
    if (place) this.places.set(id, place);
    return place;
  }

  private markHeldDir(repoId: string): void {
    if (!this.presenceMade.has(repoId)) {
      mkdirSync(path.join(this.presenceDir, repoId), { recursive: true, mode: 0o700 });
      this.presenceMade.add(repoId);
    }
  }

  private hold(repoId: string, id: string): void {
    this.markHeldDir(repoId);
    try {
      // link(2) does not follow a symlink: the library's entry is the block's own
      linkSync(this.blockPath(id), this.presencePath(repoId, id));
    } catch (e) {
      if (errno(e) !== 'EEXIST') throw e;
    }
  }

  /** `repoId` holds block `id` for a file of its own (no longer a block waiting for a commit) */
  private markHeld(repoId: string, id: string): void {
    this.hold(repoId, id);
    this.clearPending(repoId, id);
    const c = this.committing.get(`${repoId}\n${id}`);
    if (c) c.used = true;
  }

  private setPending(repoId: string, id: string, size: number, when = Date.now()): void {
    if (!this.pendingMade.has(repoId)) {
      mkdirSync(path.join(this.pendingDir, repoId), { recursive: true, mode: 0o700 });
      this.pendingMade.add(repoId);
    }
    const at = path.join(this.pendingDir, repoId, id);
    rmSync(at, { force: true }); // a block sent again starts its grace period again
    symlinkSync(String(size), at);
    lutimesSync(at, when / 1000, when / 1000);
    let marks = this.pending.get(repoId);
    if (!marks) this.pending.set(repoId, (marks = new Map()));
    marks.set(id, { size, at: when });
  }

  private clearPending(repoId: string, id: string): void {
    const marks = this.pending.get(repoId);
    if (!marks?.has(id)) return;
    rmSync(path.join(this.pendingDir, repoId, id), { force: true });
    marks.delete(id);
    if (marks.size === 0) this.pending.delete(repoId);
  }

  /** Bytes of the blocks sent raw to `repoId` that no commit used yet. */
  pendingBytes(repoId: string): number {
    let n = 0;
    for (const m of this.pending.get(repoId)?.values() ?? []) n += m.size;
    return n;
  }

  /** Of those, the bytes of the distinct `ids`. */
  pendingOf(repoId: string, ids: string[]): number {
    const marks = this.pending.get(repoId);
    if (!marks) return 0;
    let n = 0;
    for (const id of new Set(ids)) n += marks.get(id)?.size ?? 0;
    return n;
  }

  /** Whether `repoId` holds block `id` for a file of its own, not only as sent raw. */
  usesBlock(repoId: string, id: string): boolean {
    return !this.pending.get(repoId)?.has(id) && this.heldSize(repoId, id) !== null;
  }

  /**
   * Takes blocks `ids` for a commit of `repoId`, checked again and at once (a sweep cannot come
   * between): their sizes, or null when the library lacks one. Those sent raw stop waiting (and
   * counting) while the commit runs; `done(false)`, for a commit that failed, makes them wait again
   * unless another use of them came meanwhile. A crash meanwhile forgets them (kept, not collected).
   */
  takeForCommit(repoId: string, ids: string[]): { sizes: number[]; done: (ok: boolean) => void } | null {
    const sizes: number[] = [];
    for (const id of ids) {
      const s = this.heldSize(repoId, id);
      if (s === null) return null;
      sizes.push(s);
    }
    const taken: string[] = [];
    for (const id of new Set(ids)) {
      const key = `${repoId}\n${id}`;
      const running = this.committing.get(key);
      const m = this.pending.get(repoId)?.get(id);
      if (running) running.count++;
      else if (m) {
        this.clearPending(repoId, id);
        this.committing.set(key, { ...m, count: 1, used: false });
      } else continue;
      taken.push(id);
    }
    const done = (ok: boolean) => {
      for (const id of taken) {
        const key = `${repoId}\n${id}`;
        const c = this.committing.get(key)!;
        c.used ||= ok;
        if (--c.count > 0) continue;
        this.committing.delete(key);
        if (!c.used && this.heldSize(repoId, id) !== null) this.setPending(repoId, id, c.size, c.at);
      }
    };
    return { sizes, done };
  }

  /**
   * Removes the blocks sent raw that waited longer than `graceMs` for a commit: the library stops
   * holding them, and a block stored on its own that no other library holds is deleted. Synchronous
   * per block, so no commit takes one half-removed.
   */
  sweep(graceMs: number): number {
    const cutoff = Date.now() - graceMs;
    let holders: string[] | null = null;
    let removed = 0;
    for (const [repoId, marks] of this.pending) {
      for (const [id, m] of marks) {
        if (m.at > cutoff) continue;
        this.clearPending(repoId, id);
        rmSync(this.presencePath(repoId, id), { force: true });
        holders ??= readdirSync(this.presenceDir);
        const elsewhere = holders.some((r) => {
          if (r === repoId) return false;
          try {
            lstatSync(this.presencePath(r, id));
            return true;
          } catch {
            return false;
          }
        });
        if (elsewhere) continue;
        const at = this.blockPath(id);
        try {
          // a symlink places the block in a content or an object, which a file uses: only a file of its own goes
          if (!lstatSync(at).isFile()) continue;
        } catch {
          continue;
        }
        rmSync(at, { force: true });
        this.places.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /**
   * Takes a file received whole (`tmpPath`, fsync'd, same filesystem) into
   * the store for `repoId`: kept as a content unless every block of it is
   * known already, its blocks placed in it, and its block list recorded.
   */
  adoptContent(repoId: string, tmpPath: string, fileId: string, blocks: { id: string; size: number }[]): void {
    if (fileId === ZERO_ID) {
      rmSync(tmpPath, { force: true });
      return;
    }
    if (blocks.every((b) => this.resolve(b.id))) {
      rmSync(tmpPath, { force: true });
    } else {
      // synchronous: renames and symlinks are changes of folders in the page cache, microseconds
      renameSync(tmpPath, this.contentPath(fileId));
      let off = 0;
      for (const b of blocks) {
        if (!this.resolve(b.id)) symlinkOnce(placeTarget('c', fileId, off, b.size), this.blockPath(b.id));
        off += b.size;
      }
    }
    for (const b of blocks) this.markHeld(repoId, b.id);
    this.putRecord(
      blocks.map((b) => b.id),
      blocks.map((b) => b.size),
      blocks.reduce((n, b) => n + b.size, 0),
      fileId,
    );
  }

  /**
   * Takes a block received on its own (`tmpPath`, fsync'd, `size` bytes) into the store for
   * `repoId`, where it waits for a commit (counted, and removed by `sweep` if none comes). A block
   * the store has already is not written again; one a file of the library uses stays as it is.
   */
  adoptBlock(repoId: string, tmpPath: string, id: string, size: number): void {
    if (this.usesBlock(repoId, id) || this.resolve(id)) {
      rmSync(tmpPath, { force: true });
      if (this.usesBlock(repoId, id)) return;
    } else {
      renameSync(tmpPath, this.blockPath(id));
      this.places.delete(id);
    }
    this.hold(repoId, id);
    this.setPending(repoId, id, size);
  }

  /**
   * Marks file `fileId` of encrypted library `repoId` as committed from blocks
   * sent as they are (plaintext): the real server cannot decrypt such a file,
   * and neither does this one (fileserver/files.ts). An upload of the same bytes
   * through upload-api (which encrypts on a real server) clears the mark.
   */
  markUndecryptable(repoId: string, fileId: string, on: boolean): void {
    const at = path.join(this.presenceDir, repoId, `raw-${fileId}`);
    if (on) {
      this.markHeldDir(repoId);
      symlinkOnce('raw', at);
    } else rmSync(at, { force: true });
  }

  isUndecryptable(repoId: string, fileId: string): boolean {
    try {
      lstatSync(path.join(this.presenceDir, repoId, `raw-${fileId}`));
      return true;
    } catch {
      return false;
    }
  }

  /** The size of block `id` if library `repoId` holds it, else null. */
  heldSize(repoId: string, id: string): number | null {
    if (!BLOCK_ID.test(id)) return null;
    const at = this.presencePath(repoId, id);
    try {
      const st = lstatSync(at);
      if (!st.isSymbolicLink()) return st.size;
      return this.placeOf(readlinkSync(at))?.size ?? null;
    } catch {
      return null;
    }
  }

  /** Which of `ids` library `repoId` does not hold, in their order. */
  missing(repoId: string, ids: string[]): string[] {
    return ids.filter((id) => this.heldSize(repoId, id) === null);
  }

  /**
   * Records a file made of `blockIds` (with their sizes) and returns its id.
   * A file of one whole block is a symlink to it (metadata, journalled before
   * the head that uses it); a longer list is JSON, written in the background,
   * which the commit making the file reachable waits for (ObjectStore.flush).
   */
  putRecord(blockIds: string[], blockSizes: number[], size: number, id = fileIdOf(blockIds, size)): string {
    if (id === ZERO_ID || this.records.has(id)) return id;
    const rec: FileRecord = { block_ids: blockIds, size, block_sizes: blockSizes };
    this.records.set(id, rec);
    if (blockIds.length === 1 && blockSizes[0] === size) {
      symlinkOnce(blockIds[0], this.recordPath(id));
      return id;
    }
    this.objects.track(writeFileAtomic(this.recordPath(id), JSON.stringify(rec), { syncDir: false }), () =>
      this.records.delete(id),
    );
    return id;
  }

  /** The block list of file `id`, or null for a file stored whole by an older store. */
  async record(id: string): Promise<FileRecord | null> {
    if (id === ZERO_ID) return { block_ids: [], size: 0, block_sizes: [] };
    const hit = this.records.get(id);
    if (hit) return hit;
    const at = this.recordPath(id);
    let rec: FileRecord;
    try {
      const block = readlinkSync(at);
      const size = this.resolve(block)?.size ?? 0;
      rec = { block_ids: [block], size, block_sizes: [size] };
    } catch (e) {
      if (errno(e) === 'ENOENT') return null;
      if (errno(e) !== 'EINVAL') throw e;
      rec = JSON.parse(await fsp.readFile(at, 'utf8')) as FileRecord;
    }
    this.records.set(id, rec);
    return rec;
  }

  /**
   * The block list of file `id` as library `repoId` sees it, which then holds
   * those blocks (it can read them). A file stored whole by an older store is
   * cut into 8 MiB blocks first (read 8 MiB at a time; its blocks are placed
   * in its object) and recorded under its id.
   */
  async blocksOf(repoId: string, id: string): Promise<FileRecord> {
    let rec = await this.record(id);
    if (!rec) {
      const ids: string[] = [];
      const sizes: number[] = [];
      const fh = await fsp.open(this.objects.pathOf(id), 'r');
      try {
        const buf = Buffer.allocUnsafe(BLOCK_SIZE);
        for (let off = 0; ;) {
          let n = 0;
          while (n < BLOCK_SIZE) {
            const { bytesRead } = await fh.read(buf, n, BLOCK_SIZE - n, null);
            if (bytesRead === 0) break;
            n += bytesRead;
          }
          if (n === 0) break;
          const bid = createHash('sha1').update(buf.subarray(0, n)).digest('hex');
          if (!this.resolve(bid)) symlinkOnce(placeTarget('o', id, off, n), this.blockPath(bid));
          ids.push(bid);
          sizes.push(n);
          off += n;
          if (n < BLOCK_SIZE) break;
        }
      } finally {
        await fh.close();
      }
      rec = { block_ids: ids, size: sizes.reduce((a, b) => a + b, 0), block_sizes: sizes };
      this.putRecord(ids, sizes, rec.size, id);
      await this.objects.flush();
    }
    for (const b of rec.block_ids) if (this.resolve(b)) this.markHeld(repoId, b);
    return rec;
  }

  /**
   * Bytes `start`..`end` (inclusive) of file `id`: its content when it was
   * uploaded whole, else its blocks, else an older store's object. A file whose
   * committed size is larger than its blocks ends early (a short body).
   */
  async open(id: string, start: number, end: number): Promise<Readable> {
    const pieces = await this.ranges(id, start, end);
    const stream = (p: FileRange) =>
      createReadStream(p.path, { start: p.start, end: p.end, highWaterMark: 256 * 1024 });
    if (pieces.length === 1) return stream(pieces[0]);
    async function* read() {
      for (const p of pieces) yield* stream(p);
    }
    return Readable.from(read(), { objectMode: false });
  }

  /** The same bytes written to `out` (not ended) through reused buffers (range-pump.ts). */
  async send(id: string, start: number, end: number, out: Writable): Promise<void> {
    await pumpRanges(await this.ranges(id, start, end), out);
  }

  /** where bytes `start`..`end` of file `id` lie: ranges of local files, in order */
  private async ranges(id: string, start: number, end: number): Promise<FileRange[]> {
    if (existsSync(this.contentPath(id))) return [{ path: this.contentPath(id), start, end }];
    const rec = await this.record(id);
    if (!rec) return [{ path: this.objects.pathOf(id), start, end }];
    const pieces: FileRange[] = [];
    let off = 0;
    for (let i = 0; i < rec.block_ids.length && off <= end; i++) {
      const size = rec.block_sizes[i];
      const from = Math.max(start, off);
      const to = Math.min(end, off + size - 1);
      const place = this.resolve(rec.block_ids[i]);
      if (!place) break; // a short body
      if (from <= to) pieces.push({ path: place.path, start: place.start + from - off, end: place.start + to - off });
      off += size;
    }
    return pieces;
  }
}
