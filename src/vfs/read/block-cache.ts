// A bounded on-disk cache of downloaded chunks, so that data the kernel and
// the in-memory chunks have let go of is read again from local disk rather
// than the network. One sparse file per file version (content id), an
// in-memory index of the chunks present, whole versions evicted least
// recently used first. Writes are fire-and-forget: a failure only means a
// later miss. The cache starts empty with every mount.
import { createHash } from 'node:crypto';
import { mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';

interface Entry {
  fh: Promise<FileHandle>;
  present: Set<number>;
  writing: Set<number>;
  bytes: number;
  used: number;
  dead: boolean;
}

export class BlockCache {
  readonly stats = { hits: 0, writes: 0, evictions: 0, skipped: 0 };
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  private clock = 0;
  private writesInFlight = 0;
  private queuedBytes = 0;

  constructor(
    private readonly dir: string,
    private readonly chunk: number,
    private readonly maxBytes: number,
    /** bytes of chunk writes allowed to wait for the disk at once */
    private readonly maxQueuedBytes = 16 * 1024 * 1024,
  ) {}

  /** `dir` is this process' own folder (named after its pid); folders of dead processes go */
  async init(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
    await mkdir(this.dir, { recursive: true });
    const parent = dirname(this.dir);
    for (const n of await readdir(parent).catch(() => [] as string[])) {
      const pid = Number(n);
      if (!Number.isInteger(pid) || pid === process.pid) continue;
      let alive = true;
      try {
        process.kill(pid, 0);
      } catch (e) {
        alive = (e as NodeJS.ErrnoException).code === 'EPERM';
      }
      if (!alive) await rm(join(parent, n), { recursive: true, force: true }).catch(() => {});
    }
  }

  /** versions larger than this are not cached (they would evict everything else and themselves) */
  worthCaching(size: number): boolean {
    return this.maxBytes > 0 && size <= this.maxBytes / 2;
  }

  has(version: string, idx: number): boolean {
    return this.entries.get(version)?.present.has(idx) ?? false;
  }

  /**
   * One name per version: a hash, since versions may be synthetic keys
   * (`repo:path@mtime:size`) that differ only in characters a file name
   * cannot hold, or only after 200 of them.
   */
  private fileName(version: string): string {
    return join(this.dir, createHash('sha256').update(version).digest('hex'));
  }

  put(version: string, idx: number, parts: Buffer[], size: number): void {
    // each queued write holds its chunk's buffers: when the disk falls behind, skip caching
    // (a later miss costs a fetch) rather than let memory grow with the backlog
    if (this.queuedBytes + size > this.maxQueuedBytes) {
      this.stats.skipped++;
      return;
    }
    let e = this.entries.get(version);
    if (!e) {
      e = {
        fh: open(this.fileName(version), 'w+'),
        present: new Set(),
        writing: new Set(),
        bytes: 0,
        used: 0,
        dead: false,
      };
      e.fh.catch(() => {});
      this.entries.set(version, e);
    }
    if (e.present.has(idx) || e.writing.has(idx)) return;
    const entry = e;
    entry.used = ++this.clock;
    entry.writing.add(idx);
    this.writesInFlight++;
    this.queuedBytes += size;
    void (async () => {
      try {
        const fh = await entry.fh;
        await fh.writev(parts, idx * this.chunk);
        entry.writing.delete(idx);
        if (entry.dead) return;
        entry.present.add(idx);
        entry.bytes += size;
        this.total += size;
        this.stats.writes++;
        this.evict(version);
      } catch {
        entry.writing.delete(idx);
      } finally {
        this.writesInFlight--;
        this.queuedBytes -= size;
      }
    })();
  }

  /** chunk writes started by put() and not finished yet (they are fire-and-forget) */
  get pendingWrites(): number {
    return this.writesInFlight;
  }

  /** the chunk's bytes from disk, or null when it is not (or no longer) there */
  async get(version: string, idx: number, size: number): Promise<Buffer | null> {
    const e = this.entries.get(version);
    if (!e?.present.has(idx)) return null;
    e.used = ++this.clock;
    try {
      const fh = await e.fh;
      const buf = Buffer.allocUnsafe(size);
      const { bytesRead } = await fh.read(buf, 0, size, idx * this.chunk);
      if (bytesRead !== size || e.dead) return null;
      this.stats.hits++;
      return buf;
    } catch {
      return null;
    }
  }

  private evict(keep: string): void {
    while (this.total > this.maxBytes) {
      let victim: [string, Entry] | null = null;
      for (const kv of this.entries) if (kv[0] !== keep && (!victim || kv[1].used < victim[1].used)) victim = kv;
      if (!victim) return;
      this.drop(victim[0], victim[1]);
    }
  }

  private drop(version: string, e: Entry): void {
    e.dead = true;
    this.entries.delete(version);
    this.total -= e.bytes;
    this.stats.evictions++;
    const name = this.fileName(version);
    void e.fh
      .then((fh) => fh.close())
      .catch(() => {})
      .then(() => rm(name, { force: true }));
  }

  /** Drop every cached chunk now (`seafs cache clear`); returns the bytes freed. */
  clear(): number {
    const freed = this.total;
    for (const [v, e] of [...this.entries]) this.drop(v, e);
    return freed;
  }

  async close(): Promise<void> {
    for (const [v, e] of [...this.entries]) this.drop(v, e);
  }
}
