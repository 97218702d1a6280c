// Reading by Seafile block: a version whose block list the server gave takes
// the bytes of blocks the disk cache holds under another version (the same
// block id) instead of downloading them, so a large file another client
// changed in one block downloads about one block, and identical blocks of
// different files (or repeated ones of one file, zeros) are downloaded once.
//
// - Lists: for files above `minBytes`, the first read of a version asks the
//   server for its list (block-lists.ts; one call, beside the download link).
// - Index: once all chunks of one of its blocks are on disk, a version's block
//   is noted in block-index.ts as a candidate for the id its list names
//   (block id -> version, index, length of the fixed cut), without hashing:
//   a cold read costs no more CPU than without blocks. A candidate is hashed
//   (a worker thread) only when some version wants its id at another place;
//   when it is that id it becomes sure, else it is dropped (and after two
//   such misses with no block found right, all of its version's candidates:
//   its list is not of the fixed cut).
// - Reservation: the chunks of a block whose id the index holds (sure) under
//   another version are reserved in the disk cache (chunk-cache/), so the read
//   engine treats them as on disk; before it reads them from there it has
//   them brought here (bring): the holder's bytes are read and hashed again (they must
//   still be the id: a damaged or missing chunk is never served), then
//   written into this version's cache file and marked as any chunk is
//   (markers after data). A failure gives the reservation up: those chunks
//   are downloaded as usual.
// - Where a block lies: the list has no sizes (a desktop client cuts files at
//   content-defined boundaries, 6 to 10 MiB). A block is placed at
//   b * blockBytes only when that offset follows from lengths known for sure
//   (hashed): those of every block before it, or of it and every block after
//   it (the file's size minus theirs). So one changed block anywhere in a
//   fixed-cut file leaves all the others placed, and a list of other
//   boundaries never puts bytes in the wrong place.
import { Hasher } from '../common/block-hasher.js';
import type { SeafileApi } from '../../client/types.js';
import type { ChunkCache } from './chunk-cache/chunk-cache.js';
import { BlockIndex } from './block-index.js';
import { BlockLists } from './block-lists.js';
import type { RemoteFile } from './types.js';
import { join } from 'node:path';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

const MAX_KNOWN = 2048;
const MAX_WANTS = 65_536;
/** candidates of a version found not to be their ids, with none found to be, before its list is taken for another cut */
const MISSES_UNLIKE = 2;

export interface BlockReuseOptions {
  /** the server's block size (Seafile's fixed_block_size, 8 MiB) */
  blockBytes?: number;
  /** files up to this size are read as before (default 16 MiB; Infinity: never by block) */
  minBytes?: number;
}

interface Known {
  ids: string[];
  size: number;
}

/** Block reuse for a reader with a disk cache, or null when it cannot be (no cache, odd sizes, switched off). */
export function blockReuse(
  api: SeafileApi,
  disk: ChunkCache | null,
  plain: ((repo: string) => Promise<boolean>) | undefined,
  opts: BlockReuseOptions = {},
): BlockReuse | null {
  const blockBytes = opts.blockBytes ?? 8 * 1024 * 1024;
  const minBytes = opts.minBytes ?? 16 * 1024 * 1024;
  if (!disk || !plain || minBytes === Infinity || blockBytes % disk.chunkBytes !== 0) return null;
  const index = new BlockIndex(join(disk.folder, 'block-index'), (v) => disk.known(v));
  // two workers: the hashing a changed version asks for (its blocks checked, then copied) runs while its first
  // read waits; a cold read starts none
  return new BlockReuse(disk, new BlockLists(api, plain), index, new Hasher(2, blockBytes), blockBytes, minBytes);
}

export class BlockReuse {
  readonly stats = { reusedBlocks: 0, reusedBytes: 0, candidates: 0, indexed: 0, rejected: 0 };
  /** the lists of versions read, by version */
  private readonly known = new Map<string, Known>();
  /** versions whose list turned out not to be of the fixed cut (or not their bytes) */
  private readonly unlike = new Set<string>();
  /** versions whose first read looked for their list */
  private readonly prepared = new Set<string>();
  /** block id -> the places (version, index) that could take it once the index holds it */
  private readonly wants = new Map<string, Map<string, Set<number>>>();
  private readonly filling = new Map<string, Promise<void>>();
  /** block ids whose candidates are being hashed */
  private readonly checking = new Set<string>();
  /** per version: candidates found not to be their id, and whether one was found to be */
  private readonly checked = new Map<string, { misses: number; hits: boolean }>();
  private jobs = 0;
  private idleWaiters: (() => void)[] = [];
  /** chunks per block */
  private readonly per: number;

