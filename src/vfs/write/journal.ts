// The dirty-file journal: one small JSON file per dirty file in the cache
// dir, written atomically (temp + rename) and fsync'd before close() returns,
// so that after a crash the next mount uploads what the user had written.
// FileJournal keeps each file's journal writes and removals in order.
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { stateKey, type FileState } from './file-state.js';

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
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

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

  async write(e: JournalEntry): Promise<void> {
    const final = this.file(e.id);
    const tmp = `${final}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(e));
      if (this.durable) await fh.datasync();
    } finally {
      await fh.close();
    }
    await rename(tmp, final);
  }

  async remove(id: string): Promise<void> {
    await unlink(this.file(id)).catch(() => {});
  }

  /** Entries left behind by mount processes that are gone. */
  async orphans(): Promise<JournalEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return [];
    }
    const out: JournalEntry[] = [];
    for (const n of names) {
      if (!n.endsWith('.json')) continue;
      try {
        const e = JSON.parse(await readFile(join(this.dir, n), 'utf8')) as JournalEntry;
        if (e.pid === process.pid || !alive(e.pid)) out.push(e);
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
  /** per file: the chain of its journal operations, and where its entry says it lives */
  private readonly books = new WeakMap<FileState, { chain: Promise<void>; at: string | null }>();

  constructor(readonly journal: Journal) {}

  private book(s: FileState): { chain: Promise<void>; at: string | null } {
    let b = this.books.get(s);
    if (!b) {
      b = { chain: Promise.resolve(), at: null };
      this.books.set(s, b);
    }
    return b;
  }

  /** whether the entry of `s` names its current place */
  journaled(s: FileState): boolean {
    return this.books.get(s)?.at === stateKey(s.repo, s.path);
  }

  /** Record the dirty file (before close() returns). */
  persist(s: FileState): Promise<void> {
    const b = this.book(s);
    const run = b.chain.then(async () => {
      const where = stateKey(s.repo, s.path);
      if (!s.dirty || s.deleted || b.at === where) return;
      await this.journal.write({
        id: s.id,
        repo: s.repo,
        path: s.path,
        tmp: s.tmp,
        pid: process.pid,
        at: Date.now(),
        base: s.baseId,
        remote: s.remotePath,
        mtime: s.mtime,
      });
      b.at = where;
    });
    b.chain = run.catch(() => {});
    return run;
  }

  /** start journaling early, without waiting (errors surface at flush) */
  persistSoon(s: FileState): void {
    if (!this.books.get(s)?.at && !s.deleted) this.persist(s).catch(() => {});
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
    const run = b.chain.then(() => this.journal.remove(s.id));
    b.chain = run.catch(() => {});
    return run;
  }
}
