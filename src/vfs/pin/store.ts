// Where pins outlive the mount: one file per library in the account's cache
// folder (pins/<library id>.json), beside the blocks they keep: the folders
// and files pinned (with the folder id last seen, to ask for a tree only when
// it changed) and every file they hold (path, file id, size). The files'
// ids are what the disk cache must not evict, for every mount of the account
// (each reads the others' files), and what a mount that starts again
// downloads on from where the last one stopped. Written whole to a temp file,
// synced and renamed over the old one: a kill -9 leaves the old or the new.
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

export interface PinnedFile {
  id: string;
  size: number;
}

export interface LibraryPins {
  repo: string;
  /** pinned paths: folders (recursively) and files; `oid` the folder's id as last listed (a file's: its parent's) */
  roots: Map<string, { oid: string | null }>;
  /** every file the roots hold */
  files: Map<string, PinnedFile>;
}

interface Stored {
  v: 1;
  repo: string;
  roots: { path: string; oid: string | null }[];
  /** [path, id, size] */
  files: [string, string, number][];
}

const REPO = /^[0-9a-f-]{36}$/;

export class PinStore {
  /** others' files as last read: name -> mtime and content */
  private readonly seen = new Map<string, { mtimeMs: number; pins: LibraryPins }>();

  constructor(
    readonly dir: string,
    private readonly durable = true,
  ) {}

  private fileOf(repo: string): string {
    return join(this.dir, `${repo}.json`);
  }

  /** Every library's pins in the folder (a file that does not parse is left out, and said once). */
  async readAll(onBad: (file: string, e: unknown) => void = () => {}): Promise<Map<string, LibraryPins>> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const out = new Map<string, LibraryPins>();
    for (const n of await readdir(this.dir)) {
      const m = /^(.+)\.json$/.exec(n);
      if (!m || !REPO.test(m[1])) continue;
      const file = join(this.dir, n);
      const st = await stat(file).catch(() => null);
      if (!st) continue;
      const held = this.seen.get(n);
      if (held && held.mtimeMs === st.mtimeMs) {
        out.set(m[1], held.pins);
        continue;
      }
      try {
        const pins = parse(await readFile(file, 'utf8'));
        this.seen.set(n, { mtimeMs: st.mtimeMs, pins });
        out.set(pins.repo, pins);
      } catch (e) {
        onBad(file, e);
      }
    }
    return out;
  }

  /** Writes a library's pins (removes its file when nothing is pinned). */
  async save(p: LibraryPins): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.fileOf(p.repo);
    if (p.roots.size === 0) {
      await unlink(file).catch(() => {});
      return;
    }
    const data: Stored = {
      v: 1,
      repo: p.repo,
      roots: [...p.roots].map(([path, r]) => ({ path, oid: r.oid })),
      files: [...p.files].map(([path, f]) => [path, f.id, f.size]),
    };
    const tmp = `${file}.tmp-${process.pid}`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(data));
      if (this.durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  }
}

function parse(text: string): LibraryPins {
  const d = JSON.parse(text) as Stored;
  if (d.v !== 1 || typeof d.repo !== 'string' || !Array.isArray(d.roots) || !Array.isArray(d.files))
    throw new Error('not a pin file of this version');
  const roots = new Map<string, { oid: string | null }>();
  for (const r of d.roots) if (typeof r.path === 'string') roots.set(r.path, { oid: r.oid ?? null });
  const files = new Map<string, PinnedFile>();
  for (const f of d.files)
    if (Array.isArray(f) && typeof f[0] === 'string' && typeof f[1] === 'string' && Number.isFinite(f[2]))
      files.set(f[0], { id: f[1], size: f[2] });
  return { repo: d.repo, roots, files };
}
