// The dirty-file journal: what a crash of the mount must not lose, so that
// the next mount uploads what the user had written. Entries are appended to
// one segment file per mount process (journal/seg-<time>-<pid>-<n>.log) with
// one synchronous write each, before close() returns: a put record (one line
// of JSON naming the file's place and its temp file, followed, for a file
// held in memory (local-data.ts), by the file's bytes) or a del record once
// the file is on the server. The write lands in the page cache, which a
// kill -9 of the mount does not lose; it costs tens of microseconds where a
// file per entry (open, write, close, later unlink, each a thread-pool round
// trip) cost 2 ms of every small file's close. An entry that names a temp
// file is fsync'd (`durable`) before the call returns; one that carries its
// bytes is not: close() on a local disk does not sync either (fsync()
// uploads the file).
//
// A record is whole or ignored: a torn tail (the process died mid-write, or
// power was lost) fails its JSON, its length or its checksum, and reading
// stops there. A write that fails is cut off again before the next one.
// A segment that outgrows `segmentBytes` is left for a fresh one and
// removed once nothing in it is live (a del record is appended beside the
// put it cancels); the few live records of a segment that holds little are
// copied forward, so a record is rarely copied at all. Segments of
// processes that are gone are read at the next mount (the last record of an
// id wins, in segment order), their entries taken over, and removed once
// nothing in them is still wanted.
// Entries of older versions (journal/<id>.json, one file per entry) are read
// too. FileJournal keeps each file's journal writes and removals in order.
import { closeSync, fdatasync, ftruncateSync, openSync, readSync, writevSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { stateKey, type FileState } from './file-state.js';
import { processAlive } from '../common/process-alive.js';

export interface JournalEntry {
  id: string;
  repo: string;
  path: string;
  /** the local temp file holding the content */
  tmp: string;
  pid: number;
  at: number;
  /** the server's id of the version the local data started from (the conflict check's base) */
  base?: string | null;
  /** where the server copy lives (null: none yet) */
  remote?: string | null;
  /** the local modification time (ms) */
  mtime?: number;
  /** that time was set by utimens (touch -d, tar x), not the last write's */
  timeSet?: boolean;
  /** the content follows the JSON line: this many bytes (a file held in memory) */
  inline?: number;
  /** a folder made in the mount, to create on the server (pending-folders.ts); `tmp` is empty */
  dir?: boolean;
}

/** An entry read back; `data`: the bytes an inline entry carries. */
export type RecoveredEntry = JournalEntry & { data?: Buffer };

/** a put record's line also carries the checksum of its bytes; a del record is {"del": id} */
type PutLine = JournalEntry & { crc?: number };

const SEGMENT = /^seg-(\d{14})-(\d+)-(\d+)\.log$/;

/** segment file names in the order they were started */
function segmentsIn(names: string[]): { name: string; pid: number }[] {
  return (
    names
      .map((name) => ({ name, m: SEGMENT.exec(name) }))
      .filter((x): x is { name: string; m: RegExpExecArray } => x.m !== null)
      // 14 digits of time: compared as numbers (no locale collation, which also pulls ICU data into memory)
      .sort(
        (a, b) => Number(a.m[1]) - Number(b.m[1]) || Number(a.m[2]) - Number(b.m[2]) || Number(a.m[3]) - Number(b.m[3]),
      )
      .map(({ name, m }) => ({ name, pid: Number(m[2]) }))
  );
}
const LEGACY = /\.json$/;

/** segments some Journal of this process appends to: never taken as another mount's leftovers */
const appending = new Set<string>();

/** A segment file being appended to: where each live entry's record lies. */
class Segment {
  size = 0;
  liveBytes = 0;
  /** `time`: a time record appended after the put (copied forward with it) */
  readonly live = new Map<string, { off: number; len: number; time?: Buffer }>();
  /** fdatasync calls in flight on `fd` (it is closed only after them) */
  syncing = 0;
  /** the segment its live records are being copied to (synced before this one is removed) */
  successor: Segment | null = null;
  private idle: (() => void)[] = [];
  constructor(
    readonly path: string,
    readonly fd: number,
  ) {}

  /** resolves once no fdatasync runs on the fd */
  quiet(): Promise<void> {
    return this.syncing === 0 ? Promise.resolve() : new Promise((r) => this.idle.push(r));
  }

  synced(): void {
    if (--this.syncing === 0) for (const r of this.idle.splice(0)) r();
  }
}

/** a record read back: an entry, its removal, or a new modification time of an entry */
export type SegmentRecord = { put: RecoveredEntry } | { del: string } | { time: string; mtime: number };

/** Records of one segment file's bytes, in order, up to the first one that is not whole. */
export function parseSegment(raw: Buffer): SegmentRecord[] {
  const out: SegmentRecord[] = [];
  let pos = 0;
  while (pos < raw.length) {
    const nl = raw.indexOf(10, pos);
    if (nl < 0) break;
    let line: PutLine & { del?: string; time?: string };
    try {
      line = JSON.parse(raw.subarray(pos, nl).toString('utf8'));
    } catch {
      break;
    }
    if (!line || typeof line !== 'object') break;
    pos = nl + 1;
    if (typeof line.del === 'string') {
      out.push({ del: line.del });
      continue;
    }
    if (typeof line.time === 'string') {
      if (typeof line.mtime !== 'number') break;
      out.push({ time: line.time, mtime: line.mtime });
      continue;
    }
    const { crc, ...e } = line;
    if (typeof e.id !== 'string') break;
    if (e.inline !== undefined) {
      if (!(e.inline >= 0) || pos + e.inline > raw.length) break;
      const data = raw.subarray(pos, pos + e.inline);
      if (crc !== crc32(data)) break;
      pos += e.inline;
      out.push({ put: { ...e, data } });
    } else out.push({ put: e });
  }
  return out;
}

/** what recovery took over from the segments (and entry files) of mounts that are gone */
interface Adopted {
  /** per segment: the ids whose last record it holds, and whether each is still wanted */
  segments: Map<string, Map<string, { wanted: boolean; rec: Buffer }>>;
  /** ids recovered from entry files of older versions */
  legacy: Set<string>;
}

export class Journal {
  /** the segment appended to (null: none yet, or the last one emptied) */
  private seg: Segment | null = null;
  /** earlier segments of this journal that still hold live entries */
  private older = new Set<Segment>();
  /** where each live entry's last record lies */
  private where = new Map<string, Segment>();
  private seq = 0;
  /** closed: nothing is written any more (what the mount left is the next mount's) */
  private closed = false;
  private adopted: Adopted = { segments: new Map(), legacy: new Set() };

  constructor(
    readonly dir: string,
    private readonly durable = true,
    /** a segment larger than this is left for a fresh one (and removed once nothing in it is live) */
    private readonly segmentBytes = 32 * 1024 * 1024,
  ) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  private open(): Segment {
    const name = `seg-${String(Date.now()).padStart(14, '0')}-${process.pid}-${++this.seq}.log`;
    const path = join(this.dir, name);
    // read too: the live records of a segment that holds little are copied forward (leave)
    const seg = new Segment(path, openSync(path, 'wx+'));
    appending.add(path);
    return seg;
  }

  /** Appends `parts` as one record at the end of `seg`; a failed write is cut off again (or the segment left). */
  private append(seg: Segment, parts: Buffer[]): { off: number; len: number } {
    const off = seg.size;
    const len = parts.reduce((n, b) => n + b.length, 0);
    let done = 0;
    try {
      while (done < len) {
        let skip = done;
        const rest: Buffer[] = [];
        for (const b of parts) {
          if (skip >= b.length) {
            skip -= b.length;
            continue;
          }
          rest.push(skip ? b.subarray(skip) : b);
          skip = 0;
        }
        const n = writevSync(seg.fd, rest, off + done);
        if (n <= 0) throw new Error(`journal: a write of ${len - done} bytes wrote nothing`);
        done += n;
      }
    } catch (e) {
      try {
        if (done > 0) ftruncateSync(seg.fd, off);
      } catch {
        // the torn record stays: nothing may follow it, so the segment takes no more records
        seg.size = Infinity;
        if (this.seg === seg) this.leave(seg);
      }
      throw e;
    }
    seg.size += len;
    return { off, len };
  }

  private current(): Segment {
    if (this.closed) throw new Error('the journal is closed');
    return (this.seg ??= this.open());
  }

  /** records `at` in `seg` as the live entry `id`, in place of its earlier record */
  private place(id: string, seg: Segment, at: { off: number; len: number }): void {
    const prev = this.where.get(id);
    const was = seg.live.get(id);
    if (was)
      seg.liveBytes -= was.len; // its earlier record in the same segment
    else if (prev) this.drop(prev, id);
    seg.live.set(id, at);
    seg.liveBytes += at.len;
    this.where.set(id, seg);
  }

  /** `id` is no longer live in `seg`; a segment left with nothing live goes */
  private drop(seg: Segment, id: string): void {
    const at = seg.live.get(id);
    if (!at) return;
    seg.live.delete(id);
    seg.liveBytes -= at.len;
    if (this.where.get(id) === seg) this.where.delete(id);
    if (seg.live.size > 0) return;
    if (this.seg === seg) this.seg = null;
    this.older.delete(seg);
    this.retire(seg, seg.successor);
  }

  /**
   * Appends the entry of a file; `data`: its content, for a file held in
   * memory. The record is in the segment when this returns (a thrown error:
   * it is not); the promise resolves once it is also synced, if it must be.
   */
  write(e: JournalEntry, data?: Buffer): Promise<void> {
    let seg: Segment;
    try {
      seg = this.writeNow(e, data);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.durable && !data ? this.sync(seg) : Promise.resolve();
  }

  /** whether an entry without bytes must be synced before it counts (then `write` it) */
  get syncs(): boolean {
    return this.durable;
  }

  /** Appends the entry (throws when it could not); returns the segment, for a sync. */
  writeNow(e: JournalEntry, data?: Buffer): Segment {
    const seg = this.current();
    const line: PutLine = data ? { ...e, inline: data.length, crc: crc32(data) } : e;
    const head = Buffer.from(JSON.stringify(line) + '\n');
    this.place(e.id, seg, this.append(seg, data ? [head, data] : [head]));
    this.settled(e.id);
    if (seg.size >= this.segmentBytes && this.seg === seg) this.leave(seg);
    return seg;
  }

  /**
   * A new modification time of the live entry `id` (tar sets it after the
   * bytes): a small record after its put in the same segment, instead of
   * the whole entry again with its bytes. Not synced: a time is not worth
   * a sync (as close() of a file in memory). False when there is no live
   * entry to amend (write the entry instead).
   */
  touch(id: string, mtime: number): boolean {
    const seg = this.where.get(id);
    const at = seg?.live.get(id);
    if (!seg || !at || seg.size === Infinity || this.closed) return false;
    const rec = Buffer.from(JSON.stringify({ time: id, mtime }) + '\n');
    try {
      this.append(seg, [rec]);
    } catch {
      return false;
    }
    at.time = rec;
    return true;
  }

  private sync(seg: Segment): Promise<void> {
    seg.syncing++;
    return new Promise<void>((resolve, reject) =>
      fdatasync(seg.fd, (err) => {
        seg.synced();
        if (err) reject(err);
        else resolve();
      }),
    );
  }

  /** The file is on the server (or gone): its entry is dropped (a del record beside its put). */
  remove(id: string): Promise<void> {
    this.settled(id);
    const seg = this.where.get(id);
    if (!seg) return Promise.resolve();
    try {
      if (seg.size !== Infinity) this.append(seg, [Buffer.from(JSON.stringify({ del: id }) + '\n')]);
    } catch (err) {
      return Promise.reject(err);
    }
    this.drop(seg, id);
    return Promise.resolve();
  }

  /**
   * The current segment is full (or broken): later records go to a fresh
   * one. It stays until nothing in it is live; the live records of earlier
   * segments that hold little are copied to the fresh one, so that a few
   * entries that wait long (offline) do not keep many segments.
   */
  private leave(seg: Segment): void {
    this.seg = null;
    if (seg.live.size === 0) return this.retire(seg, null);
    this.older.add(seg);
    const small = [...this.older].filter((o) => o.liveBytes <= 4 * 1024 * 1024 && o.liveBytes * 4 <= o.size);
    if (small.length === 0 || this.closed) return;
    let next: Segment;
    try {
      next = this.current();
      for (const o of small) {
        // the last copy empties it: it goes once `next` is synced
        o.successor = next;
        for (const [id, r] of [...o.live]) {
          const buf = Buffer.allocUnsafe(r.len);
          readSync(o.fd, buf, 0, r.len, r.off);
          const time = r.time;
          this.place(id, next, this.append(next, [buf]));
          if (time) {
            this.append(next, [time]);
            next.live.get(id)!.time = time;
          }
        }
      }
    } catch {
      // what was not copied stays where it is
    }
  }

  /**
   * Closes and removes a segment with nothing live in it, once `successor`
   * (holding copies of its live records) is synced if records had to be.
   */
  private retire(seg: Segment, successor: Segment | null): void {
    void (async () => {
      if (successor && this.durable) await this.sync(successor).catch(() => {});
      await seg.quiet();
      closeSync(seg.fd);
      await unlink(seg.path).catch(() => {});
      appending.delete(seg.path);
    })();
  }

  /** Stops appending: empty segments are removed, those with live entries are left for the next mount. */
  close(): void {
    this.closed = true;
    const all = [...this.older, ...(this.seg ? [this.seg] : [])];
    this.seg = null;
    this.older.clear();
    this.where.clear();
    for (const seg of all) {
      if (seg.live.size === 0) {
        this.retire(seg, null);
        continue;
      }
      const done = () => {
        closeSync(seg.fd);
        appending.delete(seg.path);
      };
      if (seg.syncing === 0) done();
      else void seg.quiet().then(done);
    }
  }

  /** an entry recovery took over is recorded by this journal now, or dropped */
  private settled(id: string): void {
    for (const ids of this.adopted.segments.values()) {
      const a = ids.get(id);
      if (a) a.wanted = false;
    }
    // an entry file of an older version: superseded by the record just written, or dropped
    if (this.adopted.legacy.delete(id)) void unlink(join(this.dir, `${id}.json`)).catch(() => {});
  }

  /**
   * Entries left behind by mount processes that are gone (or by a journal of
   * this process that is closed), oldest first. Whatever recovery does not
   * write again or remove stays for a later mount (`settleRecovery`).
   */
  async orphans(): Promise<RecoveredEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const latest = new Map<string, { e: RecoveredEntry; seg: string | null; rec: Buffer | null }>();
    const segs = segmentsIn(names).filter(
      ({ name, pid }) => !appending.has(join(this.dir, name)) && (pid === process.pid || !processAlive(pid)),
    );
    // entry files of older versions come first: a segment's record of the same id is newer
    for (const n of names) {
      if (!LEGACY.test(n)) continue;
      try {
        const raw = await readFile(join(this.dir, n));
        const nl = raw.indexOf(10);
        const e = JSON.parse(raw.subarray(0, nl < 0 ? raw.length : nl).toString('utf8')) as RecoveredEntry;
        if (e.inline !== undefined) {
          const data = raw.subarray(nl + 1);
          if (nl < 0 || data.length !== e.inline) continue; // torn: written by hand or half copied
          e.data = data;
        }
        if (e.pid === process.pid || !processAlive(e.pid)) latest.set(e.id, { e, seg: null, rec: null });
      } catch {
        // a torn entry cannot name its file: ignore it
      }
    }
    for (const { name: n } of segs) {
      let raw: Buffer;
      try {
        raw = await readFile(join(this.dir, n));
      } catch {
        continue;
      }
      this.adopted.segments.set(n, new Map());
      for (const r of parseSegment(raw)) {
        if ('del' in r) latest.delete(r.del);
        else if ('time' in r) applyTime(latest.get(r.time)?.e, r.mtime);
        else latest.set(r.put.id, { e: r.put, seg: n, rec: null });
      }
    }
    const out: RecoveredEntry[] = [];
    for (const [id, { e, seg }] of latest) {
      if (seg === null) this.adopted.legacy.add(id);
      else this.adopted.segments.get(seg)!.set(id, { wanted: true, rec: recordOf(e) });
      out.push(e);
    }
    return out.sort((a, b) => a.at - b.at);
  }

  /**
   * After recovery: a leftover segment whose entries were all taken over is
   * removed; one that still holds wanted entries (another library's) is
   * rewritten with those only, under its own name, for a later mount.
   */
  async settleRecovery(): Promise<void> {
    const segs = this.adopted.segments;
    this.adopted.segments = new Map();
    for (const [name, ids] of segs) {
      const path = join(this.dir, name);
      const keep = [...ids.values()].filter((a) => a.wanted).map((a) => a.rec);
      try {
        if (keep.length === 0) await unlink(path);
        else {
          await writeFile(`${path}.tmp`, Buffer.concat(keep));
          await rename(`${path}.tmp`, path);
        }
      } catch {
        // left as it is: a later recovery reads it again
      }
    }
  }

  /** Every live entry of this journal's directory, whoever wrote it (for tests and diagnostics). */
  async entries(): Promise<RecoveredEntry[]> {
    const live = new Map<string, RecoveredEntry>();
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    for (const { name: n } of segmentsIn(names)) {
      const raw = await readFile(join(this.dir, n)).catch(() => Buffer.alloc(0));
      for (const r of parseSegment(raw)) {
        if ('del' in r) live.delete(r.del);
        else if ('time' in r) applyTime(live.get(r.time), r.mtime);
        else live.set(r.put.id, r.put);
      }
    }
    return [...live.values()];
  }
}

/** a time record read back changes the entry written before it (none: its put was not whole, or removed) */
function applyTime(e: RecoveredEntry | undefined, mtime: number): void {
  if (!e) return;
  e.mtime = mtime;
  e.timeSet = true; // time records are written by utimens only
}

/** the record of an entry read back (to write it again as it was) */
function recordOf(e: RecoveredEntry): Buffer {
  const { data, ...rest } = e;
  const line: PutLine = data ? { ...rest, inline: data.length, crc: crc32(data) } : rest;
  const head = Buffer.from(JSON.stringify(line) + '\n');
  return data ? Buffer.concat([head, data]) : head;
}

/**
 * The journal as the write path uses it: the entry of a dirty file is
 * written once per place (repo, path) it lives at, and the writes and
 * removals of one file run in order. The first write starts as soon as the
 * file becomes dirty, so close() rarely has to wait for it.
 */
export class FileJournal {
  /**
   * per file: the chain of its journal operations, where its entry says it
   * lives, and for an entry that carries the content the version it holds
   */
  private readonly books = new WeakMap<
    FileState,
    { chain: Promise<void>; busy: number; at: string | null; inline: number | null }
  >();

  constructor(
    readonly journal: Journal,
    /** the content of a file held in memory (null: it lives in its temp file) */
    private readonly bytes: (s: FileState) => Buffer | null = () => null,
  ) {}

  private book(s: FileState) {
    let b = this.books.get(s);
    if (!b) {
      b = { chain: Promise.resolve(), busy: 0, at: null, inline: null };
      this.books.set(s, b);
    }
    return b;
  }

  /** whether the entry of `s` names its current place (and, in memory, holds its current content) */
  journaled(s: FileState): boolean {
    const b = this.books.get(s);
    if (b?.at !== stateKey(s.repo, s.path)) return false;
    return s.mem === null ? b.inline === null : b.inline === s.version;
  }

  private entry(s: FileState): JournalEntry {
    return {
      id: s.id,
      repo: s.repo,
      path: s.path,
      tmp: s.tmp,
      pid: process.pid,
      at: Date.now(),
      base: s.baseId,
      remote: s.remotePath,
      mtime: s.mtime,
      ...(s.timeSet ? { timeSet: true } : {}),
    };
  }

  /** runs `op` after the file's earlier journal operations */
  private chained(s: FileState, op: () => Promise<void>): Promise<void> {
    const b = this.book(s);
    b.busy++;
    const run = b.chain.then(op).finally(() => b.busy--);
    b.chain = run.catch(() => {});
    return run;
  }

  /** Record the dirty file (before close() returns). */
  persist(s: FileState): Promise<void> {
    const b = this.book(s);
    return this.chained(s, async () => {
      // a file moving to its temp file: record it once it is there
      if (s.spilling) await s.spilling.catch(() => {});
      if (!s.dirty || s.deleted || this.journaled(s)) return;
      const where = stateKey(s.repo, s.path);
      const data = this.bytes(s);
      const version = s.version;
      await this.journal.write(this.entry(s), data ?? undefined);
      b.at = where;
      b.inline = data ? version : null;
    });
  }

  /**
   * persist, done at once when nothing of the file's journal is under way
   * and no sync is needed (the close of a small file in memory, or one
   * already recorded). Returns false when it did nothing: persist must run.
   */
  persistNow(s: FileState): boolean {
    const b = this.book(s);
    if (b.busy > 0 || s.spilling) return false;
    if (!s.dirty || s.deleted || this.journaled(s)) return true;
    const data = this.bytes(s);
    if (!data && this.journal.syncs) return false;
    try {
      this.journal.writeNow(this.entry(s), data ?? undefined);
    } catch {
      return false; // persist tries again and reports it
    }
    b.at = stateKey(s.repo, s.path);
    b.inline = data ? s.version : null;
    return true;
  }

  /**
   * The file's time was set (utimens, after `before`, its version until
   * then): an entry that is otherwise current is amended with a time record
   * rather than written again with its bytes (tar sets every file's time
   * after its bytes). Otherwise nothing: the next persist writes the time.
   */
  timeChanged(s: FileState, before: number): void {
    const b = this.books.get(s);
    if (!b || b.busy > 0 || s.spilling || s.deleted || b.at !== stateKey(s.repo, s.path)) return;
    if (s.mem !== null ? b.inline !== before : b.inline !== null) return;
    if (!this.journal.touch(s.id, s.mtime)) return;
    if (s.mem !== null) b.inline = s.version;
  }

  /** start journaling early, without waiting (errors surface at flush) */
  persistSoon(s: FileState): void {
    // a file in memory is recorded at close, with its content
    if (!this.books.get(s)?.at && !s.deleted && s.mem === null) this.persist(s).catch(() => {});
  }

  /** The file moved: its entry is rewritten with the new place. */
  moved(s: FileState): Promise<void> {
    this.book(s).at = null;
    return this.persist(s);
  }

  /** The file is on the server (or gone): drop its entry. */
  forget(s: FileState): Promise<void> {
    this.book(s).at = null;
    return this.chained(s, () => this.journal.remove(s.id));
  }
}
