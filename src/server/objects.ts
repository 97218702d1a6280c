// Content-addressed object store under DATA/objects: file contents, folder
// listings and commits, each named by the sha1 of its bytes. Objects are
// immutable, written atomically (temp + fsync + rename) and shared by every
// library, so copies across libraries cost nothing.
import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import { writeFileAtomic, fsyncDir } from './atomic.js';

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
    await fsp.mkdir(this.dir, { recursive: true });
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

  /** Stores a JSON value; returns its id. */
  async putJson(value: unknown): Promise<string> {
    const text = JSON.stringify(value);
    const id = sha1(text);
    if (!this.json.has(id) && !(await this.has(id))) {
      const p = this.pathOf(id);
      await fsp.mkdir(path.dirname(p), { recursive: true });
      await writeFileAtomic(p, text);
    }
    this.json.set(id, value as object);
    return id;
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
    const p = this.pathOf(id);
    await fsp.mkdir(path.dirname(p), { recursive: true });
    await fsp.rename(tmpPath, p);
    await fsyncDir(path.dirname(p));
  }
}
