// Folder trees over the object store. A folder object is the sorted list of
// its entries; its id is the sha1 of that list, so a folder's id changes
// exactly when its content changes (recursively), and an update rewrites only
// the spine from the changed folder up to the root.
import { type ObjectStore, ZERO_ID } from './objects.js';
import { HttpError } from '../http.js';

export interface DirEnt {
  name: string;
  type: 'file' | 'dir';
  id: string;
  mtime: number; // epoch seconds
  size: number; // files: bytes; folders: total bytes below (internal, not listed)
  modifier: string; // e-mail of the last writer
}

export async function readDir(store: ObjectStore, id: string): Promise<DirEnt[]> {
  if (id === ZERO_ID) return [];
  return store.getJson<DirEnt[]>(id);
}

export function writeDir(store: ObjectStore, entries: DirEnt[]): string {
  if (entries.length === 0) return ZERO_ID;
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return store.putJson(sorted);
}

export function totalSize(entries: DirEnt[]): number {
  let s = 0;
  for (const e of entries) s += e.size;
  return s;
}

/** Splits a library path into components; rejects `.` and `..`. */
export function splitPath(p: string): string[] {
  const comps = p.split('/').filter((c) => c !== '');
  for (const c of comps) if (c === '.' || c === '..') throw new HttpError(400, 'Path invalid.');
  return comps;
}

export function joinPath(comps: string[]): string {
  return '/' + comps.join('/');
}

export function parentAndName(p: string): { parent: string[]; name: string } {
  const comps = splitPath(p);
  if (comps.length === 0) throw new HttpError(400, 'Path invalid.');
  return { parent: comps.slice(0, -1), name: comps[comps.length - 1] };
}

/** The entry at `comps` (the root itself is a synthetic folder entry), or null. */
export async function lookup(store: ObjectStore, rootId: string, comps: string[]): Promise<DirEnt | null> {
  let cur: DirEnt = { name: '', type: 'dir', id: rootId, mtime: 0, size: 0, modifier: '' };
  for (const c of comps) {
    if (cur.type !== 'dir') return null;
    const found = (await readDir(store, cur.id)).find((e) => e.name === c);
    if (!found) return null;
    cur = found;
  }
  return cur;
}

export class TreeNotFound extends Error {
  constructor(readonly missing: string[]) {
    super('not found: /' + missing.join('/'));
  }
}

/**
 * Rewrites the folder at `comps` with `fn(entries)` and returns the new root
 * id. Missing folders on the way throw TreeNotFound unless `createParents`.
 * A folder whose content did not change keeps its id (and its mtime).
 */
export async function updateDir(
  store: ObjectStore,
  rootId: string,
  comps: string[],
  fn: (entries: DirEnt[]) => DirEnt[] | Promise<DirEnt[]>,
  opts: { now: number; modifier: string; createParents?: boolean },
): Promise<string> {
  const walk = async (dirId: string, depth: number): Promise<{ id: string; size: number }> => {
    const entries = [...(await readDir(store, dirId))];
    if (depth === comps.length) {
      const next = await fn(entries);
      const id = await writeDir(store, next);
      return { id, size: totalSize(next) };
    }
    const name = comps[depth];
    let idx = entries.findIndex((e) => e.name === name);
    let created = false;
    if (idx < 0 || entries[idx].type !== 'dir') {
      if (!opts.createParents || idx >= 0) throw new TreeNotFound(comps.slice(0, depth + 1));
      entries.push({ name, type: 'dir', id: ZERO_ID, mtime: opts.now, size: 0, modifier: opts.modifier });
      idx = entries.length - 1;
      created = true;
    }
    const child = entries[idx];
    const r = await walk(child.id, depth + 1);
    // unchanged below: keep this folder's id and mtime
    if (!created && r.id === child.id) return { id: dirId, size: totalSize(entries) };
    entries[idx] = { ...child, id: r.id, size: r.size, mtime: opts.now, modifier: opts.modifier };
    const id = await writeDir(store, entries);
    return { id, size: totalSize(entries) };
  };
  return (await walk(rootId, 0)).id;
}

/** Visits every entry below `comps` depth-first; `visit` gets the parent path components. */
export async function walkTree(
  store: ObjectStore,
  dirId: string,
  parent: string[],
  visit: (e: DirEnt, parent: string[]) => boolean | void,
): Promise<void> {
  for (const e of await readDir(store, dirId)) {
    if (visit(e, parent) === false) continue;
    if (e.type === 'dir') await walkTree(store, e.id, [...parent, e.name], visit);
  }
}
