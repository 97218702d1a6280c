// Modification times the server does not keep. Servers before seafile-server
// 12.0.4 ignore the last_modify an upload sends: a file's time is its upload's,
// so after a remount `rsync -a` sends everything again and `make` rebuilds.
// This mount then keeps the times set here (utimens: touch -d, cp -p, rsync -a,
// tar x) in its cache dir, one file per library: path -> the server's file id
// after our upload, the server's time for that version, and the time set here.
// A listing that shows the same id (and the same server time) shows the time
// set here; another id (the file was changed elsewhere) or another server time
// (the same content uploaded again elsewhere) drops the entry, so a change
// made elsewhere wins. Renames and moves through the mount carry entries
// along, deletes drop them.
//
// Which kind of server this is, is learnt once per mount from the first
// upload whose time was set more than a few seconds away from the moment of
// the upload: the next listing shows that time (kept by the server) or not
// (ignored). Until then server-info's version is the guess. Entries are kept
// until that check says the server keeps times (they are harmless there).
//
// Writes are batched (the whole library's file: written to a temp file,
// synced, renamed over the old one, mode 0600) at most once a second, less
// often for large files (the time between writes is at least 50 times what
// the last one took), and the last one is made at close. Mounts sharing the cache dir merge what another wrote
// meanwhile; an entry lost in a race only makes a file show the server's time.
import { closeSync, fsyncSync, openSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { writeSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { baseOf, isWithin, joinPath, parentOf } from '../common/paths.js';
import { processAlive } from '../common/process-alive.js';

/** where modification times live: 'server' keeps them, 'local' (this machine) when it ignores them */
export type MtimeMode = 'server' | 'local' | 'unknown';

export interface MtimeStatus {
  mode: MtimeMode;
  /** how the mode is known: checked on an upload of this mount, an earlier mount's check, or the server's version */
  basis: 'checked' | 'earlier' | 'version' | 'none';
  serverVersion?: string;
  /** files whose time this machine keeps */
  files: number;
  dir: string;
}

/** seafile-server honours last_modify from this version on */
const HONOURED_FROM = [12, 0, 4];
/** an upload whose time is this far from its moment tells the server's behaviour apart */
const PROBE_MS = 5_000;

/** Whether a server of this version ignores last_modify (undefined: not a version string). */
export function ignoresLastModify(version: string): boolean | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!m) return undefined;
  for (let i = 0; i < 3; i++) {
    const d = Number(m[i + 1]) - HONOURED_FROM[i];
    if (d !== 0) return d < 0;
  }
  return false;
}

interface Kept {
  /** the server's file id after our upload */
  id: string;
  /** the time set here (s) */
  user: number;
  /** the server's time for that version (s), once a listing showed it */
  server: number | null;
  /** when the upload was recorded (ms) */
  at: number;
  /** the upload sent the time as last_modify (so it tells whether the server keeps it) */
  sent: boolean;
}

type Row = [path: string, id: string, user: number, server: number | null, at: number, sent: 0 | 1];

interface FileSig {
  ino: number;
  size: number;
  mtimeMs: number;
}

class LibraryTimes {
  /** folder -> name -> entry */
  readonly dirs = new Map<string, Map<string, Kept>>();
  /** paths dropped since the last write (not taken back from another mount's copy of the file) */
  readonly gone = new Set<string>();
  /** the file as this process last read or wrote it */
  seen: FileSig | null = null;
  constructor(
    readonly repo: string,
    readonly file: string,
  ) {}

  get(path: string): Kept | undefined {
    return this.dirs.get(parentOf(path))?.get(baseOf(path));
  }

  set(path: string, k: Kept): void {
    const dir = parentOf(path);
    let d = this.dirs.get(dir);
    if (!d) this.dirs.set(dir, (d = new Map()));
    d.set(baseOf(path), k);
    this.gone.delete(path);
  }

  take(path: string): Kept | undefined {
    const dir = parentOf(path);
    const d = this.dirs.get(dir);
    const k = d?.get(baseOf(path));
    if (!k) return undefined;
    d!.delete(baseOf(path));
    if (d!.size === 0) this.dirs.delete(dir);
    this.gone.add(path);
    return k;
  }

