// What a cached folder listing is (Listing), the figures the listing cache
// reports, the slimmed entries it keeps and its estimate of their heap bytes,
// and what it asks of the folders made in the mount.
import type { DirEntry } from '../../client/types.js';

export interface Listing {
  /** the folder's object id as last seen on the server; null when unknown or locally changed */
  oid: string | null;
  entries: Map<string, DirEntry>;
  fetchedAt: number;
  /** a real operation has looked at it since it was last fetched or revalidated */
  used?: boolean;
  /** a walk has since gone into one of its sub-folders: their own sub-folders are then fetched on speculation */
  walked?: boolean;
  /** the count of local changes when its content was last taken from the server (see changedSince) */
  seq?: number;
  /** its sub-folders in listing order (the order `find` walks), with their positions; built at first need */
  subdirs?: { names: string[]; index: Map<string, number> };
  /** which of `subdirs` were handed to the prefetch since it was last fetched or revalidated */
  queued?: Uint8Array;
}

export interface MetaStats {
  listRequests: number;
  fullListings: number;
  uptodate: number;
  prefetched: number;
  /** stale listings renewed without a request: their fresh parent names the same folder id */
  renewed: number;
}

/** What the cache holds now: folders, entries, and an estimate of their bytes on the heap. */
export interface MetaHeld {
  folders: number;
  entries: number;
  /** entry budget: least recently used listings are dropped beyond it */
  maxEntries: number;
  bytes: number;
}

export const joinDir = (dir: string, name: string) => (dir === '/' ? `/${name}` : `${dir}/${name}`);

/**
 * The fields of a listed entry the mount uses (the server sends a dozen more per file: modifier names and
 * contact e-mails, starred, lock time, thumbnails, which would double the memory of a large tree's cache).
 */
export function slimEntry(e: DirEntry): DirEntry {
  const out: DirEntry = { type: e.type, name: e.name, id: e.id, mtime: e.mtime };
  if (e.size !== undefined) out.size = e.size;
  if (e.permission !== undefined) out.permission = e.permission;
  // user.seafile.modifier (xattrs/xattrs.ts)
  if (typeof e.modifier_email === 'string' && e.modifier_email) out.modifier_email = e.modifier_email;
  if (e.is_locked) {
    out.is_locked = true;
    if (e.lock_owner !== undefined) out.lock_owner = e.lock_owner;
    if (e.locked_by_me !== undefined) out.locked_by_me = e.locked_by_me;
  }
  return out;
}

/**
 * Heap bytes of one cached entry, estimated: the object with its few fields (about 100 bytes in V8), its place
 * in the folder's Map (about 40), its strings (name and the 40-character id: header plus a byte a character
 * for one-byte strings, two for others).
 */
export function entryBytes(e: DirEntry): number {
  const str = (v: string) => {
    for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) > 0xff) return 16 + 2 * v.length;
    return 16 + v.length;
  };
  const extra = (v: unknown) => (typeof v === 'string' && v ? str(v) : 0);
  return 140 + str(e.name) + str(e.id) + extra(e.lock_owner) + extra(e.modifier_email);
}
/** a listing's own object, Map and cache slot, and its key */
export const LISTING_BYTES = 300;

/** a listing's key in the cache: library and folder */
export const listingKey = (repo: string, dir: string) => `${repo}\u0000${dir}`;

/** Folders made in the mount that the server may not hold yet (write/pending-folders.ts). */
export interface LocalFolders {
  /** `dir` or a folder above it is not on the server yet: its listing is what the mount holds */
  pendingAt(repo: string, dir: string): boolean;
  /** creations finished so far (noted when a fetch starts) */
  readonly finishedCount: number;
  /** folders of `dir` a listing fetched from the server may lack (not created yet, or created after `since`) */
  dirsIn(repo: string, dir: string, since: number): DirEntry[];
}
