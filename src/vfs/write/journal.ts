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
// too. FileJournal (file-journal.ts) keeps each file's journal writes and
// removals in order; journal-records.ts reads and writes the records.
import { closeSync, fdatasync, ftruncateSync, openSync, readSync, writevSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import {
  applyTime,
  parseSegment,
  recordOf,
  segmentsIn,
  type JournalEntry,
  type PutLine,
  type RecoveredEntry,
} from './journal-records.js';
import { processAlive } from '../common/process-alive.js';

export type { JournalEntry, RecoveredEntry } from './journal-records.js';

export type { SegmentRecord } from './journal-records.js';
export { parseSegment } from './journal-records.js';

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