  /** entries in `dir` or below it (not `dir` itself), removed */
  takeBelow(dir: string): [string, Kept][] {
    const out: [string, Kept][] = [];
    for (const [d, names] of [...this.dirs]) {
      if (!isWithin(d, dir)) continue;
      for (const [name, k] of names) {
        const p = joinPath(d, name);
        out.push([p, k]);
        this.gone.add(p);
      }
      this.dirs.delete(d);
    }
    return out;
  }

  get size(): number {
    let n = 0;
    for (const d of this.dirs.values()) n += d.size;
    return n;
  }

  rows(): Row[] {
    const out: Row[] = [];
    for (const [d, names] of this.dirs)
      for (const [name, k] of names) out.push([joinPath(d, name), k.id, k.user, k.server, k.at, k.sent ? 1 : 0]);
    return out;
  }

  /** entries of a copy of the file (this mount's earlier one, or another mount's) that this one lacks */
  adopt(rows: Row[]): void {
    for (const [path, id, user, server, at, sent] of rows) {
      if (typeof path !== 'string' || !path.startsWith('/') || typeof id !== 'string' || typeof user !== 'number')
        continue;
      if (this.gone.has(path) || this.get(path)) continue;
      this.set(path, {
        id,
        user,
        server: typeof server === 'number' ? server : null,
        at: Number(at) || 0,
        sent: !!sent,
      });
    }
  }
}

const sigOf = (st: { ino: number; size: number; mtimeMs: number }): FileSig => ({
  ino: st.ino,
  size: st.size,
  mtimeMs: st.mtimeMs,
});
const sameSig = (a: FileSig | null, b: FileSig | null) =>
  !!a && !!b && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

/** a library id as a file name (ids are UUIDs; anything else is hashed) */
const fileNameOf = (repo: string) =>
  /^[0-9A-Za-z-]{1,64}$/.test(repo) ? `${repo}.json` : `${createHash('sha256').update(repo).digest('hex')}.json`;

const MODE_FILE = 'server.json';

export class LocalMtimes {
  private readonly libs = new Map<string, LibraryTimes>();
  private mode: MtimeMode = 'unknown';
  private basis: MtimeStatus['basis'] = 'none';
  private version: string | undefined;
  private readonly dirty = new Set<string>();
  private readonly writingNow = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private seq = 0;
  private failedOnce = false;
  /** ms between writes: the base, or 50 times the last write's time when that is more */
  private gap: number;

  constructor(
    private readonly dir: string,
    private readonly o: { log: (msg: string) => void; durable?: boolean; delayMs?: number },
  ) {
    this.gap = o.delayMs ?? 1000;
  }

