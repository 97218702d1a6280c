// Folder endpoints: listing, mkdir, rename, delete, and the fresh listings
// that answer, after a lost answer, whether a call already did its work.
import { header, protocolError, type HttpCore } from '../http.js';
import type { DirEntry, DirListing } from '../types.js';
import { expectArray } from './expect.js';
import { normalizeDir, q, repoPath, splitLast } from './paths.js';

export async function listDir(
  http: HttpCore,
  repoId: string,
  path: string,
  opts: { oid?: string; type?: 'f' | 'd'; recursive?: boolean },
): Promise<DirListing> {
  const op = 'list folder';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'dir/'),
    query: { p: q(path), oid: opts.oid, t: opts.type, recursive: opts.recursive ? 1 : undefined },
    retry: 'read',
  });
  const oid = header(r.headers, 'oid');
  if (r.value === 'uptodate') return { uptodate: true, oid: opts.oid ?? oid ?? '' };
  const raw = expectArray<Record<string, unknown>>(op, r.value);
  const entries: DirEntry[] = raw.map((e) => {
    if (!e || typeof e !== 'object' || typeof e.name !== 'string' || (e.type !== 'file' && e.type !== 'dir')) {
      throw protocolError(op, `bad folder entry ${JSON.stringify(e)?.slice(0, 200)}`);
    }
    const out = { ...e, mtime: typeof e.mtime === 'number' ? e.mtime : Number(e.mtime ?? 0) || 0 } as DirEntry;
    if (typeof e.parent_dir === 'string') out.parent_dir = normalizeDir(e.parent_dir);
    return out;
  });
  return { uptodate: false, oid, entries };
}

/** The entries of a folder, fresh (for the checks after a lost answer). */
export async function entriesOf(http: HttpCore, repoId: string, dir: string): Promise<DirEntry[]> {
  const l = await listDir(http, repoId, dir, {});
  return l.uptodate ? [] : l.entries;
}

/** Whether folder `dir` holds an entry `name` of `type`. */
export async function holds(
  http: HttpCore,
  repoId: string,
  dir: string,
  name: string,
  type: 'file' | 'dir',
): Promise<boolean> {
  return (await entriesOf(http, repoId, dir)).some((e) => e.name === name && e.type === type);
}

/** After a lost answer of a rename: done when the old name is gone and the new one is there. */
export function renamed(
  http: HttpCore,
  repoId: string,
  path: string,
  newName: string,
  type: 'file' | 'dir',
): () => Promise<boolean> {
  const [dir, name] = splitLast(path);
  return async () => {
    const entries = await entriesOf(http, repoId, dir);
    return (
      !entries.some((e) => e.name === name && e.type === type) &&
      entries.some((e) => e.name === newName && e.type === type)
    );
  };
}

/**
 * POST .../dir/?p= operation=mkdir. Without createParents an existing name
 * is auto-renamed by the server, so after a lost answer the folder is
 * looked for before the request is sent again (found: done).
 */
export async function mkdir(
  http: HttpCore,
  repoId: string,
  path: string,
  opts: { createParents?: boolean },
): Promise<void> {
  const [dir, name] = splitLast(path);
  await http.done({
    op: 'mkdir',
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'dir/'),
    query: { p: q(path) },
    form: { operation: 'mkdir', create_parents: opts.createParents ? 'true' : undefined },
    retry: opts.createParents ? 'idempotent' : 'checked',
    check: () => holds(http, repoId, dir, name, 'dir'),
  });
}

export async function renameDir(http: HttpCore, repoId: string, path: string, newName: string): Promise<void> {
  await http.done({
    op: 'rename folder',
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'dir/'),
    query: { p: q(path) },
    form: { operation: 'rename', newname: newName },
    retry: 'checked',
    check: renamed(http, repoId, path, newName, 'dir'),
    accept: [301],
  });
}

export async function deleteDir(http: HttpCore, repoId: string, path: string): Promise<void> {
  await http.done({
    op: 'delete folder',
    method: 'DELETE',
    repo: repoId,
    url: repoPath(repoId, 'dir/'),
    query: { p: q(path) },
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}
