// The chunk cache's size: `maxBytes` caps the whole dir, shared by any number
// of mounts. Each process counts the files it found at start and its own
// writes, and rescans the dir before it evicts, least recently used first by
// modification time (touched at most once a minute on use). Eviction unlinks
// a file (a process holding it open keeps reading its own copy); kept
// versions (pinned files) are never evicted. Bytes the cache dir holds
// besides (`reserved`: files being written, waiting for their upload) count
// against the cap: the chunks make way for them.
import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { CachedVersion } from './cache-file.js';

const RESERVED_RESCAN_MS = 1000;

export class CacheDirUsage {
  /** files found in the dir that this process has not opened: name -> size and last use */
  readonly onDisk = new Map<string, { bytes: number; used: number }>();
  /** bytes the dir holds as far as this process knows */
  total = 0;
  private rescanning: Promise<void> | null = null;
  /** bytes of the dir outside the chunk cache (files being written) */
  reserved: () => number = () => 0;
  /** bytes of chunk writes on their way to the disk: counted already, so that eviction makes room before they land */
  queued: () => number = () => 0;
  private evictedAt = 0;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    /** the versions this process holds */
    private readonly versions: () => Iterable<CachedVersion>,
    /** the version's file stays whatever the LRU says */
    private readonly kept: (name: string) => boolean,
    /** a version of this process leaves the cache */
    private readonly drop: (e: CachedVersion) => void,
    /** one more file evicted */
    private readonly counted: () => void,
  ) {}

  get over(): boolean {
    return this.total > 0 && this.total + this.queued() + this.reserved() > this.maxBytes;
  }

  /** Counts the files of the dir anew: those of other processes and this one's. */
  async scan(): Promise<void> {
    const mine = new Set<string>();
    for (const e of this.versions()) mine.add(e.name);
    this.onDisk.clear();
    for (const n of await readdir(this.dir).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{64}$/.test(n) || mine.has(n)) continue;
      const st = await stat(join(this.dir, n)).catch(() => null);
      if (st?.isFile()) this.onDisk.set(n, { bytes: st.blocks * 512, used: st.mtimeMs });
    }
    this.total = 0;
    for (const e of this.versions()) this.total += e.bytes;
    for (const d of this.onDisk.values()) this.total += d.bytes;
  }

  /** Least recently used first, among this process' versions and the files others left, until under the cap. */
  evict(keep: CachedVersion | null): Promise<void> {
    // over only for the reserved bytes: a rescan at most once a second (each reads the whole dir)
    const ownBytes = this.total + this.queued();
    if (!this.rescanning && ownBytes <= this.maxBytes && Date.now() - this.evictedAt < RESERVED_RESCAN_MS)
      return Promise.resolve();
    this.rescanning ??= (async () => {
      try {
        await this.scan();
        const target = Math.max(0, this.maxBytes * 0.9 - this.queued() - this.reserved());
        const victims: { used: number; drop: () => void }[] = [];
        for (const e of this.versions())
          if (e !== keep && e.bytes > 0 && !this.kept(e.name)) victims.push({ used: e.used, drop: () => this.drop(e) });
        for (const [n, d] of this.onDisk) {
          if (this.kept(n)) continue;
          victims.push({
            used: d.used,
            drop: () => {
              this.onDisk.delete(n);
              this.total -= d.bytes;
              this.counted();
              void unlink(join(this.dir, n)).catch(() => {});
            },
          });
        }
        victims.sort((a, b) => a.used - b.used);
        for (const v of victims) {
          if (this.total <= target) break;
          v.drop();
        }
      } finally {
        this.evictedAt = Date.now();
        this.rescanning = null;
      }
    })();
    return this.rescanning;
  }

  /** Removes every file other processes left, but kept ones. */
  clearOthers(): void {
    for (const [n, d] of [...this.onDisk]) {
      if (this.kept(n)) continue;
      void unlink(join(this.dir, n)).catch(() => {});
      this.onDisk.delete(n);
      this.total -= d.bytes;
    }
  }
}
