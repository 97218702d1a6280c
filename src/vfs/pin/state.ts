// What is pinned and what of it is on this machine, shared by the pin
// modules: pins.ts changes it (pin, unpin, a move), downloads.ts fills it,
// refresh.ts follows the server, status.ts reports it. It holds this mount's
// libraries' pins, the other mounts' as last read from the store (the disk
// cache keeps their files too), the cache files kept and their bytes (which
// at most PIN_SHARE of --cache-max-size may be), and which files are whole
// on disk.
import { isWithin } from '../common/paths.js';
import { cacheName, wholeBytes } from '../read/chunk-cache/chunk-cache.js';
import { msgOf } from './log-format.js';
import type { LibraryPins, PinnedFile, PinStore } from './store.js';

/** the share of --cache-max-size pinned files may take (the cache evicts down to 90% of it) */
export const PIN_SHARE = 0.9;

/** the key of a file in the maps below */
export const pinKey = (repo: string, path: string) => `${repo}\u0000${path}`;
export const splitKey = (k: string) => k.split('\u0000') as [repo: string, path: string];

export class PinState {
  /** this mount's libraries' pins */
  readonly libs = new Map<string, LibraryPins>();
  /** the other libraries' pins of the account (other mounts'), as last read */
  others = new Map<string, LibraryPins>();
  /** cache file names kept, with their bytes on disk (every library of the account) */
  kept = new Map<string, number>();
  keptBytes = 0;
  /** files whole on disk (repo\0path -> the id that is) */
  readonly done = new Map<string, string>();
  /** files that failed: waiting for the server (unreachable) or for the next refresh */
  readonly failed = new Map<string, { error: string; offline: boolean }>();
  /** repo\0root -> the files under that pinned folder the cache cannot hold (path -> size) */
  readonly unfit = new Map<string, Map<string, number>>();
  /** the mount shows every library: paths in status are named with their library's id */
  allLibraries = true;
  closed = false;
  readonly stats = { fetched: 0, fetchedBytes: 0, refreshes: 0 };
  /** the bytes pinned files may take */
  readonly limitBytes: number;

  constructor(
    private readonly store: PinStore,
    /** the disk cache's cap in bytes */
    readonly maxBytes: number,
    /** the disk cache's chunk size: kept files take whole chunks */
    readonly chunkBytes: number,
    private readonly log: (msg: string) => void,
  ) {
    this.limitBytes = Math.floor(maxBytes * PIN_SHARE);
  }

  /** Reads the pins of the libraries this mount does not hold from the store. */
  async readOthers(): Promise<void> {
    const all = await this.store.readAll((file, e) => this.log(`pins: ${file} is unreadable (${msgOf(e)}); left out`));
    this.others = new Map([...all].filter(([repo]) => !this.libs.has(repo)));
  }

  save(lib: LibraryPins): Promise<void> {
    return this.store.save(lib);
  }

  /** a library's pins, made empty when it has none yet */
  libOf(repo: string): LibraryPins {
    let lib = this.libs.get(repo);
    if (!lib) this.libs.set(repo, (lib = { repo, roots: new Map(), files: new Map() }));
    return lib;
  }

  /** the kept names and bytes, from this mount's pins and the others' */
  recount(): void {
    const kept = new Map<string, number>();
    for (const p of [...this.libs.values(), ...this.others.values()])
      for (const f of p.files.values()) if (f.size > 0) kept.set(cacheName(f.id), wholeBytes(f.size, this.chunkBytes));
    this.kept = kept;
    this.keptBytes = 0;
    for (const b of kept.values()) this.keptBytes += b;
  }

  /** whether anything of `repo` is pinned here */
  hasPins(repo: string): boolean {
    return (this.libs.get(repo)?.roots.size ?? 0) > 0;
  }

  /** the pinned path that covers `path` (itself or a folder above it), or null */
  rootOf(repo: string, path: string): string | null {
    const p = this.libs.get(repo);
    if (!p) return null;
    for (const r of p.roots.keys()) if (isWithin(path, r)) return r;
    return null;
  }

  /** the pinned file is whole on disk (an empty one always is) */
  isWhole(repo: string, path: string, f: PinnedFile): boolean {
    return f.size === 0 || this.done.get(pinKey(repo, path)) === f.id;
  }

  forgetFile(repo: string, path: string): void {
    const k = pinKey(repo, path);
    this.done.delete(k);
    this.failed.delete(k);
  }

  /**
   * Drops the files of `lib` that no pinned path covers any more (and the
   * library, once nothing in it is pinned); returns how many.
   */
  dropUncovered(lib: LibraryPins): number {
    let n = 0;
    for (const fp of [...lib.files.keys()]) {
      if (this.rootOf(lib.repo, fp) !== null) continue;
      lib.files.delete(fp);
      this.forgetFile(lib.repo, fp);
      n++;
    }
    if (lib.roots.size === 0) this.libs.delete(lib.repo);
    return n;
  }
}
