// The dirty-file journal: one small file per dirty file in the cache dir,
// written atomically (temp + rename) before close() returns, so that after
// a crash of the mount the next mount uploads what the user had written.
// An entry is one line of JSON naming the file's place and its temp file
// (fsync'd, `durable`); for a file held in memory (local-data.ts) the line
// is followed by the file's bytes, so that one write records both, and it
// is not fsync'd: close() on a local disk does not sync either (fsync()
// uploads the file), and a sync per close cost 5-10 ms per small file here.
// After a power loss such an entry is whole or absent (its length is
// checked), never a short file. FileJournal keeps each file's journal
// writes and removals in order.
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { stateKey, type FileState } from './file-state.js';
import { processAlive } from '../process-alive.js';

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
  /** the content follows the JSON line: this many bytes (a file held in memory) */
  inline?: number;
}

/** An entry read back; `data`: the bytes an inline entry carries. */
export type RecoveredEntry = JournalEntry & { data?: Buffer };

export class Journal {
  constructor(
    readonly dir: string,
    private readonly durable = true,
  ) {}

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  private file(id: string): string {
    return join(this.dir, `${id}.json`);
  }

  /**
   * Writes the entry of a file; `data`: its content, for a file held in
   * memory. `fresh`: no entry of this id exists, so it is written in place
   * (a crash midway leaves a torn entry, which recovery ignores, and nothing
   * older to lose); otherwise beside it and renamed over it.
   */
  async write(e: JournalEntry, data?: Buffer, fresh = false): Promise<void> {
    const final = this.file(e.id);
    const tmp = fresh ? final : `${final}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      const line = Buffer.from(JSON.stringify(data ? { ...e, inline: data.length } : e) + '\n');
      if (data) await fh.writev([line, data]);
      else await fh.writeFile(line);
      if (this.durable && !data) await fh.datasync();
    } finally {
      await fh.close();
    }
    if (tmp !== final) await rename(tmp, final);
  }

  async remove(id: string): Promise<void> {
    await unlink(this.file(id)).catch(() => {});
  }

  /** Entries left behind by mount processes that are gone. */
  async orphans(): Promise<RecoveredEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out: RecoveredEntry[] = [];
    for (const n of names) {
      if (!n.endsWith('.json')) continue;
      try {
        const raw = await readFile(join(this.dir, n));
        const nl = raw.indexOf(10);
        const e = JSON.parse(raw.subarray(0, nl < 0 ? raw.length : nl).toString('utf8')) as RecoveredEntry;
        if (e.inline !== undefined) {
          const data = raw.subarray(nl + 1);
          if (nl < 0 || data.length !== e.inline) continue; // torn: written by hand or half copied
          e.data = data;
        }
        if (e.pid === process.pid || !processAlive(e.pid)) out.push(e);
      } catch {
        // a torn entry cannot name its file: ignore it
      }
    }
    return out.sort((a, b) => a.at - b.at);
  }
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
   * lives, for an entry that carries the content the version it holds, and
   * whether an entry is on disk
   */
  private readonly books = new WeakMap<
    FileState,
    { chain: Promise<void>; at: string | null; inline: number | null; exists: boolean }
  >();

  constructor(
    readonly journal: Journal,
    /** the content of a file held in memory (null: it lives in its temp file) */
    private readonly bytes: (s: FileState) => Buffer | null = () => null,
  ) {}

  private book(s: FileState) {
    let b = this.books.get(s);
    if (!b) {
      b = { chain: Promise.resolve(), at: null, inline: null, exists: false };
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

  /** Record the dirty file (before close() returns). */
  persist(s: FileState): Promise<void> {
    const b = this.book(s);
    const run = b.chain.then(async () => {
      // a file moving to its temp file: record it once it is there
      if (s.spilling) await s.spilling.catch(() => {});
      if (!s.dirty || s.deleted || this.journaled(s)) return;
      const where = stateKey(s.repo, s.path);
      const data = this.bytes(s);
      const version = s.version;
      await this.journal.write(
        {
          id: s.id,
          repo: s.repo,
          path: s.path,
          tmp: s.tmp,
          pid: process.pid,
          at: Date.now(),
          base: s.baseId,
          remote: s.remotePath,
          mtime: s.mtime,
        },
        data ?? undefined,
        !b.exists,
      );
      b.exists = true;
      b.at = where;
      b.inline = data ? version : null;
    });
    b.chain = run.catch(() => {});
    return run;
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
    const b = this.book(s);
    b.at = null;
    const run = b.chain.then(async () => {
      await this.journal.remove(s.id);
      b.exists = false;
    });
    b.chain = run.catch(() => {});
    return run;
  }
}
