// Uploads by blocks: a large file of an unencrypted library is cut into
// fixed blocks (8 MiB, the cut of the server's own web and API uploads),
// each named by its SHA-1 (hashed in worker threads, hasher.ts); the server
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
import { readFile, writeFile } from 'node:fs/promises';
import { ApiError } from '../../../client/errors.js';
import type { BlockPiece, BlocksLink, SeafileApi } from '../../../client/types.js';
import { retryable } from '../../errors.js';
import { baseOf, parentOf } from '../../paths.js';
import type { FileState } from '../file-state.js';
import { setTimeOf, uploadsUnderTempName, type UploadResult } from '../types.js';
import { BlockMap } from './block-map.js';
import type { Hasher } from './hasher.js';

export const BLOCK_SIZE = 8 * 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** a link of upload-blks-link and the folder it was asked for */
type Link = BlocksLink & { dir: string };

export interface BlockOptions {
  /** files larger than this go by blocks (bytes; default 8 MiB: more than one block); Infinity: never */
  threshold?: number;
  /** the cut (tests only: the server's is 8 MiB) */
  blockSize?: number;
  /** a request of raw blocks carries at most this many bytes (default 32 MiB; halved after a 442/413) */
  maxRequestBytes?: number;
  /** raw-block requests of one file at once (default 2) */
  concurrency?: number;
  /** where the mount notes that the server lacks the block path */
  stateFile?: string;
}

/** what `seafs status` shows of a file going by blocks */
export interface BlockProgress {
  /** bytes of the blocks the server lacks */
  toSend: number;
  /** of those, bytes sent */
  sent: number;
  /** blocks the server already holds */
  onServer: number;
  blocks: number;
}

export interface BlockStats {
  uploads: number;
  blocksSent: number;
  bytesSent: number;
  /** blocks the server already held (not sent) */
  blocksSkipped: number;
  fallbacks: number;
  hashedBytes: number;
}

/** the server cannot take this upload by blocks: the whole-file upload runs instead */
class NoBlocks extends Error {}

/** a block changed while it was sent: the upload is tried again (the file is dirty anyway) */
class Changed extends Error {}

