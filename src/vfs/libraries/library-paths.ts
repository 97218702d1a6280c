// Which library a mount path is in. A mount of one library maps paths as they
// are; without --library the root is a virtual folder of every library the
// account reaches, named so that no two clash (a library shared twice is shown
// once; equal names get the owner, then the id, added).
import type { Library, SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { VfsError } from '../errors.js';
import type { ListingStore } from '../listings/listing-disk-store.js';
import { checkChangeAt, nfc, splitPath } from '../common/paths.js';

export interface Loc {
  /** null: the virtual root listing the libraries */
  repo: string | null;
  path: string;
  readOnly: boolean;
}

export type RepoLoc = Loc & { repo: string };

export class Libraries {
  /** the one library mounted (null: all of them) */
  lib: Library | null = null;
  private cache: { at: number; byName: Map<string, Library>; p?: Promise<void> } | null = null;

  constructor(
    private readonly api: SeafileApi,
    private readonly ttlMs: number,
    private readonly readOnly: boolean,
    /** all-libraries mode: throws for a library whose content the mount cannot open (a locked encrypted one) */
    private readonly guard: (lib: Library) => void = () => {},
    /** the list as last seen, kept on disk: a mount started offline finds its libraries there */
    private readonly saved: Pick<ListingStore, 'loadLibraries' | 'saveLibraries'> | null = null,
  ) {}

  /** The account's libraries from the server; unreachable: the list saved when last seen, if any. */
  private async listAll(): Promise<Library[]> {
    try {
      const all = await this.api.listLibraries();
      this.saved?.saveLibraries(all);
      return all;
    } catch (e) {
      const kept = unreachable(e) ? await this.saved?.loadLibraries() : null;
      if (!kept) throw e;
      return kept;
    }
  }

  /** Mount the library named (or with the id) `nameOrId`. */
  async choose(nameOrId: string): Promise<Library> {
    const all = await this.listAll();
    const hit = all.find((l) => l.id === nameOrId) ?? all.find((l) => l.name === nameOrId);
    if (!hit) throw new VfsError('ENOENT', `no library named or with id "${nameOrId}"`);
    this.lib = hit;
    return hit;
  }

  /**
   * The server told that permissions changed: the libraries are listed again
   * now (a library made read-only refuses writes with EROFS from then on).
   */
  async reread(): Promise<void> {
    const all = await this.listAll();
    if (this.lib) {
      const hit = all.find((l) => l.id === this.lib!.id);
      if (hit) this.lib = hit;
    }
    this.cache = { at: Date.now(), byName: rootNames(all) };
  }

  /** The root's names, each with its library (listed again after the cache time). */
  async byName(): Promise<Map<string, Library>> {
    const c = this.cache;
    if (c && Date.now() - c.at < this.ttlMs) return c.byName;
    if (c?.p) {
      await c.p;
      return this.cache!.byName;
    }
    const p = (async () => {
      const list = await this.listAll();
      this.cache = { at: Date.now(), byName: rootNames(list) };
    })();
    this.cache = { at: 0, byName: c?.byName ?? new Map(), p };
    try {
      await p;
    } catch (e) {
      this.cache = c ?? null;
      // offline: the libraries the mount knows
      if (c && unreachable(e)) return c.byName;
      throw e;
    }
    return this.cache!.byName;
  }

  /** `guard` for the library folder at `p` itself (listing it; its own attributes stay visible). */
  async guardRoot(p: string): Promise<void> {
    if (this.lib) return;
    const parts = splitPath(p);
    const lib = parts.length === 1 ? (await this.byName()).get(parts[0]) : undefined;
    if (lib) this.guard(lib);
  }

  /** The library with this id, when the mount knows it. */
  async byId(repo: string): Promise<Library | undefined> {
    if (this.lib) return this.lib.id === repo ? this.lib : undefined;
    return [...(await this.byName()).values()].find((l) => l.id === repo);
  }

  /** The library with this id as last listed, without waiting (undefined: not known yet). */
  peekById(repo: string): Library | undefined {
    if (this.lib) return this.lib.id === repo ? this.lib : undefined;
    for (const l of this.cache?.byName.values() ?? []) if (l.id === repo) return l;
    return undefined;
  }

  /** resolve without waiting: the location when one library is mounted, null otherwise (then use resolve) */
  resolveNow(p: string): RepoLoc | null {
    if (!this.lib) return null;
    return { repo: this.lib.id, path: p, readOnly: this.readOnly || this.lib.permission === 'r' };
  }

  /** `change`: the caller creates, deletes or renames `p` (refused at the root with EPERM) */
  async resolve(p: string, change = false): Promise<Loc> {
    const loc = await this.locate(p, change);
    if (change) checkChangeAt(loc.path);
    return loc;
  }

  private async locate(p: string, change: boolean): Promise<Loc> {
    if (this.lib) return { repo: this.lib.id, path: p, readOnly: this.readOnly || this.lib.permission === 'r' };
    if (p === '/') return { repo: null, path: '/', readOnly: true };
    const parts = splitPath(p);
    if (change && parts.length === 1) throw new VfsError('EPERM', 'the root holds the libraries');
    const lib = (await this.byName()).get(parts[0]);
    if (!lib) throw new VfsError('ENOENT', p);
    if (parts.length > 1) this.guard(lib);
    return {
      repo: lib.id,
      path: parts.length > 1 ? '/' + parts.slice(1).join('/') : '/',
      readOnly: this.readOnly || lib.permission === 'r',
    };
  }

  /** Like resolve, for operations that need a library (EPERM at the root). */
  async repoOf(p: string, change = false): Promise<RepoLoc> {
    const loc = await this.resolve(p, change);
    if (loc.repo === null) throw new VfsError('EPERM', 'the root holds the libraries');
    return loc as RepoLoc;
  }
}

/** The root folder's names for a list of libraries: unique, without slashes. */
function rootNames(list: Library[]): Map<string, Library> {
  const byName = new Map<string, Library>();
  const count = new Map<string, number>();
  for (const l of list) count.set(l.name, (count.get(l.name) ?? 0) + 1);
  const seen = new Set<string>();
  for (const l of list) {
    if (seen.has(l.id)) continue; // a library reachable twice (owned and shared to a group)
    seen.add(l.id);
    // NFC like every path the mount is given (common/paths.ts nfc): a library named in NFD stays reachable
    let name = nfc(l.name.replace(/\//g, '_'));
    if ((count.get(l.name) ?? 0) > 1 && l.type !== 'repo') name = `${name} (${l.owner || l.id.slice(0, 8)})`;
    if (byName.has(name)) name = `${name} [${l.id.slice(0, 8)}]`;
    byName.set(name, l);
  }
  return byName;
}

/** EROFS for a change where the mount or the library is read-only. */
export function writable(loc: Loc): void {
  if (loc.readOnly) throw new VfsError('EROFS');
}
