// open(2) and create(2): a handle on a clean server file (read from the
// server), or on local data (written here, or an editable copy of the server's
// file fetched first); createNow starts a new small file in memory at once.
import { constants as C } from 'node:fs';
import { absentNow } from '../attributes/path-attrs.js';
import { lookupEntry } from '../attributes/lookups.js';
import { baseOf, checkChangeAt, checkName } from '../common/paths.js';
import { refuseLocked, remoteFileOf } from '../copies/editable-copy.js';
import { officeChange, type VfsCore } from '../core.js';
import { VfsError } from '../errors.js';
import { writable } from '../libraries/library-paths.js';
import { isLinkFileName } from '../links/link-names.js';

const NEW_PATTERN = () => ({ next: 0, window: 0 });

export async function open({ parts, handles }: VfsCore, p: string, flags: number): Promise<number> {
  const loc = await parts.libraries.resolve(p);
  if (loc.repo === null || loc.path === '/') throw new VfsError('EISDIR');
  const repo = loc.repo;
  const path = loc.path;
  const acc = flags & 3;
  const trunc = (flags & C.O_TRUNC) !== 0;
  const wantWrite = acc !== C.O_RDONLY || trunc;
  const hid = await parts.hiddenDirs.at(loc);
  if (hid) {
    if (wantWrite) throw new VfsError('EROFS', p);
    if (hid.kind === 'dir') throw new VfsError('EISDIR', p);
    return handles.add({ kind: 'remote', repo, path, remote: hid.remote, pattern: NEW_PATTERN() });
  }
  if (wantWrite) {
    writable(loc);
    checkChangeAt(path);
  }
  let s = parts.writeBack.get(repo, path);
  if (!wantWrite) {
    if (s) {
      s.opened(false);
      return handles.add({ kind: 'local', repo, path, state: s, write: false });
    }
    const e = await lookupEntry(parts, repo, path);
    if (!e) throw new VfsError('ENOENT', p);
    if (e.type === 'dir') throw new VfsError('EISDIR', p);
    return handles.add({
      kind: 'remote',
      repo,
      path,
      remote: remoteFileOf(repo, path, e),
      pattern: NEW_PATTERN(),
    });
  }
  if (!s) {
    const e = await lookupEntry(parts, repo, path);
    if (!e) throw new VfsError('ENOENT', p);
    if (e.type === 'dir') throw new VfsError('EISDIR', p);
    refuseLocked(p, e);
    const remote = remoteFileOf(repo, path, e);
    s = await parts.writeBack.openExisting(
      repo,
      path,
      { size: remote.size, mtimeMs: e.mtime * 1000, id: e.id },
      trunc,
      (dest) => parts.reader.downloadWhole(remote, dest),
    );
  }
  if (trunc && s.size > 0) await parts.writeBack.truncate(s, 0);
  s.opened(acc !== C.O_RDONLY);
  return handles.add({ kind: 'local', repo, path, state: s, write: acc !== C.O_RDONLY });
}

/** create, for any name (a link's stored file too) */
export async function createFile(core: VfsCore, p: string): Promise<number> {
  const { parts } = core;
  const loc = await parts.libraries.repoOf(p, true);
  writable(loc);
  if (loc.path === '/') throw new VfsError('EISDIR');
  await parts.hiddenDirs.refuse(loc);
  checkName(baseOf(loc.path));
  parts.rules.checkName(baseOf(loc.path));
  const repo = loc.repo;
  let s = parts.writeBack.get(repo, loc.path);
  if (!s) {
    const e = await lookupEntry(parts, repo, loc.path);
    if (e?.type === 'dir') throw new VfsError('EISDIR', p);
    if (e) return open(core, p, C.O_RDWR);
    s = await parts.writeBack.createNew(repo, loc.path);
  }
  s.opened(true);
  void officeChange(core, p, 'created');
  return core.handles.add({ kind: 'local', repo, path: loc.path, state: s, write: true });
}

/**
 * create, done at once for a new name that a fresh listing lacks, in a
 * writable library, when the file can start in memory: the new handle,
 * or null when create must run (it decides everything else).
 */
export function createNow(core: VfsCore, p: string): number | null {
  const { parts } = core;
  const loc = parts.libraries.resolveNow(p);
  if (!loc || loc.readOnly || !absentNow(core, p)) return null;
  if (core.links && isLinkFileName(baseOf(loc.path))) return null;
  try {
    checkName(baseOf(loc.path));
    parts.rules.checkName(baseOf(loc.path));
    checkChangeAt(loc.path);
  } catch {
    return null;
  }
  const s = parts.writeBack.createInMemory(loc.repo, loc.path);
  if (!s) return null;
  s.opened(true);
  if (core.officeLocks) void core.officeLocks.created(loc.repo, loc.path);
  return core.handles.add({ kind: 'local', repo: loc.repo, path: loc.path, state: s, write: true });
}
