// The dirty-file journal: one small JSON file per dirty file in the cache
// dir, written atomically (temp + rename) and fsync'd before close() returns,
// so that after a crash the next mount uploads what the user had written.
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface JournalEntry {
  id: string;
  repo: string;
  path: string;
  /** the local temp file holding the content */
  tmp: string;
  pid: number;
  at: number;
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
