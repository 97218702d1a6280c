// History endpoints: a library's commits (api2 and v2.1 pages), its trash,
// a file's revisions, a download link of one revision, and a folder put back
// from a commit (the trash's restore, a version made current again).
import type { HttpCore } from '../http.js';
import type { CommitRecord, LibraryHistory, LibraryHistoryPage, TrashPage } from '../types.js';
import { expectArray, expectObject, expectString } from './expect.js';
import { q, repoPath } from './paths.js';

export async function libraryHistory(http: HttpCore, repoId: string): Promise<LibraryHistory> {
  const op = 'library history';
  const r = await http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId, 'history/'), retry: 'read' });
  const o = expectObject<LibraryHistory>(op, r.value, 'commits');
  expectArray(op, o.commits);
  o.page_next = !!o.page_next;
  return o;
}

export async function libraryHistoryV21(
  http: HttpCore,
  repoId: string,
  opts: { page?: number; perPage?: number },
): Promise<LibraryHistoryPage> {
  const op = 'library history (v2.1)';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: `/api/v2.1/repos/${encodeURIComponent(repoId)}/history/`,
    query: { page: opts.page, per_page: opts.perPage },
    retry: 'read',
  });
  const o = expectObject<LibraryHistoryPage>(op, r.value, 'data');
  expectArray(op, o.data);
  o.more = !!o.more;
  return o;
}

/** One page of the trash; pass the previous page's `scan_stat` to continue. */
export async function libraryTrash(
  http: HttpCore,
  repoId: string,
  opts: { path?: string; perPage?: number; scanStat?: string | null },
): Promise<TrashPage> {
  const op = 'library trash';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: `/api/v2.1/repos/${encodeURIComponent(repoId)}/trash/`,
    query: { path: opts.path, per_page: opts.perPage, scan_stat: opts.scanStat ?? undefined },
    retry: 'read',
  });
  const o = expectObject<TrashPage>(op, r.value, 'data');
  expectArray(op, o.data);
  o.more = !!o.more;
  o.scan_stat = o.scan_stat ?? null;
  return o;
}

export async function fileHistory(http: HttpCore, repoId: string, path: string): Promise<CommitRecord[]> {
  const op = 'file history';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'file/history/'),
    query: { p: q(path) },
    retry: 'read',
  });
  const o = expectObject<{ commits: unknown }>(op, r.value, 'commits');
  return expectArray<CommitRecord>(op, o.commits);
}

/** A download URL of the file as it was at `commitId`. */
export async function fileRevisionLink(
  http: HttpCore,
  repoId: string,
  path: string,
  commitId: string,
): Promise<string> {
  const op = 'file revision link';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'file/revision/'),
    query: { p: q(path), commit_id: commitId },
    retry: 'read',
  });
  return expectString(op, r.value);
}

/** PUT /api2/repos/{id}/{file,dir}/revert/: `path` as it was at `commitId` is put back (a new version, or a
 * trashed file or folder restored). */
export async function revert(
  http: HttpCore,
  kind: 'file' | 'dir',
  repoId: string,
  path: string,
  commitId: string,
): Promise<void> {
  await http.done({
    op: `revert ${kind === 'dir' ? 'folder' : 'file'}`,
    method: 'PUT',
    repo: repoId,
    url: repoPath(repoId, `${kind}/revert/`),
    form: { p: q(path), commit_id: commitId },
    retry: 'write',
  });
}
