// Library endpoints: list, create, delete, rename and unlock libraries,
// and share a library with users (personal shares).
import type { HttpCore } from '../http.js';
import type { CreatedLibrary, Library, LibraryInfo, LibraryType } from '../types.js';
import { expectArray, expectObject } from './expect.js';
import { repoPath } from './paths.js';

export async function listLibraries(http: HttpCore, type?: LibraryType): Promise<Library[]> {
  const op = 'list libraries';
  const r = await http.json({ op, method: 'GET', url: '/api2/repos/', query: { type }, retry: 'read' });
  return expectArray<Library>(op, r.value);
}

export async function getLibrary(http: HttpCore, repoId: string): Promise<LibraryInfo> {
  const op = 'library info';
  const r = await http.json({ op, method: 'GET', repo: repoId, url: repoPath(repoId), retry: 'read' });
  return expectObject<LibraryInfo>(op, r.value, 'id');
}

/** POST /api2/repos/; with `password` the library is encrypted. */
export async function createLibrary(
  http: HttpCore,
  name: string,
  opts: { desc?: string; password?: string },
): Promise<CreatedLibrary> {
  const op = 'create library';
  const r = await http.json({
    op,
    method: 'POST',
    url: '/api2/repos/',
    form: { name, desc: opts.desc ?? 'new repo', passwd: opts.password },
    retry: 'write',
  });
  return expectObject<CreatedLibrary>(op, r.value, 'repo_id');
}

export async function deleteLibrary(http: HttpCore, repoId: string): Promise<void> {
  await http.done({
    op: 'delete library',
    method: 'DELETE',
    repo: repoId,
    url: repoPath(repoId),
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}

/** POST /api2/repos/{id}/?op=rename: libraries are renamed as asked (no auto-rename), so this is idempotent. */
export async function renameLibrary(http: HttpCore, repoId: string, newName: string): Promise<void> {
  await http.done({
    op: 'rename library',
    method: 'POST',
    repo: repoId,
    url: repoPath(repoId),
    query: { op: 'rename' },
    form: { repo_name: newName },
    retry: 'idempotent',
  });
}

/** POST /api2/repos/{id}/ with the password (the client remembers it, see SeafileClient.unlockLibrary). */
export async function unlockLibrary(http: HttpCore, repoId: string, password: string): Promise<void> {
  await http.done({
    op: 'unlock library',
    method: 'POST',
    url: repoPath(repoId),
    form: { password },
    retry: 'idempotent',
  });
}

/** PUT /api2/shared-repos/{repo}/ with share_type=personal: shares a library with users. */
export async function shareLibrary(
  http: HttpCore,
  repoId: string,
  users: string[],
  permission: 'r' | 'rw',
): Promise<void> {
  await http.done({
    op: 'share library',
    method: 'PUT',
    url: `/api2/shared-repos/${encodeURIComponent(repoId)}/`,
    query: { share_type: 'personal', users: users.join(','), permission },
    retry: 'idempotent',
  });
}

export async function unshareLibrary(http: HttpCore, repoId: string, user: string): Promise<void> {
  await http.done({
    op: 'unshare library',
    method: 'DELETE',
    url: `/api2/shared-repos/${encodeURIComponent(repoId)}/`,
    query: { share_type: 'personal', user },
    retry: 'idempotent',
  });
}