  constructor(
    private readonly disk: ChunkCache,
    readonly lists: BlockLists,
    readonly index: BlockIndex,
    private readonly hasher: Hasher,
    private readonly blockBytes: number,
    private readonly minBytes: number,
  ) {
    this.per = blockBytes / disk.chunkBytes;
    disk.setOnStored((v, first, count) => this.stored(v, first, count));
  }

  /**
   * Before the disk cache is read for chunks first..last of a version: those
   * still reserved are brought, each one's block copied in from the version
   * that holds it, or given up (they are downloaded as usual). False when
   * none is reserved (nothing to wait for); else resolves once none is.
   */
  bring(version: string, first: number, last: number): Promise<void> | false {
    const todo = this.disk.reservedAmong(version, first, last);
    if (!todo) return false;
    return (async () => {
      for (const i of todo) {
        if (!this.disk.reservedAmong(version, i, i)) continue;
        await this.fill(version, i).catch(() => {});
        this.disk.unreserve(version, i, i); // not brought: fetched as usual
      }
    })();
  }

  /** reads of the file may go on: it is not one for blocks, or its first read has looked for its list */
  ready(f: RemoteFile): boolean {
    return f.size <= this.minBytes || this.prepared.has(f.version) || !this.lists.possible(f);
  }

  /**
   * Before the first read of a version: its disk cache entry opened, its
   * list asked for and what other versions hold of it reserved. The read
   * waits for the list only when the index holds anything (else nothing can
   * be taken: the list comes in the background, to index what this read
   * brings). `prefetch` (the download link) is asked meanwhile. Never rejects.
   */
  async prepare(f: RemoteFile, prefetch?: () => Promise<unknown>): Promise<void> {
    const version = f.version;
    try {
      await this.disk.open(version, f.size);
      if (f.size <= this.minBytes || !this.lists.possible(f)) return;
      await this.index.load();
      const whole = this.wholeOnDisk(version);
      // all here and indexed already: nothing to take, nothing to note
      if (whole && this.index.knows(version)) return;
      const wait = !whole && !this.index.empty;
      if (wait && !this.lists.cached(version)) void prefetch?.().catch(() => {});
      const learn = this.lists.get(f).then((ids) => {
        if (ids && f.version === version) this.learned(version, ids, f.size);
      });
      if (wait) {
        await learn;
        // blocks an earlier read brought may still be on their way into the index (hashed in a
        // worker): a moment for them, else this read downloads what it could have taken
        if (this.jobs > 0) await Promise.race([this.idle(), sleep(1000)]);
      }
    } catch {
      // reads go on as without blocks
    } finally {
      this.prepared.add(version);
      if (this.prepared.size > 4 * MAX_KNOWN) this.prepared.delete(this.prepared.values().next().value as string);
    }
  }

  /** resolves once no hash or copy is under way (for tests and the benchmark) */
  idle(): Promise<void> {
    if (this.jobs === 0) return this.index.flush();
    return new Promise<void>((r) => this.idleWaiters.push(r)).then(() => this.idle());
  }

  async close(): Promise<void> {
    this.hasher.close();
    await this.index.flush();
  }

