// The write path's share of --cache-max-size. Files being written live in
// temp files in the cache dir until they are on the server; with a slow
// uplink a copy of many files outruns their uploads and the temp files pile
// up far past the limit (64 files of 16 MiB at 40 MB/s: 1 GiB in the cache
// dir under a 256 MiB limit). So a write that grows a temp file past the
// limit waits until uploads of other files make room (back-pressure), the
// read cache giving way first (it counts these bytes as taken). A write goes
// on anyway when nothing could make room: the file itself is all that is
// held (one file larger than the limit is still copied, its temp file as
// large as the file), the other files are still open or their uploads fail
// or wait for the server, or room has not come for a while. The same wait
// answers a full disk: a write that fails with ENOSPC is tried again once
// other files' uploads have freed their temp files.
import type { FileState } from './file-state.js';

/** how old the sum of the temp files' bytes may be before it is counted again */
const RECOUNT_MS = 50;
/** a write waits at most this long in all for room */
const MAX_WAIT_MS = 60_000;
/** how often a waiting write looks again (besides the wake-up when a temp file goes) */
const POLL_MS = 100;

export interface ReadCacheShare {
  /** the read cache evicts until it and `reserved` bytes fit under the limit */
  makeRoom(): void;
}

export class CacheRoom {
  /** writes that waited for room, and the ms they waited in all */
  readonly stats = { waits: 0, waitedMs: 0, enospcRetries: 0 };
  private held = 0;
  private countedAt = 0;
  private wakers: (() => void)[] = [];
  private saidStuck = false;
  /** temp files whose unlink is under way */
  private unlinking = 0;

  constructor(
    /** bytes the cache dir may hold (0: no limit) */
    private readonly limit: number,
    /** the files with local data */
    private readonly states: () => Iterable<FileState>,
    private readonly offline: () => boolean,
    private readonly log: (msg: string) => void,
    private readonly readCache: ReadCacheShare | null = null,
  ) {}

  /** bytes the temp files of files being written hold (a file in memory has none) */
  heldBytes(): number {
    const now = Date.now();
    if (now - this.countedAt >= RECOUNT_MS) {
      let sum = 0;
      for (const s of this.states()) if (s.mem === null && !s.disposed) sum += s.size;
      this.held = sum;
      this.countedAt = now;
    }
    return this.held;
  }

  /** A write of `s` ending at `end` may have to wait for room (checked cheaply, without waiting). */
  mustWait(s: FileState, end: number): boolean {
    if (this.limit <= 0 || end <= s.size) return false;
    if (this.heldBytes() + (end - s.size) > this.limit) return true;
    // counted at once: writes until the next count see it
    this.held += end - s.size;
    return false;
  }

  /** Waits until the temp files and `end - s.size` more fit under the limit, or nothing could make room. */
  async wait(s: FileState, end: number): Promise<void> {
    const t0 = Date.now();
    let waited = false;
    this.readCache?.makeRoom();
    while (this.mustWait(s, end) && this.othersDrain(s)) {
      if (Date.now() - t0 > MAX_WAIT_MS) {
        if (!this.saidStuck)
          this.log(
            `the files being written hold ${Math.round(this.heldBytes() / 2 ** 20)} MiB in the cache dir, over ` +
              `--cache-max-size, and uploads made no room for ${MAX_WAIT_MS / 1000} s: writes go on past the limit`,
          );
        this.saidStuck = true;
        break;
      }
      if (!waited) this.stats.waits++;
      waited = true;
      await this.nextFree();
      this.countedAt = 0;
    }
    if (waited) this.stats.waitedMs += Date.now() - t0;
  }

  /** After a write of `s` failed for want of disk space: true once room may have come (try again), false: it will not. */
  async afterEnospc(s: FileState, since: number): Promise<boolean> {
    if (Date.now() - since > MAX_WAIT_MS || !this.othersDrain(s)) return false;
    this.stats.enospcRetries++;
    this.readCache?.makeRoom();
    await this.nextFree();
    this.countedAt = 0;
    return true;
  }

  /** A temp file is about to go (its state left the table; the unlink follows): room is coming. */
  freeing(): void {
    this.unlinking++;
  }

  /** A temp file went (its file is on the server, or deleted): waiting writes look again. */
  freed(): void {
    this.unlinking = Math.max(0, this.unlinking - 1);
    this.countedAt = 0;
    const w = this.wakers;
    this.wakers = [];
    for (const f of w) f();
  }

  /**
   * Another file's temp file will go soon: one being unlinked, one uploaded
   * and closed (disposed next), or one closed whose upload has not failed
   * (with the server reachable).
   */
  private othersDrain(s: FileState): boolean {
    if (this.unlinking > 0) return true;
    const online = !this.offline();
    for (const o of this.states()) {
      if (o === s || o.mem !== null || o.disposed || o.size === 0 || o.writers > 0) continue;
      if (!o.dirty || o.deleted) {
        if (o.openCount === 0) return true;
      } else if (online && !o.lastError) return true;
    }
    return false;
  }

  private nextFree(): Promise<void> {
    return new Promise<void>((r) => {
      const t = setTimeout(r, POLL_MS);
      this.wakers.push(() => {
        clearTimeout(t);
        r();
      });
    });
  }
}
