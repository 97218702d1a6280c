// The journal as the write path uses it (journal.ts is the file format and
// its segments): one entry per place a dirty file lives, its writes and
// removals in order, started as soon as the file becomes dirty.
import { stateKey, type FileState } from './file-state.js';
import type { Journal, JournalEntry } from './journal.js';
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
