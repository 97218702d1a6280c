// The journal's records as bytes: a put record is one line of JSON (the
// entry, with the checksum of the bytes an inline entry carries after it), a
// del record {"del": id}, a time record {"time": id, "mtime": ms}; segment
// files are named seg-<time>-<pid>-<n>.log. Reading stops at the first
// record that is not whole (a crash cut it short).
import { crc32 } from 'node:zlib';

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
export type PutLine = JournalEntry & { crc?: number };

const SEGMENT = /^seg-(\d{14})-(\d+)-(\d+)\.log$/;

/** segment file names in the order they were started */
export function segmentsIn(names: string[]): { name: string; pid: number }[] {
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

/** a time record read back changes the entry written before it (none: its put was not whole, or removed) */
export function applyTime(e: RecoveredEntry | undefined, mtime: number): void {
  if (!e) return;
  e.mtime = mtime;
  e.timeSet = true; // time records are written by utimens only
}

/** the record of an entry read back (to write it again as it was) */
export function recordOf(e: RecoveredEntry): Buffer {
  const { data, ...rest } = e;
  const line: PutLine = data ? { ...rest, inline: data.length, crc: crc32(data) } : rest;
  const head = Buffer.from(JSON.stringify(line) + '\n');
  return data ? Buffer.concat([head, data]) : head;
}
