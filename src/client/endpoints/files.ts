// File endpoints on library paths: detail, create, rename, move, copy,
// delete, lock, and the batch copy/move/delete of several names.
// Calls the server may auto-rename are checked against a fresh listing
// after a lost answer before they are sent again (folders.ts).
import type { HttpCore } from '../http.js';
import type { FileDetail } from '../types.js';
import { expectObject } from './expect.js';
import { holds, renamed } from './folders.js';
import { q, repoPath, splitLast } from './paths.js';

export async function fileDetail(http: HttpCore, repoId: string, path: string): Promise<FileDetail> {
  const op = 'file detail';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'file/detail/'),
    query: { p: q(path) },
    retry: 'read',
  });
  return expectObject<FileDetail>(op, r.value, 'id');
}

/** POST .../file/?p= operation=create (201); a clash is auto-renamed by the server, so a lost answer is checked before a resend. */
export async function createFile(http: HttpCore, repoId: string, path: string): Promise<void> {
  const [dir, name] = splitLast(path);
  await http.done({
    op: 'create file',
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path) },
    form: { operation: 'create' },
    retry: 'checked',
    check: () => holds(http, repoId, dir, name, 'file'),
  });
}

/** 301 is success and is not followed; an existing target name is auto-renamed by the server. */
export async function renameFile(http: HttpCore, repoId: string, path: string, newName: string): Promise<void> {
  await http.done({
    op: 'rename file',
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path) },
    form: { operation: 'rename', newname: newName },
    retry: 'checked',
    check: renamed(http, repoId, path, newName, 'file'),
    accept: [301],
  });
}

export function moveFile(http: HttpCore, repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
  return moveOrCopy(http, 'move', repoId, path, dstRepo, dstDir);
}

export function copyFile(http: HttpCore, repoId: string, path: string, dstRepo: string, dstDir: string): Promise<void> {
  return moveOrCopy(http, 'copy', repoId, path, dstRepo, dstDir);
}

/**
 * POST .../file/ operation=move|copy. A move whose answer was lost is done when
 * the file left its folder and is in the target one; a copy is simply resent.
 */
async function moveOrCopy(
  http: HttpCore,
  operation: 'move' | 'copy',
  repoId: string,
  path: string,
  dstRepo: string,
  dstDir: string,
): Promise<void> {
  const check = async () => {
    const [dir, name] = splitLast(path);
    const [src, dst] = await Promise.all([
      holds(http, repoId, dir, name, 'file'),
      holds(http, dstRepo, dstDir, name, 'file'),
    ]);
    return !src && dst;
  };
  await http.done({
    op: `${operation} file`,
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path) },
    form: { operation, dst_repo: dstRepo, dst_dir: q(dstDir) },
    ...(operation === 'move' ? { retry: 'checked' as const, check } : { retry: 'write' as const }),
    accept: [301],
  });
}

/** Real servers answer success for a missing file too. */
export async function deleteFile(http: HttpCore, repoId: string, path: string): Promise<void> {
  await http.done({
    op: 'delete file',
    method: 'DELETE',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path) },
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}

/** PUT .../file/ operation=lock or unlock. */
export async function setFileLock(
  http: HttpCore,
  repoId: string,
  path: string,
  operation: 'lock' | 'unlock',
): Promise<void> {
  await http.done({
    op: `${operation} file`,
    method: 'PUT',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    form: { p: q(path), operation },
    retry: 'write',
  });
}

/** POST .../fileops/{kind}/: several names of one folder at once. */
export async function fileops(
  http: HttpCore,
  kind: 'copy' | 'move' | 'delete',
  repoId: string,
  srcDir: string,
  names: string[],
  dst?: { repo: string; dir: string },
): Promise<void> {
  await http.done({
    op: `batch ${kind}`,
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId, `fileops/${kind}/`),
    query: { p: q(srcDir) },
    form: { p: q(srcDir), file_names: names.join(':'), dst_repo: dst?.repo, dst_dir: dst ? q(dst.dir) : undefined },
    retry: kind === 'delete' ? 'idempotent' : 'write',
    accept: [301],
  });
}
