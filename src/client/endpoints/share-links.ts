// Public links (API v2.1): share links of files and folders, and public
// upload links (not to be confused with a folder's upload link, uploads.ts).
import type { HttpCore } from '../http.js';
import type { ShareLink, UploadLinkShare } from '../types.js';
import { expectArray, expectObject } from './expect.js';
import { q } from './paths.js';

export async function createShareLink(
  http: HttpCore,
  repoId: string,
  path: string,
  opts: { password?: string; expireDays?: number },
): Promise<ShareLink> {
  const op = 'create share link';
  const r = await http.json({
    op,
    method: 'POST',
    url: '/api/v2.1/share-links/',
    form: { repo_id: repoId, path: q(path), password: opts.password, expire_days: opts.expireDays },
    retry: 'write',
  });
  return expectObject<ShareLink>(op, r.value, 'token');
}

export async function listShareLinks(http: HttpCore, opts: { repoId?: string; path?: string }): Promise<ShareLink[]> {
  const op = 'list share links';
  const r = await http.json({
    op,
    method: 'GET',
    url: '/api/v2.1/share-links/',
    query: { repo_id: opts.repoId, path: opts.path },
    retry: 'read',
  });
  return expectArray<ShareLink>(op, r.value);
}

export async function deleteShareLink(http: HttpCore, token: string): Promise<void> {
  await http.done({
    op: 'delete share link',
    method: 'DELETE',
    url: `/api/v2.1/share-links/${encodeURIComponent(token)}/`,
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}

export async function createPublicUploadLink(
  http: HttpCore,
  repoId: string,
  path: string,
  opts: { password?: string },
): Promise<UploadLinkShare> {
  const op = 'create upload link share';
  const r = await http.json({
    op,
    method: 'POST',
    url: '/api/v2.1/upload-links/',
    form: { repo_id: repoId, path: q(path), password: opts.password },
    retry: 'write',
  });
  return expectObject<UploadLinkShare>(op, r.value, 'token');
}

export async function listPublicUploadLinks(http: HttpCore): Promise<UploadLinkShare[]> {
  const op = 'list upload link shares';
  const r = await http.json({ op, method: 'GET', url: '/api/v2.1/upload-links/', retry: 'read' });
  return expectArray<UploadLinkShare>(op, r.value);
}

export async function deletePublicUploadLink(http: HttpCore, token: string): Promise<void> {
  await http.done({
    op: 'delete upload link share',
    method: 'DELETE',
    url: `/api/v2.1/upload-links/${encodeURIComponent(token)}/`,
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}