  private job<T>(p: Promise<T>): Promise<T> {
    this.jobs++;
    return p.finally(() => {
      if (--this.jobs > 0) return;
      const ws = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of ws) w();
    });
  }

  private wholeOnDisk(version: string): boolean {
    const { have, of } = this.disk.held(version);
    return have === of;
  }

  /** chunks of block b of a version of `size` bytes */
  private chunksOf(b: number, size: number): [number, number] {
    const lastChunk = Math.ceil(size / this.disk.chunkBytes) - 1;
    return [b * this.per, Math.min(lastChunk, (b + 1) * this.per - 1)];
  }

  private blockLen(b: number, size: number): number {
    return Math.min(this.blockBytes, size - b * this.blockBytes);
  }

  /** the version's list came: what it holds already is indexed, what others hold is reserved */
  private learned(version: string, ids: string[], size: number): void {
    if (!ids.length || this.unlike.has(version)) return;
    // (again after the disk cache closed and reopened the version: its reservations went with it)
    if (!this.known.has(version)) {
      this.known.set(version, { ids, size });
      if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value as string);
      for (let b = 0; b < ids.length; b++) this.noteStored(version, b);
    }
    this.reserveFor(version);
  }

  /**
   * Reserves the blocks of the version whose bytes another cached version
   * holds and whose place in this one follows from known lengths (see the
   * head of this file); the others wait for their id to be indexed.
   */
  private reserveFor(version: string): void {
    const k = this.known.get(version);
    if (!k || !this.disk.ready(version)) return;
    const { ids, size } = k;
    const B = this.blockBytes;
    const n = ids.length;
    const lens = ids.map((id) => this.index.lengthOf(id));
    const placed = new Array<boolean>(n).fill(false);
    let off = 0;
    let b = 0;
    for (; b < n; b++) {
      placed[b] = off === b * B;
      const L = lens[b];
      if (L === undefined) break;
      off += L;
    }
    // every length known and they do not add up to the size: a list of another file, nothing is placed
    if (b === n && off !== size) return;
    let end = size;
    for (b = n - 1; b >= 0; b--) {
      const L = lens[b];
      if (L === undefined) break;
      end -= L;
      if (end === b * B) placed[b] = true;
    }
    for (b = 0; b < n && b * B < size; b++) {
      const id = ids[b];
      const other = this.index.holders(id).some((h) => h.version !== version || h.idx !== b);
      if (placed[b] && lens[b] === this.blockLen(b, size) && other) {
        const [first, last] = this.chunksOf(b, size);
        this.disk.reserve(version, first, last);
        continue;
      }
      if (this.index.holds(id, version, b)) continue;
      let places = this.wants.get(id);
      if (!places) {
        if (this.wants.size >= MAX_WANTS) this.wants.clear();
        this.wants.set(id, (places = new Map()));
      }
      let at = places.get(version);
      if (!at) places.set(version, (at = new Set()));
      at.add(b);
      // a candidate held elsewhere is hashed now that it is wanted
      if (this.candidateFor(id)) this.check(id);
    }
  }

  /** some candidate for `id` lies at a place that wants it other than its own */
  private candidateFor(id: string): boolean {
    const places = this.wants.get(id);
    if (!places) return false;
    for (const h of this.index.candidates(id))
      for (const [v, at] of places) if (v !== h.version || at.size > 1 || !at.has(h.idx)) return true;
    return false;
  }

  /** `id` was just indexed: the versions that wait for it look again */
  private noted(id: string): void {
    const places = this.wants.get(id);
    if (!places) return;
    this.wants.delete(id);
    for (const v of places.keys()) this.reserveFor(v);
  }

  /** the disk cache wrote chunks: the blocks they complete become candidates */
  private stored(version: string, first: number, count: number): void {
    if (!this.known.has(version)) return;
    const last = Math.floor((first + count - 1) / this.per);
    for (let b = Math.floor(first / this.per); b <= last; b++) this.noteStored(version, b);
  }

  /** Block b of the version, once all of it is on disk, is a candidate for the id its list names (not hashed). */
  private noteStored(version: string, b: number): void {
    const k = this.known.get(version);
    if (!k || b >= k.ids.length || b * this.blockBytes >= k.size) return;
    const id = k.ids[b];
    if (this.index.noted(id, version, b)) return;
    const [first, last] = this.chunksOf(b, k.size);
    for (let i = first; i <= last; i++) if (!this.disk.stored(version, i)) return;
    this.index.suggest(id, { version, idx: b, len: this.blockLen(b, k.size), size: k.size });
    this.stats.candidates++;
    if (this.candidateFor(id)) this.check(id);
  }

  /**
   * Hashes the candidates for `id` (the newest first) until one is the id:
   * it becomes sure and the versions that want it look again. One that is
   * not (another cut, damaged, gone from disk) is dropped.
   */
  private check(id: string): void {
    if (this.checking.has(id)) return;
    this.checking.add(id);
    void this.job(
      (async () => {
        for (const h of [...this.index.candidates(id)]) {
          const got = await this.checkHolder(h, id);
          const seen = this.checked.get(h.version) ?? { misses: 0, hits: false };
          if (this.checked.size > MAX_KNOWN) this.checked.clear();
          this.checked.set(h.version, seen);
          if (got !== 'same') {
            this.index.forget(id, h);
            this.stats.rejected++;
            // (bytes gone from disk say nothing of the cut)
            if (got === 'other' && ++seen.misses >= MISSES_UNLIKE && !seen.hits) this.notFixedCut(h.version);
            continue;
          }
          seen.hits = true;
          this.index.add(id, h);
          this.stats.indexed++;
          this.noted(id);
          return;
        }
      })(),
    ).finally(() => this.checking.delete(id));
  }

  /** the version's list is not of the fixed cut (or not its bytes): none of it is used or indexed */
  private notFixedCut(version: string): void {
    this.known.delete(version);
    this.index.forgetCandidates(version);
    if (this.unlike.size > MAX_KNOWN) this.unlike.clear();
    this.unlike.add(version);
  }

  /** reserved chunk `idx` is about to be read: its block is copied in (or given up) */
  private fill(version: string, idx: number): Promise<void> {
    const b = Math.floor(idx / this.per);
    const key = `${version}:${b}`;
    let p = this.filling.get(key);
    if (!p) {
      p = this.job(this.copyBlock(version, b)).finally(() => this.filling.delete(key));
      this.filling.set(key, p);
    }
    return p;
  }

  private async copyBlock(version: string, b: number): Promise<void> {
    const k = this.known.get(version);
    const size = k?.size ?? this.disk.held(version).of * this.disk.chunkBytes;
    const [first, last] = this.chunksOf(b, size);
    try {
      if (!k) return;
      const id = k.ids[b];
      const len = this.blockLen(b, k.size);
      for (const h of [...this.index.holders(id)]) {
        if ((h.version === version && h.idx === b) || h.len !== len) continue;
        const data = await this.readHolder(h, id);
        if (!data) {
          this.index.forget(id, h);
          this.stats.rejected++;
          continue;
        }
        try {
          const wrote = await this.disk.fillReserved(version, first, data.subarray(0, len));
          if (wrote < 0) return;
          this.stats.reusedBlocks++;
          this.stats.reusedBytes += wrote;
          this.index.add(id, { version, idx: b, len, size: k.size });
          return;
        } finally {
          this.hasher.release(data);
        }
      }
    } finally {
      // what was not brought is downloaded
      this.disk.unreserve(version, first, last);
    }
  }

  /** the holder's block as read from its cache file now, when every chunk of it is marked there and it is `id` */
  private async readHolder(h: { version: string; idx: number; len: number; size: number }, id: string) {
    const loc = await this.holderFile(h);
    if (!loc) return null;
    try {
      const got = await this.hasher.hash(loc.path, loc.dataOff + h.idx * this.blockBytes, h.len, true);
      if (got.id === id && got.data) return got.data;
      this.hasher.release(got.data);
      return null;
    } catch {
      return null;
    }
  }

  /** whether the holder's bytes on disk now are `id` ('same'), are other bytes ('other'), or are not all there */
  private async checkHolder(h: { version: string; idx: number; len: number; size: number }, id: string) {
    const loc = await this.holderFile(h);
    if (!loc) return 'gone';
    try {
      const got = await this.hasher.hash(loc.path, loc.dataOff + h.idx * this.blockBytes, h.len);
      return got.id === id ? 'same' : 'other';
    } catch {
      return 'gone';
    }
  }

  /** the holder's cache file, when every chunk of its block is marked there */
  private async holderFile(h: { version: string; idx: number; size: number }) {
    await this.disk.open(h.version, h.size);
    const [first, last] = this.chunksOf(h.idx, h.size);
    for (let i = first; i <= last; i++) if (!this.disk.stored(h.version, i)) return null;
    return this.disk.locate(h.version);
  }
}
