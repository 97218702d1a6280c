// File contents as blocks, with the real server's ids: a block's id is the
// sha1 of its bytes (uploads cut files into fixed 8 MiB blocks, as Seafile's
// web and API uploads do), a file's id is the sha1 of its object, the JSON
// {"block_ids": [...], "size": N, "type": 1, "version": 1} (fs-mgr.c
// create_seafile_json: jansson, sorted keys, ", " and ": " separators).
//
// On disk:
//   blocks/xx/yyyy…        block bytes, shared by every library (identical blocks once);
//   files/xx/yyyy…         a file's record: that object plus the sizes of its blocks;
//   repo-blocks/<repo>/<id> a hard link per block a library holds: which blocks a library
//                          "has" (real servers keep blocks per library, and the blocks API
//                          must not reveal or lend another account's blocks by their hash).
// Stores written before blocks hold a file's whole content as one object,
// objects/<sha1 of the content>, with that sha1 as the file id and no record:
// such files stay readable as they are; asking for their block list cuts them
// into blocks once and records them under their old id.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, linkSync, mkdirSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import { writeFileAtomic } from './atomic.js';
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

export class BlockStore {
  readonly blocksDir: string;
  readonly filesDir: string;
  readonly presenceDir: string;
  private records = new LRUCache<string, FileRecord>({ max: 4096 });
  private presenceMade = new Set<string>();

  constructor(
    dataDir: string,
    private readonly objects: ObjectStore,
  ) {
    this.blocksDir = path.join(dataDir, 'blocks');
    this.filesDir = path.join(dataDir, 'files');
    this.presenceDir = path.join(dataDir, 'repo-blocks');
  }

  async init(): Promise<void> {
    await fsp.mkdir(this.presenceDir, { recursive: true, mode: 0o700 });
    for (const dir of [this.blocksDir, this.filesDir]) {
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

  blockPath(id: string): string {
    return path.join(this.blocksDir, id.slice(0, 2), id.slice(2));
  }

  private recordPath(id: string): string {
    return path.join(this.filesDir, id.slice(0, 2), id.slice(2));
  }

  private presencePath(repoId: string, id: string): string {
    return path.join(this.presenceDir, repoId, id);
  }

  /**
   * Moves a block's temp file (fsync'd by its writer, same filesystem) into the
   * store and marks it held by `repoId`. A block already there has these very
   * bytes: the rename replaces it with its twin.
   */
  async adoptBlock(repoId: string, tmpPath: string, id: string): Promise<void> {
    await fsp.rename(tmpPath, this.blockPath(id));
    this.markHeld(repoId, id);
  }

  /** Stores a block from memory (atomic, fsync'd) for `repoId`. */
  async putBlock(repoId: string, id: string, data: Buffer): Promise<void> {
    await writeFileAtomic(this.blockPath(id), data, { syncDir: false });
    this.markHeld(repoId, id);
  }

  private markHeld(repoId: string, id: string): void {
    if (!this.presenceMade.has(repoId)) {
      mkdirSync(path.join(this.presenceDir, repoId), { recursive: true, mode: 0o700 });
      this.presenceMade.add(repoId);
    }
    try {
      linkSync(this.blockPath(id), this.presencePath(repoId, id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }

  /** The size of block `id` if library `repoId` holds it, else null. */
  async heldSize(repoId: string, id: string): Promise<number | null> {
    if (!BLOCK_ID.test(id)) return null;
    try {
      return (await fsp.stat(this.presencePath(repoId, id))).size;
    } catch {
      return null;
    }
  }

  /** Which of `ids` library `repoId` does not hold, in their order. */
  async missing(repoId: string, ids: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const id of ids) if ((await this.heldSize(repoId, id)) === null) out.push(id);
    return out;
  }

  /**
   * Records a file made of `blockIds` (with their sizes) and returns its id.
   * The write runs in the background; the commit that makes the file
   * reachable waits for it (ObjectStore.flush).
   */
  putRecord(blockIds: string[], blockSizes: number[], size: number, id = fileIdOf(blockIds, size)): string {
    if (id === ZERO_ID || this.records.has(id)) return id;
    const rec: FileRecord = { block_ids: blockIds, size, block_sizes: blockSizes };
    this.records.set(id, rec);
    this.objects.track(writeFileAtomic(this.recordPath(id), JSON.stringify(rec), { syncDir: false }), () =>
      this.records.delete(id),
    );
    return id;
  }

  /** The record of file `id`, or null for a file stored whole (from before blocks). */
  async record(id: string): Promise<FileRecord | null> {
    if (id === ZERO_ID) return { block_ids: [], size: 0, block_sizes: [] };
    const hit = this.records.get(id);
    if (hit) return hit;
    try {
      const rec = JSON.parse(await fsp.readFile(this.recordPath(id), 'utf8')) as FileRecord;
      this.records.set(id, rec);
      return rec;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  /**
   * The record of file `id` as library `repoId` sees it: a file stored whole
   * is cut into 8 MiB blocks first (read 8 MiB at a time) and recorded under
   * its id; either way the library then holds its blocks (it can read them).
   */
  async blocksOf(repoId: string, id: string): Promise<FileRecord> {
    let rec = await this.record(id);
    if (!rec) {
      const ids: string[] = [];
      const sizes: number[] = [];
      const fh = await fsp.open(this.objects.pathOf(id), 'r');
      try {
        const buf = Buffer.allocUnsafe(BLOCK_SIZE);
        for (;;) {
          let n = 0;
          while (n < BLOCK_SIZE) {
            const { bytesRead } = await fh.read(buf, n, BLOCK_SIZE - n, null);
            if (bytesRead === 0) break;
            n += bytesRead;
          }
          if (n === 0) break;
          const data = buf.subarray(0, n);
          const bid = createHash('sha1').update(data).digest('hex');
          await this.putBlock(repoId, bid, Buffer.from(data));
          ids.push(bid);
          sizes.push(n);
          if (n < BLOCK_SIZE) break;
        }
      } finally {
        await fh.close();
      }
      rec = { block_ids: ids, size: sizes.reduce((a, b) => a + b, 0), block_sizes: sizes };
      this.putRecord(ids, sizes, rec.size, id);
      await this.objects.flush();
      return rec;
    }
    for (const b of rec.block_ids) if ((await this.heldSize(repoId, b)) === null) this.markHeld(repoId, b);
    return rec;
  }

  /**
   * Bytes `start`..`end` (inclusive) of file `id`: from its blocks, or from
   * its whole-content object when it has no record. A file whose committed
   * size is larger than its blocks ends early (the reader sees a short body).
   */
  async open(id: string, start: number, end: number): Promise<Readable> {
    const rec = await this.record(id);
    if (!rec) return createReadStream(this.objects.pathOf(id), { start, end, highWaterMark: 256 * 1024 });
    const pieces: { path: string; start: number; end: number }[] = [];
    let off = 0;
    for (let i = 0; i < rec.block_ids.length && off <= end; i++) {
      const size = rec.block_sizes[i];
      const from = Math.max(start, off);
      const to = Math.min(end, off + size - 1);
      if (from <= to) pieces.push({ path: this.blockPath(rec.block_ids[i]), start: from - off, end: to - off });
      off += size;
    }
    async function* read() {
      for (const p of pieces)
        yield* createReadStream(p.path, { start: p.start, end: p.end, highWaterMark: 256 * 1024 });
    }
    return Readable.from(read(), { objectMode: false });
  }

  /** A temp path next to the blocks (same filesystem) for a block being received. */
  static tmpName(tmpDir: string): string {
    return path.join(tmpDir, `blk-${randomBytes(8).toString('hex')}`);
  }
}