interface Pump {
  running: Promise<void> | null;
  stop: boolean;
  failed: boolean;
  /** blocks below this were looked at already */
  cursor: number;
}

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
  private perRequest: number;
  private readonly concurrency: number;
  /** why the server cannot take blocks (null: it can, as far as known) */
  private off: string | null = null;
  private readonly plain = new Map<string, boolean | Promise<boolean>>();
  private readonly maps = new WeakMap<FileState, BlockMap>();
  private readonly bases = new WeakMap<FileState, Promise<void>>();
  private readonly pumps = new WeakMap<FileState, Pump>();
  private readonly progress = new WeakMap<FileState, BlockProgress>();
  /** block lists of versions this mount hashed itself (file id -> ids), newest last */
  private readonly own = new Map<string, string[]>();

  constructor(
    private readonly api: SeafileApi,
    private readonly hasher: Hasher,
    private readonly log: (msg: string) => void,
    private readonly folderReady: (repo: string, dir: string) => Promise<void>,
    private readonly o: BlockOptions = {},
  ) {
    this.blockSize = o.blockSize ?? BLOCK_SIZE;
    this.threshold = o.threshold ?? BLOCK_SIZE;
    this.perRequest = Math.max(this.blockSize, o.maxRequestBytes ?? 32 * 1024 * 1024);
    this.concurrency = o.concurrency ?? 2;
    if (!api.blocksLink || !api.uploadBlocks || !api.commitBlocks) this.off = 'the client has no block calls';
    else if (!(this.threshold < Infinity)) this.off = 'switched off';
  }

  /** Reads what an earlier mount noted about the server (it lacks the block path). */
  async init(): Promise<void> {
    if (this.off || !this.o.stateFile) return;
    try {
      const why = JSON.parse(await readFile(this.o.stateFile, 'utf8')) as { reason?: string; at?: number };
      // asked again after a day: the server may have been upgraded
      if (why.reason && Date.now() - (why.at ?? 0) < 24 * 3600_000) this.off = why.reason;
    } catch {
      // nothing noted
    }
  }

  close(): void {
    this.hasher.close();
  }

  /** the block path is unusable on this server (noted for later mounts) */
  private turnOff(reason: string): void {
    if (this.off) return;
    this.off = reason;
    this.log(`uploads by blocks are off for this server (${reason}); large files are uploaded whole`);
    if (this.o.stateFile)
      void writeFile(this.o.stateFile, JSON.stringify({ reason, at: Date.now() }), { mode: 0o600 }).catch(() => {});
  }

  /** whether the library is unencrypted (asked once per library; undefined until known) */
  private plainNow(repo: string): boolean | undefined {
    const v = this.plain.get(repo);
    if (typeof v === 'boolean') return v;
    if (!v) void this.plainOf(repo).catch(() => {});
    return undefined;
  }

  private plainOf(repo: string): Promise<boolean> {
    const v = this.plain.get(repo);
    if (v !== undefined) return Promise.resolve(v);
    const p = this.api.getLibrary(repo).then(
      (lib) => {
        this.plain.set(repo, !lib.encrypted);
        return !lib.encrypted;
      },
      (e: unknown) => {
        this.plain.delete(repo);
        throw e;
      },
    );
    this.plain.set(repo, p);
    return p;
  }

  /** could `s` go by blocks (its size aside)? An unknown library counts as yes (asked meanwhile). */
  private candidate(s: FileState): boolean {
    return this.off === null && !uploadsUnderTempName(baseOf(s.path)) && this.plainNow(s.repo) !== false;
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
    if (this.off) return;
    this.plainNow(s.repo);
    this.maps.set(s, new BlockMap(this.blockSize, 0));
  }

  /**
   * An existing file's local copy is ready: its blocks are those of the
   * server's version `id` (known here when this mount hashed it, else asked
   * of the server in the background).
   */
  opened(s: FileState, id: string | null, size: number): void {
    if (this.off || size <= this.threshold) return;
    const plain = this.plainNow(s.repo);
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
      this.kick(s, m);
  }

  /** The file was truncated to `size`. */
  truncated(s: FileState, size: number): void {
    const m = this.maps.get(s);
    if (!m) return;
    if (size === 0) {
      const p = this.pumps.get(s);
      if (p) p.stop = true;
      this.pumps.delete(s);
      m.reset(0);
    } else m.resize(size);
  }

  /** what `seafs status` shows of the file's upload by blocks (null: none runs) */
  progressOf(s: FileState): BlockProgress | null {
    return this.progress.get(s) ?? null;
  }

  // ---- the pump: blocks sent while the file is written in order ----

  private kick(s: FileState, m: BlockMap): void {
    let p = this.pumps.get(s);
    if (!p) {
      p = { running: null, stop: false, failed: false, cursor: 0 };
      this.pumps.set(s, p);
    }
    if (p.running || p.stop || p.failed) return;
    const pump = p;
    pump.running = this.pump(s, m, pump)
      .catch((e: unknown) => {
        pump.failed = true;
        this.log(`${s.path}: blocks could not be sent while written (${(e as Error).message}); they go after close`);
      })
      .finally(() => {
        pump.running = null;
        // the writes may have passed more blocks meanwhile
        if (!pump.stop && !pump.failed && this.maps.get(s) === m && this.nextGroup(m, pump).length > 0) this.kick(s, m);
      });
  }

  /** blocks per request */
  private group(): number {
    return Math.max(1, Math.floor(this.perRequest / this.blockSize));
  }

  /** the next blocks the in-order writes have passed that have no id yet (at most a group) */
  private nextGroup(m: BlockMap, p: Pump): number[] {
    if (m.seqEnd === null) return [];
    // a block is done once the writes are past it by more than a write still in flight may lag
    const done = Math.floor((m.seqEnd - m.reorder) / this.blockSize);
    const out: number[] = [];
    for (let i = p.cursor; i < done && out.length < this.group(); i++) if (m.ids[i] == null) out.push(i);
    return out;
  }

  private async pump(s: FileState, m: BlockMap, p: Pump): Promise<void> {
    const repo = s.repo;
    const dir = parentOf(s.path);
    await this.folderReady(repo, dir);
    // up to `concurrency` groups on their way at once, each asking which of its blocks the server
    // lacks and sending those: one request at a time left the line idle while the server stored
    // a group and answered, and while the next group's ask went to seahub
    const sending: Promise<void>[] = [];
    /** waits until at most `n` groups are on their way (a failed one fails the pump) */
    const settle = async (n: number) => {
      while (sending.length > n) await sending.shift();
    };
    try {
      for (;;) {
        // what the writes passed meanwhile, up to a request's worth: a group fills while the others are sent
        let idx = this.nextGroup(m, p);
        if (idx.length < this.group()) {
          // not a full request yet: let it grow while the others are sent
          await settle(0);
          idx = this.nextGroup(m, p);
        }
        if (p.stop || idx.length === 0) break;
        p.cursor = idx[idx.length - 1] + 1;
        const gens = idx.map((i) => m.gen[i]);
        const size = s.size;
        const hashed = await Promise.all(
          idx.map((i) => this.hasher.hash(s.tmp, i * this.blockSize, m.lengthOf(i, size), true)),
        );
        this.stats.hashedBytes += hashed.reduce((n, h) => n + (h.data?.length ?? 0), 0);
        const fresh: { i: number; id: string; data: Buffer }[] = [];
        idx.forEach((i, k) => {
          // written again while it was hashed: left for later
          if (m.gen[i] !== gens[k] || this.maps.get(s) !== m) return this.hasher.release(hashed[k].data);
          m.ids[i] = hashed[k].id;
          fresh.push({ i, id: hashed[k].id, data: hashed[k].data! });
        });
        // the next group is hashed while these are sent (sent even when stopped)
        await settle(this.concurrency - 1);
        const pieces: BlockPiece[] = [];
        for (const b of fresh)
          if (m.onServer.has(b.id)) this.hasher.release(b.data);
          else pieces.push({ id: b.id, offset: 0, length: b.data.length, data: b.data });
        if (pieces.length === 0) continue;
        const group = (async () => {
          const link = await this.ask(
            repo,
            dir,
            pieces.map((b) => b.id),
          );
          await this.send(link, this.lacking(link, pieces, m), repo, m, null);
        })();
        group.catch(() => {}); // awaited by settle
        sending.push(group);
      }
      await settle(0);
    } finally {
      // a failure leaves the other groups to finish before the upload after close starts
      await Promise.allSettled(sending);
    }
  }

  /** Stops the file's pump and waits for what it is sending. */
  private async stopPump(s: FileState): Promise<void> {
    const p = this.pumps.get(s);
    if (!p) return;
    p.stop = true;
    this.pumps.delete(s);
    await p.running?.catch(() => {});
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
    if (this.off || s.size <= this.threshold || uploadsUnderTempName(baseOf(path))) return null;
    if (!(await this.plainOf(repo))) return null;
    await toDisk();
    await this.bases.get(s);
    await this.stopPump(s);
    const size = s.size;
    const m = this.map(s);
    m.resize(size);
    const time = setTimeOf(s, true);
    const dir = parentOf(path);
    const progress: BlockProgress = { toSend: 0, sent: 0, onServer: 0, blocks: m.count(size) };
    this.progress.set(s, progress);
    try {
      if (m.unverified) await this.verify(s, m, size);
      const id = await this.commitFrom(s, m, repo, dir, baseOf(path), size, progress);
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

  private async commitFrom(
    s: FileState,
    m: BlockMap,
    repo: string,
    dir: string,
    name: string,
    size: number,
    progress: BlockProgress,
  ): Promise<string> {
    const ids: (string | null)[] = m.ids.slice(0, m.count(size));
    const unknown = m.unknown().filter((i) => i < ids.length);
    // blocks without an id: hashed a group at a time; all but the last group asked about and
    // sent as they come (a recovery or a big rewrite), the last group's bytes kept for the commit's ask
    const held = new Map<string, Buffer>();
    const g = this.group();
    let prev: Promise<void> = Promise.resolve();
    for (let k = 0; k < unknown.length; k += g) {
      const idx = unknown.slice(k, k + g);
      const gens = idx.map((i) => m.gen[i]);
      const hashed = await Promise.all(
        idx.map((i) => this.hasher.hash(s.tmp, i * this.blockSize, m.lengthOf(i, size), true)),
      );
      this.stats.hashedBytes += hashed.reduce((n, h) => n + (h.data?.length ?? 0), 0);
      const pieces: BlockPiece[] = [];
      idx.forEach((i, j) => {
        ids[i] = hashed[j].id;
        if (m.gen[i] === gens[j]) m.ids[i] = hashed[j].id;
        pieces.push({ id: hashed[j].id, offset: 0, length: hashed[j].data!.length, data: hashed[j].data });
      });
      await prev;
      if (k + g >= unknown.length) {
        for (const p of pieces) held.set(p.id, p.data!);
        break;
      }
      prev = (async () => {
        const want: BlockPiece[] = [];
        for (const p of pieces)
          if (m.onServer.has(p.id)) this.hasher.release(p.data);
          else want.push(p);
        if (want.length === 0) return;
        const link = await this.ask(
          repo,
          dir,
          want.map((p) => p.id),
        );
        await this.send(link, this.lacking(link, want, m), repo, m, progress);
      })();
      prev.catch(() => {}); // awaited before the next group, and after the loop
    }
    await prev;
    const all = ids as string[];
    for (let attempt = 0; ; attempt++) {
      const link = await this.ask(repo, dir, all);
      const lacking = new Set(link.missing);
      progress.onServer = all.filter((id) => !lacking.has(id)).length;
      for (const id of all) if (!lacking.has(id)) m.onServer.add(id);
      const pieces: BlockPiece[] = [];
      const seen = new Set<string>();
      for (let i = 0; i < all.length; i++) {
        const id = all[i];
        if (!lacking.has(id) || seen.has(id)) continue;
        seen.add(id);
        const data = held.get(id);
        pieces.push(
          data
            ? { id, offset: 0, length: data.length, data }
            : { id, offset: i * this.blockSize, length: m.lengthOf(i, size), path: s.tmp },
        );
      }
      progress.toSend = pieces.reduce((n, p) => n + p.length, 0);
      this.stats.blocksSkipped += new Set(all.filter((id) => !lacking.has(id) && !m.sent.has(id))).size;
      await this.send(link, pieces, repo, m, progress);
      // the held bytes not sent go back to the hasher (send gave back those it sent)
      const sentData = new Set(pieces.map((p) => p.data));
      for (const d of held.values()) if (!sentData.has(d)) this.hasher.release(d);
      held.clear();
      try {
        const id = await this.api.commitBlocks!(link.commitUrl, {
          parentDir: dir,
          name,
          size,
          ids: all,
          replace: true,
          lastModify: s.mtime,
          repoId: repo,
        });
        this.remember(id, all);
        return id;
      } catch (e) {
        // a block went missing since the ask (garbage collection, a cut request): ask again, once;
        // the C fileserver answers a missing block with 443 (its quota check stats each block first)
        if (!(e instanceof ApiError) || (e.status !== 446 && e.status !== 443)) throw e;
        if (attempt > 0) {
          if (e.status === 446) {
            this.turnOff(`the commit of ${dir === '/' ? '' : dir}/${name} found blocks missing after they were sent`);
            throw new NoBlocks();
          }
          throw e;
        }
        m.onServer.clear();
      }
    }
  }

  private remember(fileId: string, ids: string[]): void {
    this.own.delete(fileId);
    this.own.set(fileId, [...ids]);
    if (this.own.size > 256) this.own.delete(this.own.keys().next().value!);
  }

  /**
   * Of `pieces` (asked about with `link`), those the server lacks; the
   * others are noted as on the server and their bytes given back.
   */
  private lacking(link: Link, pieces: BlockPiece[], m: BlockMap): BlockPiece[] {
    const lacking = new Set(link.missing);
    const out: BlockPiece[] = [];
    for (const p of pieces)
      if (lacking.has(p.id)) out.push(p);
      else {
        m.onServer.add(p.id);
        this.hasher.release(p.data);
      }
    return out;
  }

  /** upload-blks-link: which of `ids` the server lacks; a server without the path turns blocks off */
  private async ask(repo: string, dir: string, ids: string[]): Promise<Link> {
    if (this.off) throw new NoBlocks();
    try {
      return { ...(await this.api.blocksLink!(repo, dir, ids)), dir };
    } catch (e) {
      if (e instanceof ApiError) {
        const absent =
          e.status === 405 ||
          e.status === 501 ||
          (e.status === 404 && !/folder|library|repo/i.test(e.serverMessage)) ||
          e.kind === 'protocol';
        if (absent) {
          this.turnOff(`upload-blks-link answered ${e.status || e.kind}`);
          throw new NoBlocks();
        }
        // seahub gives block links only for plain 'rw' (not custom permissions): the whole upload may still go
        if (e.status === 403) throw new NoBlocks();
      }
      throw e;
    }
  }

  /**
   * Sends `pieces` to the link's raw URL: several per request (up to the
   * request size), `concurrency` requests at once. Blocks read from the temp
   * file are hashed again as they are read: a block written since it was
   * hashed would be refused by the server (its id is checked), so the upload
   * stops and is tried again.
   */
  private async send(
    link: Link,
    pieces: BlockPiece[],
    repo: string,
    m: BlockMap,
    progress: BlockProgress | null,
  ): Promise<void> {
    const queue = [...pieces];
    let failures = 0;
    const worker = async () => {
      while (queue.length > 0) {
        const batch: BlockPiece[] = [];
        let bytes = 0;
        while (queue.length > 0 && (batch.length === 0 || bytes + queue[0].length <= this.perRequest)) {
          const p = queue.shift()!;
          batch.push(p);
          bytes += p.length;
        }
        const ready = await Promise.all(batch.map((p) => this.bytesOf(p)));
        try {
          await this.api.uploadBlocks!(link.rawUrl, ready, { repoId: repo });
        } catch (e) {
          if (e instanceof ApiError && (e.status === 442 || e.status === 413) && batch.length > 1) {
            // larger than the server takes in one request: fewer blocks per request from now on
            this.perRequest = Math.max(this.blockSize, Math.floor(this.perRequest / 2));
            queue.unshift(...batch);
            continue;
          }
          // cut off (or failed): the server may hold some of them; ask, and send only the rest
          if (!retryable(e) || ++failures > 4) throw e;
          await sleep(Math.min(8000, 250 * 2 ** failures));
          const again = await this.ask(
            repo,
            link.dir,
            batch.map((p) => p.id),
          );
          const lacking = new Set(again.missing);
          for (const p of batch) if (!lacking.has(p.id)) m.onServer.add(p.id);
          queue.unshift(...batch.filter((p) => lacking.has(p.id)));
          continue;
        }
        for (const p of ready) {
          m.onServer.add(p.id);
          m.sent.add(p.id);
          // answered: the request holds the bytes no more
          this.hasher.release(p.data);
        }
        this.stats.blocksSent += batch.length;
        this.stats.bytesSent += bytes;
        if (progress) progress.sent += bytes;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, pieces.length) }, worker));
  }

  /** the bytes of a piece, read and checked against its id when they come from the temp file */
  private async bytesOf(p: BlockPiece): Promise<BlockPiece> {
    if (p.data) return p;
    const h = await this.hasher.hash(p.path!, p.offset, p.length, true);
    this.stats.hashedBytes += p.length;
    if (h.id !== p.id) throw new Changed('a block changed while it was uploaded');
    return { id: p.id, offset: 0, length: p.length, data: h.data };
  }
}
