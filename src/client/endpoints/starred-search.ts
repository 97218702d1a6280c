// Starred files and full-text search.
import type { HttpCore } from '../http.js';
import type { SearchResult, StarredFile } from '../types.js';
import { expectArray, expectObject } from './expect.js';
import { q } from './paths.js';

export async function listStarred(http: HttpCore): Promise<StarredFile[]> {
  const op = 'list starred files';
  const r = await http.json({ op, method: 'GET', url: '/api2/starredfiles/', retry: 'read' });
  return expectArray<StarredFile>(op, r.value);
}

export async function starFile(http: HttpCore, repoId: string, path: string): Promise<void> {
  await http.done({
    op: 'star file',
    method: 'POST',
    url: '/api2/starredfiles/',
    form: { repo_id: repoId, p: q(path) },
    retry: 'idempotent',
  });
}

export async function unstarFile(http: HttpCore, repoId: string, path: string): Promise<void> {
  await http.done({
    op: 'unstar file',
    method: 'DELETE',
    url: '/api2/starredfiles/',
    query: { repo_id: repoId, p: q(path) },
    retry: 'idempotent',
  });
}

export async function search(http: HttpCore, query: string, opts: { perPage?: number }): Promise<SearchResult> {
  const op = 'search';
  const r = await http.json({
    op,
    method: 'GET',
    url: '/api2/search/',
    query: { q: query, per_page: opts.perPage },
    retry: 'read',
  });
  const o = expectObject<SearchResult>(op, r.value, 'results');
  expectArray(op, o.results);
  return o;
}
