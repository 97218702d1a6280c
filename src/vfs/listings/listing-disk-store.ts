// The folder listings and the library list a mount has seen, kept on disk in
// the account's cache folder (listings/), so that a mount started while the
// server is unreachable shows what an earlier one listed, and a mount started
// online asks for a folder with the id it had ("uptodate": nothing sent
// again). One small JSON file per folder (listings/<library>/<folder>.json,
// both names hashed), written whole under a temp name and renamed (small synchronous writes, batched); only
// listings as the server gave them (with their folder id) are kept, never the
// mount's local changes (the journal holds those). A file that does not parse
// or does not match its name is ignored with one log line and removed.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { DirEntry, Library } from '../../client/types.js';

export interface SavedListing {
  oid: string;
  entries: Map<string, DirEntry>;
  /** when it was taken from the server (ms) */
  savedAt: number;
}

const VERSION = 1;
const h = (s: string, n: number) => createHash('sha256').update(s).digest('hex').slice(0, n);

export class ListingStore {
  /** writes waiting, per file: the last one wins */
  private readonly queued = new Map<string, string>();
  private timer: NodeJS.Immediate | null = null;
  /** folders known to exist */
  private readonly made = new Set<string>();
  private closed = false;

  /** listings on disk, counted at the first write (null: not yet) */
  private count: number | null = null;
  private saidFull = false;

  constructor(
    private readonly dir: string,
    private readonly log: (msg: string) => void,
    /** listings kept at most (each a small file): past it only those already kept are updated */
    private readonly maxListings = 50_000,
  ) {}

  /** a listing not kept yet may be added (the count of files on disk stays under the bound) */
  private room(file: string): boolean {
    if (existsSync(file)) return true;
    this.count ??= countListings(this.dir);
    if (this.count < this.maxListings) {
      this.count++;
      return true;
    }
    if (!this.saidFull) {
      this.saidFull = true;
      this.log(`${this.maxListings} folder listings are kept in ${this.dir}; listings of further folders are not`);
    }
    return false;
  }

  private file(repo: string, dir: string): string {
    return join(this.dir, h(repo, 16), `${h(dir, 32)}.json`);
  }

  private get librariesFile(): string {
    return join(this.dir, 'libraries.json');
  }

  /** The listing saved for (repo, dir), or null: none, or unusable (logged and removed). */
  async load(repo: string, dir: string): Promise<SavedListing | null> {
    const file = this.file(repo, dir);
    const raw = await readFile(file, 'utf8').catch(() => null);
    if (raw === null) return null;
    try {
      const j = JSON.parse(raw) as Record<string, unknown>;
      if (j.v !== VERSION || j.repo !== repo || j.dir !== dir) throw new Error('not the listing of this folder');
      if (typeof j.oid !== 'string' || !j.oid || typeof j.savedAt !== 'number' || !Array.isArray(j.entries))
        throw new Error('fields missing');
      const entries = new Map<string, DirEntry>();
      for (const e of j.entries as unknown[]) {
        if (!validEntry(e)) throw new Error('an entry is malformed');
        entries.set(e.name, e);
      }
      return { oid: j.oid, entries, savedAt: j.savedAt };
    } catch (e) {
      this.log(`ignoring the saved listing of ${dir} (${file}): ${(e as Error).message}`);
      await unlink(file).catch(() => {});
      return null;
    }
  }

  /** Keep the listing of (repo, dir) as the server gave it (written in the background). */
  save(repo: string, dir: string, oid: string, entries: Iterable<DirEntry>, savedAt = Date.now()): void {
    this.put(this.file(repo, dir), JSON.stringify({ v: VERSION, repo, dir, oid, savedAt, entries: [...entries] }));
  }

  /** The folder is gone on the server: its saved listing too. */
  forget(repo: string, dir: string): void {
    const file = this.file(repo, dir);
    this.queued.delete(file);
    void unlink(file).then(
      () => {
        if (this.count !== null) this.count--;
      },
      () => {},
    );
  }

  /** The libraries the account reached when last listed (null: never saved, or unusable). */
  async loadLibraries(): Promise<Library[] | null> {
    const raw = await readFile(this.librariesFile, 'utf8').catch(() => null);
    if (raw === null) return null;
    try {
      const j = JSON.parse(raw) as { v?: unknown; libraries?: unknown };
      if (j.v !== VERSION || !Array.isArray(j.libraries)) throw new Error('fields missing');
      for (const l of j.libraries as Library[])
        if (!l || typeof l.id !== 'string' || typeof l.name !== 'string') throw new Error('a library is malformed');
      return j.libraries as Library[];
    } catch (e) {
      this.log(`ignoring the saved library list (${this.librariesFile}): ${(e as Error).message}`);
      await unlink(this.librariesFile).catch(() => {});
      return null;
    }
  }

  saveLibraries(list: Library[]): void {
    this.put(this.librariesFile, JSON.stringify({ v: VERSION, libraries: list }));
  }

  /** Writes pending now. */
  async flush(): Promise<void> {
    this.writeQueued();
  }

  /** No more listings taken; those queued are written now (nothing is written after close returns). */
  close(): void {
    this.writeQueued();
    this.closed = true;
  }

  private put(file: string, text: string): void {
    if (this.closed) return;
    this.queued.set(file, text);
    if (this.timer) return;
    this.timer = setImmediate(() => this.writeQueued());
    this.timer.unref();
  }

  /**
   * Synchronous writes of a few small files, batched after the current I/O: nothing of the store is left
   * under way on the thread pool, so an unmount (or a test removing the folder) never races with a write.
   */
  private writeQueued(): void {
    if (this.timer) clearImmediate(this.timer);
    this.timer = null;
    for (const [file, text] of this.queued) {
      this.queued.delete(file);
      const tmp = `${file}.${process.pid}.tmp`;
      try {
        if (file !== this.librariesFile && !this.room(file)) continue;
        const dir = join(file, '..');
        if (!this.made.has(dir)) {
          mkdirSync(dir, { recursive: true, mode: 0o700 });
          this.made.add(dir);
        }
        writeFileSync(tmp, text, { mode: 0o600 });
        renameSync(tmp, file);
      } catch (e) {
        this.made.clear();
        rmSync(tmp, { force: true });
        // a full or removed cache folder: the listing is only not kept
        this.log(`cannot keep the listing in ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
    }
  }
}

/** the listing files under `dir` (one folder per library) */
function countListings(dir: string): number {
  let n = 0;
  try {
    for (const d of readdirSync(dir, { withFileTypes: true }))
      if (d.isDirectory()) n += readdirSync(join(dir, d.name)).filter((f) => f.endsWith('.json')).length;
  } catch {
    // none yet
  }
  return n;
}

function validEntry(e: unknown): e is DirEntry {
  if (!e || typeof e !== 'object') return false;
  const x = e as Record<string, unknown>;
  return (
    (x.type === 'file' || x.type === 'dir') &&
    typeof x.name === 'string' &&
    x.name !== '' &&
    !x.name.includes('/') &&
    typeof x.id === 'string' &&
    typeof x.mtime === 'number' &&
    (x.size === undefined || typeof x.size === 'number')
  );
}
