// Fills the freedesktop thumbnail cache for the pictures of the folders
// listed through the mount, from the server's thumbnails (which the server
// makes from the file: nothing of the picture is downloaded), so that a file
// manager shows them without reading each picture over the network. A file
// manager finds a thumbnail by the file's URI (thumbnail-names.ts) and takes
// it while its Thumb::MTime is the file's mtime as the mount shows it.
//
// Work starts after readdir has answered, in the background, a few
// thumbnails at a time; a folder's pictures are looked at when it is first
// listed and when a listing shows one changed (another id, time or size).
// An up-to-date thumbnail already in the cache is kept. A failure is logged
// once per kind and otherwise ignored; one the server may get over (offline,
// 5xx, 429) is tried again at a later listing.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join, posix, resolve } from 'node:path';
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import type { DirEntry, Thumbnail } from '../../client/types.js';
import { ApiError } from '../../client/errors.js';
import { isPng, readTextChunks, withTextChunks } from './png-text.js';
import { fileUri, THUMBNAIL_SIZES, thumbnailName, thumbnailRoot } from './thumbnail-names.js';

export interface ThumbnailOptions {
  /** the mount's folder, absolute: the files' URIs are under it */
  mountpoint: string;
  /** the thumbnail cache ($XDG_CACHE_HOME/thumbnails by default) */
  root?: string;
  /** server thumbnails asked at once (default 4) */
  concurrency?: number;
}

export interface ThumbnailDeps {
  thumbnail: (repo: string, path: string, size: number) => Promise<Thumbnail>;
  /** whether a library is encrypted (its server refuses thumbnails: none are asked) */
  encrypted: (repo: string) => Promise<boolean>;
  /** whether a file is written on this machine and not on the server yet (its thumbnail would be of the old one) */
  local: (repo: string, path: string) => boolean;
  log: (msg: string) => void;
}

/** seahub's picture types (its IMAGE file type) but Photoshop's, which needs a module servers seldom have */
const PICTURE = /\.(jpe?g|png|gif|bmp|tiff?|ico)$/i;

export function isPicture(name: string): boolean {
  return PICTURE.test(name);
}

/** what a thumbnail depends on: the file's version and what the mount shows of it */
function signature(e: DirEntry): string {
  return `${e.id}:${e.mtime}:${e.size ?? 0}`;
}

function transient(e: unknown): boolean {
  return !(e instanceof ApiError) || e.status === 0 || e.status === 429 || e.status >= 500;
}

export class ThumbnailFiller {
  private readonly root: string;
  private readonly limit: ReturnType<typeof pLimit>;
  /** per folder (repo NUL path): the signature of each picture already done or under way */
  private readonly seen = new LRUCache<string, Map<string, string>>({ max: 4096 });
  /** folders whose look is scheduled: readdirs in a row make one */
  private readonly scheduled = new Set<string>();
  private readonly logged = new Set<string>();
  private stopped = false;

  constructor(
    private readonly opts: ThumbnailOptions,
    private readonly deps: ThumbnailDeps,
  ) {
    this.root = resolve(opts.root ?? thumbnailRoot());
    this.limit = pLimit(opts.concurrency ?? 4);
    // a thumbnail cache on the mount itself would be uploaded, listed, and thumbnailed in turn
    if (this.root === opts.mountpoint || this.root.startsWith(opts.mountpoint.replace(/\/*$/, '/'))) {
      this.stopped = true;
      deps.log(`thumbnails: off, the thumbnail cache ${this.root} is inside the mount`);
    }
  }

  /**
   * A folder was listed: `fuseDir` its path in the mount, `dir` in library
   * `repo`. Returns at once; the work is done after the listing's answer.
   */
  listed(fuseDir: string, repo: string, dir: string, entries: Map<string, DirEntry>): void {
    // looked at every time (a cached listing is changed in place when a file lands): the signatures
    // make it a pass over the names that asks nothing when nothing changed
    const key = `${repo}\u0000${dir}`;
    if (this.stopped || this.scheduled.has(key)) return;
    this.scheduled.add(key);
    setImmediate(() => {
      this.scheduled.delete(key);
      void this.scan(fuseDir, repo, dir, entries);
    });
  }

  /** No new work (unmount); what runs finishes. */
  stop(): void {
    this.stopped = true;
    this.limit.clearQueue();
  }

  /** resolves once every thumbnail asked so far is written or given up (tests) */
  async idle(): Promise<void> {
    while (this.limit.activeCount + this.limit.pendingCount > 0) await new Promise((r) => setTimeout(r, 10));
  }

  private async scan(fuseDir: string, repo: string, dir: string, entries: Map<string, DirEntry>): Promise<void> {
    if (await this.deps.encrypted(repo).catch(() => true)) return;
    const key = `${repo}\u0000${dir}`;
    let seen = this.seen.get(key);
    if (!seen) this.seen.set(key, (seen = new Map()));
    const present = new Set<string>();
    for (const e of entries.values()) {
      if (e.type !== 'file' || !isPicture(e.name)) continue;
      present.add(e.name);
      const sig = signature(e);
      if (seen.get(e.name) === sig) continue;
      const path = posix.join(dir, e.name);
      if (this.deps.local(repo, path)) continue;
      seen.set(e.name, sig);
      const folder = seen;
      const uri = fileUri(posix.join(this.opts.mountpoint, fuseDir, e.name));
      this.limit(() => (this.stopped ? undefined : this.fill(repo, path, uri, e))).catch((err: unknown) => {
        if (transient(err) && folder.get(e.name) === sig) folder.delete(e.name);
        this.logOnce(err, path);
      });
    }
    for (const name of seen.keys()) if (!present.has(name)) seen.delete(name);
  }

  /** Writes the file's normal and large thumbnails, each unless an up-to-date one is there. */
  private async fill(repo: string, path: string, uri: string, e: DirEntry): Promise<void> {
    const name = thumbnailName(uri);
    const texts = { 'Thumb::URI': uri, 'Thumb::MTime': String(e.mtime), 'Thumb::Size': String(e.size ?? 0) };
    for (const { dir, size } of THUMBNAIL_SIZES) {
      const folder = join(this.root, dir);
      if (await upToDate(join(folder, name), texts)) continue;
      const t = await this.deps.thumbnail(repo, path, size);
      if (!isPng(t.bytes)) throw new Error(`the server's thumbnail is not a PNG (${t.type || 'no type'})`);
      await writeAtomic(folder, name, withTextChunks(t.bytes, { ...texts, Software: 'seafs' }));
    }
  }

  private logOnce(err: unknown, path: string): void {
    const kind = err instanceof ApiError ? `${err.kind}:${err.status}` : 'local';
    if (this.logged.has(kind)) return;
    this.logged.add(kind);
    const msg = err instanceof Error ? err.message : String(err);
    this.deps.log(`thumbnails: ${path}: ${msg} (such failures are not logged again)`);
  }
}

/** Whether the thumbnail at `file` is of this URI, mtime and size. */
async function upToDate(file: string, texts: Record<string, string>): Promise<boolean> {
  const chunks = readTextChunks(await readFile(file).catch(() => Buffer.alloc(0)));
  return !!chunks && Object.entries(texts).every(([k, v]) => chunks.get(k) === v);
}

/** Writes folder/name whole or not at all (temp file, then rename), 0600, its folders made 0700. */
async function writeAtomic(folder: string, name: string, bytes: Buffer): Promise<void> {
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const tmp = join(folder, `.${name}.seafs-${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(tmp, bytes, { mode: 0o600, flag: 'wx' });
    await rename(tmp, join(folder, name));
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}
