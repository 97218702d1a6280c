// Content-addressed object store under DATA/objects: folder listings and
// commits (and, in stores from before blocks.ts, whole file contents), each
// named by the sha1 of its bytes. Objects are
// immutable, written atomically (temp + fsync + rename) and shared by every
// library, so copies across libraries cost nothing.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { writeFileAtomic } from './atomic.js';

export const ZERO_ID = '0'.repeat(40);

export function sha1(data: string | Buffer): string {
  return createHash('sha1').update(data).digest('hex');
}

export class ObjectStore {
  readonly dir: string;
  // Parsed folder and commit objects, bounded by their JSON size (a folder of
  // 10,000 entries is ~1.5 MB of text, several times that once parsed).
  private json = new LRUCache<string, object>({ maxSize: 16 << 20, sizeCalculation: () => 1 });
  // Objects whose write is still running: never evicted, always readable.
  private writing = new Map<string, object>();

  constructor(dataDir: string) {
    this.dir = path.join(dataDir, 'objects');
  }

  async init(): Promise<void> {
    // the 256 fan-out folders exist up front: no mkdir per object
    await fsp.mkdir(this.dir, { recursive: true });
    await Promise.all(
      Array.from({ length: 256 }, async (_, i) => {
        const sub = path.join(this.dir, i.toString(16).padStart(2, '0'));
        await fsp.mkdir(sub, { recursive: true });
        // temp files of object writes cut short by a crash
        for (const f of await fsp.readdir(sub))
          if (f.startsWith('.tmp-')) await fsp.rm(path.join(sub, f), { force: true });
      }),
    );
  }

  pathOf(id: string): string {
    // every id is a sha1: anything else (a name from a request) never becomes a path
    if (!/^[0-9a-f]{40}$/.test(id)) throw new Error('not an object id');
    return path.join(this.dir, id.slice(0, 2), id.slice(2));
  }

  async has(id: string): Promise<boolean> {
    if (id === ZERO_ID) return true;
    try {
      await fsp.access(this.pathOf(id));
      return true;
    } catch {
      return false;
    }
  }

  private pending = new Set<Promise<void>>();

  /**
   * Stores a JSON value and returns its id at once; the write (temp + fsync +
   * rename) runs in the background and `flush()` waits for it. The value is
   * readable from the cache meanwhile. Writing an object that already exists
   * is harmless (same bytes), so there is no existence check.
   */
  putJson(value: unknown): string {
    const text = JSON.stringify(value);
    const id = sha1(text);
    if (!this.json.has(id) && !this.writing.has(id)) {
      this.writing.set(id, value as object);
      const write = writeFileAtomic(this.pathOf(id), text, { syncDir: false });
      this.pending.add(write);
      void write.then(
        () => {
          this.pending.delete(write);
          this.writing.delete(id);
        },
        () => {
          // stays in `pending` so flush() reports the failure; a later put writes it again
          this.writing.delete(id);
          this.json.delete(id);
        },
      );
    }
    this.json.set(id, value as object, { size: text.length });
    return id;
  }

  /**
   * Counts a write made elsewhere (a file record, blocks.ts) among those
   * `flush()` waits for; `onFail` runs if it fails.
   */
  track(write: Promise<void>, onFail?: () => void): void {
    this.pending.add(write);
    void write.then(
      () => this.pending.delete(write),
      () => onFail?.(),
    );
  }

  /** Waits until every object written so far is on disk; throws if one failed. */
  async flush(): Promise<void> {
    const all = [...this.pending];
    const results = await Promise.allSettled(all);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) {
      for (const p of all) this.pending.delete(p);
      throw failed.reason;
    }
  }

  async getJson<T>(id: string): Promise<T> {
    const hit = this.json.get(id) ?? this.writing.get(id);
    if (hit !== undefined) return hit as T;
    const text = await fsp.readFile(this.pathOf(id), 'utf8');
    const value = JSON.parse(text) as T;
    this.json.set(id, value as object, { size: text.length });
    return value;
  }
}
