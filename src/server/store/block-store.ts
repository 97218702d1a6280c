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
// Ids and the symlinks' forms are block-format.ts; the marks of blocks sent
// raw that wait for a commit, pending-blocks.ts.
import { createHash } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  promises as fsp,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { writeFileAtomic } from './atomic.js';
import { pumpRanges, type FileRange } from './range-pump.js';
import { PendingBlocks } from './pending-blocks.js';
import {
  BLOCK_ID,
  BLOCK_SIZE,
  errno,
  fileIdOf,
  placeTarget,
  symlinkOnce,
  type FileRecord,
  type Place,
} from './block-format.js';
import { type ObjectStore, ZERO_ID } from './objects.js';

export { BLOCK_ID, BLOCK_SIZE, fileIdOf, type FileRecord, type Place } from './block-format.js';

export class BlockStore {
  readonly blocksDir: string;
  readonly filesDir: string;
  readonly contentsDir: string;
  readonly presenceDir: string;
  readonly pendingDir: string;
  private records = new LRUCache<string, FileRecord>({ max: 4096 });
  private places = new LRUCache<string, Place>({ max: 8192 });
  private presenceMade = new Set<string>();
  /** the blocks sent raw that no commit used yet (pending-blocks.ts) */
  private readonly pending: PendingBlocks;

  constructor(
    dataDir: string,
    private readonly objects: ObjectStore,
  ) {
    this.blocksDir = path.join(dataDir, 'blocks');
    this.filesDir = path.join(dataDir, 'files');
    this.contentsDir = path.join(dataDir, 'contents');
    this.presenceDir = path.join(dataDir, 'repo-blocks');
    this.pendingDir = path.join(dataDir, 'pending-blocks');
    this.pending = new PendingBlocks(this.pendingDir);
  }

  async init(): Promise<void> {
    await fsp.mkdir(this.presenceDir, { recursive: true, mode: 0o700 });
    await this.pending.load();
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
    this.pending.used(repoId, id);
  }

  /** Bytes of the blocks sent raw to `repoId` that no commit used yet. */
  pendingBytes(repoId: string): number {
    return this.pending.bytes(repoId);
  }

  /** Of those, the bytes of the distinct `ids`. */
  pendingOf(repoId: string, ids: string[]): number {
    return this.pending.bytesOf(repoId, ids);
  }

  /** Whether `repoId` holds block `id` for a file of its own, not only as sent raw. */
  usesBlock(repoId: string, id: string): boolean {
    return !this.pending.has(repoId, id) && this.heldSize(repoId, id) !== null;
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
    const done = this.pending.take(repoId, ids, (id) => this.heldSize(repoId, id) !== null);
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
    for (const [repoId, id] of this.pending.expired(cutoff)) {
      this.pending.clear(repoId, id);
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
    this.pending.set(repoId, id, size);
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