  /**
   * Reads the files of earlier mounts (a file that cannot be read is left
   * aside, and logged); asks the server's version in the background (the
   * guess until an upload of this mount shows how the server behaves).
   */
  async init(api?: Pick<SeafileApi, 'serverInfo'>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(this.dir)) {
      const tmp = /\.(\d+)\.\d+\.tmp$/.exec(name);
      if (tmp) {
        // a write of a process that died before its rename
        if (!processAlive(Number(tmp[1]))) unlinkSafe(join(this.dir, name));
        continue;
      }
      if (name === MODE_FILE) {
        try {
          const m = JSON.parse(readFileSync(join(this.dir, name), 'utf8')) as { mode?: string; version?: string };
          if (m.mode === 'server' || m.mode === 'local') {
            this.mode = m.mode;
            this.basis = 'earlier';
            this.version = typeof m.version === 'string' ? m.version : undefined;
          }
        } catch {
          /* re-learnt at the next check */
        }
        continue;
      }
      if (!name.endsWith('.json')) continue;
      try {
        const file = join(this.dir, name);
        const raw = JSON.parse(readFileSync(file, 'utf8')) as { repo?: unknown; files?: unknown };
        if (typeof raw.repo !== 'string' || !Array.isArray(raw.files) || fileNameOf(raw.repo) !== name) continue;
        const lib = this.lib(raw.repo);
        lib.adopt(raw.files as Row[]);
        lib.seen = sigOf(statSync(file));
      } catch (e) {
        this.o.log(
          `modification times kept in ${join(this.dir, name)} cannot be read (${(e as Error).message}); ignored`,
        );
      }
    }
    // after the earlier mounts' finding is read: the version tells whether that still holds
    void api?.serverInfo?.().then(
      (i) => this.seedVersion(String(i.version)),
      () => {},
    );
  }

  private lib(repo: string): LibraryTimes {
    let l = this.libs.get(repo);
    if (!l) this.libs.set(repo, (l = new LibraryTimes(repo, join(this.dir, fileNameOf(repo)))));
    return l;
  }

  /** server-info's version: the guess until an upload of this mount shows how the server behaves */
  seedVersion(version: string): void {
    if (this.basis === 'checked' || (this.basis === 'earlier' && this.version === version)) return;
    const ignores = ignoresLastModify(version);
    if (ignores === undefined) return;
    this.version = version;
    this.mode = ignores ? 'local' : 'server';
    this.basis = 'version';
  }

  /** checked on this mount: times are not recorded any more when the server keeps them */
  private get serverKeeps(): boolean {
    return this.mode === 'server' && this.basis === 'checked';
  }

  /**
   * A version of the file is on the server at (repo, path) with file id `id`.
   * `set`: the time set here (utimens) it carries, and whether last_modify sent
   * it; null: its time is the write's own, and an earlier entry goes.
   */
  uploaded(repo: string, path: string, id: string, set: { mtimeMs: number; sent: boolean } | null): void {
    if (!set || !id || this.serverKeeps) {
      if (this.libs.get(repo)?.take(path)) this.changed(repo);
      return;
    }
    const user = Math.floor(set.mtimeMs / 1000);
    this.lib(repo).set(path, { id, user, server: null, at: Date.now(), sent: set.sent });
    this.changed(repo);
  }

  /** A file or folder moved through the mount: its entries follow. */
  moved(fromRepo: string, from: string, toRepo: string, to: string): void {
    const src = this.libs.get(fromRepo);
    if (!src) return;
    const moving: [string, Kept][] = [];
    const own = src.take(from);
    if (own) moving.push([to, own]);
    for (const [p, k] of src.takeBelow(from)) moving.push([to + p.slice(from.length), k]);
    if (moving.length === 0) return;
    const dst = this.lib(toRepo);
    for (const [p, k] of moving) dst.set(p, k);
    this.changed(fromRepo);
    this.changed(toRepo);
  }

  /** A file or folder deleted through the mount: its entries go. */
  removed(repo: string, path: string): void {
    const lib = this.libs.get(repo);
    if (!lib) return;
    const own = lib.take(path);
    if (own || lib.takeBelow(path).length > 0) this.changed(repo);
  }

  /**
   * A folder's listing fetched from the server (a request begun at
   * `startedAt`): files whose time this machine keeps show it; entries whose
   * file changed elsewhere (or is gone) are dropped. Listings that began
   * before an entry's upload ended are not judged by (they may predate it).
   */
  adjust(repo: string, dir: string, entries: Map<string, DirEntry>, startedAt: number): void {
    const lib = this.libs.get(repo);
    const kept = lib?.dirs.get(dir);
    if (!lib || !kept) return;
    let changed = false;
    for (const [name, k] of [...kept]) {
      const e = entries.get(name);
      const judge = k.at < startedAt;
      const ours = e?.type === 'file' && e.id === k.id;
      if (!ours || (judge && k.server !== null && e.mtime !== k.server)) {
        if (judge) changed = !!lib.take(joinPath(dir, name)) || changed;
        continue;
      }
      if (judge && k.server === null) {
        this.learn(k, e.mtime);
        changed = true;
        // the server shows the very time: nothing to keep here
        if (e.mtime === k.user) {
          lib.take(joinPath(dir, name));
          continue;
        }
        k.server = e.mtime;
      }
      e.mtime = k.user;
    }
    if (changed) this.changed(repo);
  }

  /** The first listing of an upload that sent a time far from its moment tells whether the server kept it. */
  private learn(k: Kept, serverMtime: number): void {
    if (this.basis === 'checked' || !k.sent || Math.abs(k.user * 1000 - k.at) <= PROBE_MS) return;
    // the server keeps whole seconds
    const keeps = Math.abs(serverMtime - k.user) <= 1;
    this.mode = keeps ? 'server' : 'local';
    this.basis = 'checked';
    this.o.log(
      keeps
        ? 'modification times: the server keeps the times uploads send'
        : `modification times: the server ignores the times uploads send (seafile-server before 12.0.4 does); ` +
            `the times set here are kept by this machine, in ${this.dir}`,
    );
    this.writeNow(join(this.dir, MODE_FILE), JSON.stringify({ mode: this.mode, version: this.version }));
  }

  status(): MtimeStatus {
    let files = 0;
    for (const l of this.libs.values()) files += l.size;
    const out: MtimeStatus = { mode: this.mode, basis: this.basis, files, dir: this.dir };
    if (this.version) out.serverVersion = this.version;
    return out;
  }

  private changed(repo: string): void {
    this.dirty.add(repo);
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.gap);
    this.timer.unref();
  }

  /** Writes every changed library's file (one write at a time). */
  flush(): Promise<void> {
    this.chain = this.chain.then(async () => {
      for (const repo of [...this.dirty]) {
        if (this.closed) return;
        this.dirty.delete(repo);
        this.writingNow.add(repo);
        const began = Date.now();
        try {
          await this.write(repo);
          this.gap = Math.max(this.o.delayMs ?? 1000, 50 * (Date.now() - began));
        } catch (e) {
          this.dirty.add(repo);
          if (!this.failedOnce)
            this.o.log(`modification times cannot be saved in ${this.dir}: ${(e as Error).message}`);
          this.failedOnce = true;
        } finally {
          this.writingNow.delete(repo);
        }
      }
    });
    return this.chain;
  }

  /**
   * The library's entries, with those another mount wrote meanwhile (its
   * file changed since this one last read or wrote it); null: none.
   */
  private contents(lib: LibraryTimes): { text: string; gone: string[] } | null {
    let st: FileSig | null = null;
    try {
      st = sigOf(statSync(lib.file));
    } catch {
      /* none yet */
    }
    if (st && !sameSig(st, lib.seen)) {
      try {
        lib.adopt((JSON.parse(readFileSync(lib.file, 'utf8')) as { files: Row[] }).files ?? []);
      } catch {
        /* torn or foreign: this mount's entries replace it */
      }
    }
    const gone = [...lib.gone];
    const rows = lib.rows();
    return rows.length ? { text: JSON.stringify({ version: 1, repo: lib.repo, files: rows }), gone } : null;
  }

  private async write(repo: string): Promise<void> {
    const lib = this.libs.get(repo)!;
    const c = this.contents(lib);
    if (!c) {
      unlinkSafe(lib.file);
      lib.seen = null;
      lib.gone.clear();
      return;
    }
    const tmp = `${lib.file}.${process.pid}.${++this.seq}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    let st: FileSig;
    try {
      await fh.writeFile(c.text);
      if (this.o.durable !== false) await fh.datasync();
      st = sigOf(await fh.stat());
    } finally {
      await fh.close();
    }
    // close() has written the latest state meanwhile (a rename now could put an older one over it)
    if (this.closed) return unlinkSafe(tmp);
    // synchronous, so nothing else is written between the check above and the rename
    renameSync(tmp, lib.file);
    lib.seen = st;
    for (const p of c.gone) lib.gone.delete(p);
  }

  /** A small file written at once (temp file, sync, rename); failures are logged. */
  private writeNow(file: string, text: string): FileSig | null {
    const tmp = `${file}.${process.pid}.${++this.seq}.tmp`;
    try {
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, text);
        if (this.o.durable !== false) fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, file);
      return sigOf(statSync(file));
    } catch (e) {
      unlinkSafe(tmp);
      this.o.log(`modification times cannot be saved in ${file}: ${(e as Error).message}`);
      return null;
    }
  }

  /** The last write, at once: what changed since the last one (or is being written now). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const repo of new Set([...this.dirty, ...this.writingNow])) {
      const lib = this.libs.get(repo);
      if (!lib) continue;
      const c = this.contents(lib);
      if (!c) unlinkSafe(lib.file);
      else lib.seen = this.writeNow(lib.file, c.text);
    }
    this.dirty.clear();
  }
}

function unlinkSafe(p: string): void {
  try {
    unlinkSync(p);
  } catch {
    /* already gone */
  }
}
