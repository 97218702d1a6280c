// The folder listings and the library list a mount has seen, kept on disk in
// the account's cache folder (listings/), so that a mount started while the
// server is unreachable shows what an earlier one listed, and a mount started
// online asks for a folder with the id it had ("uptodate": nothing sent
// again). One small JSON file per folder (listings/<library>/<folder>.json,
// both names hashed), written whole under a temp name and renamed; only
// listings as the server gave them (with their folder id) are kept, never the
// mount's local changes (the journal holds those). A file that does not parse
// or does not match its name is ignored with one log line and removed.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DirEntry, Library } from '../client/types.js';

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
  private writing: Promise<void> | null = null;
  private seq = 0;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly log: (msg: string) => void,
  ) {}

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
    void unlink(file).catch(() => {});
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

  /** Writes pending now (tests; the unmount). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** No more listings taken (those queued are still written; flush() waits for them). */
  close(): void {
    this.closed = true;
  }

  private put(file: string, text: string): void {
    if (this.closed) return;
    this.queued.set(file, text);
    this.writing ??= this.drain().finally(() => (this.writing = null));
  }

  /** one write at a time: a listing is small, and a walk of many folders must not take every thread */
  private async drain(): Promise<void> {
    for (const [file, text] of this.queued) {
      this.queued.delete(file);
      const tmp = `${file}.${process.pid}.${++this.seq}.tmp`;
      try {
        await mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
        await writeFile(tmp, text, { mode: 0o600 });
        await rename(tmp, file);
      } catch (e) {
        await rm(tmp, { force: true }).catch(() => {});
        // a full or removed cache folder: the listing is only not kept
        this.log(`cannot keep the listing in ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
    }
  }
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
