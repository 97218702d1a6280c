// When the chunk cache's markers reach the disk: 2 once a chunk's write
// returned (trusted under this boot only), 1 once a datasync followed (for
// good), an earlier boot's 2s zeroed and synced before new ones are written.
// So a crash leaves at worst chunks without trusted markers, never wrong
// ones. docs/design/chunk-cache.md says why.
import { BOOT_LEN, FIXED, setMarkers, type CachedVersion } from './cache-file.js';

export class MarkerWriter {
  private marksTimer: NodeJS.Timeout | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
  private marking: Promise<void> = Promise.resolve();

  constructor(
    /** the versions this process holds */
    private readonly versions: () => Iterable<CachedVersion>,
    /** this boot's id ('' when unknown) */
    private readonly boot: string,
    /** how long written chunks wait for their markers (and the datasync before them) */
    private readonly markDelayMs: number,
    /** a version with no write for this long has its markers made durable (datasync, then 1s) */
    private readonly settleMs: number,
  ) {}

  /** New chunks were written: their markers follow within markDelayMs. */
  schedule(): void {
    this.marksTimer ??= later(this.markDelayMs, () => {
      this.marksTimer = null;
      void this.write();
    });
  }

  /** The markers waiting for their timer are written now. */
  writeNow(): Promise<void> {
    if (this.marksTimer) clearTimeout(this.marksTimer);
    this.marksTimer = null;
    return this.write();
  }

  /** No more settling (the cache closes). */
  stop(): void {
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.settleTimer = null;
  }

  /**
   * For each version with new chunks, set their markers: 2 (written, good
   * for this boot), or without a boot id 1 after a datasync. `settle`: the
   * 2s of every version (else those of versions idle for settleMs) become
   * 1s after a datasync.
   */
  write(settle = false): Promise<void> {
    this.marking = this.marking.then(async () => {
      const now = Date.now();
      for (const e of this.versions()) {
        if (!e.fh || e.dead) continue;
        try {
          if (e.marks.length) {
            const marks = e.marks.sort((a, b) => a - b);
            e.marks = [];
            const fh = await e.fh;
            if (!this.boot) {
              await fh.datasync();
              await setMarkers(fh, marks, 1);
              continue;
            }
            if (e.boot !== this.boot) {
              // an earlier boot's unsynced markers must never pass for this boot's: zeroed, durably, first
              if (e.stale.length) {
                await setMarkers(
                  fh,
                  e.stale.sort((a, b) => a - b),
                  0,
                );
                await fh.datasync();
              }
              e.stale = [];
              await fh.write(Buffer.from(this.boot, 'latin1'), 0, BOOT_LEN, FIXED);
              e.boot = this.boot;
            }
            await setMarkers(fh, marks, 2);
            for (const i of marks) e.unsynced.push(i);
          }
          if (e.unsynced.length && (settle || now - e.wrote >= this.settleMs)) {
            const marks = e.unsynced.sort((a, b) => a - b);
            e.unsynced = [];
            const fh = await e.fh;
            await fh.datasync();
            await setMarkers(fh, marks, 1);
          }
        } catch {
          // markers not written: those chunks are misses for the next mount
        }
      }
      this.scheduleSettle();
    });
    return this.marking;
  }

  /** versions with unsynced markers are looked at again once they may have been idle for settleMs */
  private scheduleSettle(): void {
    if (this.settleTimer) return;
    let pending = false;
    for (const e of this.versions()) if (e.unsynced.length && !e.dead) pending = true;
    if (!pending) return;
    this.settleTimer = later(this.settleMs, () => {
      this.settleTimer = null;
      void this.write();
    });
  }
}

/** `fn` after `ms`, without keeping the process alive for it */
function later(ms: number, fn: () => void): NodeJS.Timeout {
  const t = setTimeout(fn, ms);
  t.unref();
  return t;
}
