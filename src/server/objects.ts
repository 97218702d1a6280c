// Content-addressed object store under DATA/objects: file contents, folder
// listings and commits, each named by the sha1 of its bytes. Objects are
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
  private json = new LRUCache<string, object>({ max: 20_000 });

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
        for (const f of await fsp.readdir(sub)) if (f.startsWith('.tmp-')) await fsp.rm(path.join(sub, f), { force: true });
      }),
    );
  }

  pathOf(id: string): string {
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
    if (!this.json.has(id)) {
      const write = writeFileAtomic(this.pathOf(id), text, { syncDir: false });
      this.pending.add(write);
      void write.then(
        () => this.pending.delete(write),
        () => this.json.delete(id), // stays in `pending`: flush() reports the failure
      );
    }
    this.json.set(id, value as object);
    return id;
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
    const hit = this.json.get(id);
    if (hit !== undefined) return hit as T;
    const value = JSON.parse(await fsp.readFile(this.pathOf(id), 'utf8')) as T;
    this.json.set(id, value as object);
    return value;
  }

  /**
   * Moves an already fsync'd temp file (same filesystem) into the store under
   * the id computed while it was written.
   */
  async adoptFile(tmpPath: string, id: string): Promise<void> {
    if (id === ZERO_ID || (await this.has(id))) {
      await fsp.rm(tmpPath, { force: true });
      return;
    }
    // The content was fsync'd by its writer; the head update that makes it
    // reachable fsyncs its own folder, which commits this rename too (ext4
    // journals metadata in order).
    await fsp.rename(tmpPath, this.pathOf(id));
  }
}
