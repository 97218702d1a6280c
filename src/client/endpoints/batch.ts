// Copy, move or delete several names of one folder at once. The v2.1
// endpoints (sync-batch-{copy,move}-item, batch-delete-item) take the names as
// a JSON array; the older api2 fileops joins them
// with ':' and the server splits them again, so a name holding ':' (a folder
// "a:b") cannot go through fileops at all. fileops is used only on a server
// without the v2.1 endpoints (it answers 404), and from then on.
//
// What seahub 10 answers (api2/endpoints/repos_batch.py and the C
// move_multiple_files): {"success": true} also when a name is missing (nothing
// moves), and a clash in the destination is auto-renamed "name (1)"; so the
// caller checks where things landed.
import { isApiError } from '../errors.js';
import type { HttpCore } from '../http.js';
import { entriesOf } from './folders.js';
import { fileops } from './files.js';
import { normalizeDir, q } from './paths.js';

/** The v2.1 batch endpoints this server was found to lack (one record per client). */
export interface BatchState {
  missing: Set<'transfer' | 'delete'>;
}

/** The 404s of the endpoint itself: a missing library or folder, not a missing endpoint. */
const ITS_OWN_404 = /^(Library|Folder) .* not found\.?$/i;

export async function batchTransfer(
  http: HttpCore,
  state: BatchState,
  kind: 'copy' | 'move',
  repoId: string,
  srcDir: string,
  names: string[],
  dstRepo: string,
  dstDir: string,
): Promise<void> {
  if (names.length === 0) return;
  if (!state.missing.has('transfer')) {
    try {
      await syncBatch(http, kind, repoId, srcDir, names, dstRepo, dstDir);
      return;
    } catch (e) {
      if (!isApiError(e, 'not_found') || ITS_OWN_404.test(e.serverMessage)) throw e;
      state.missing.add('transfer');
    }
  }
  await fileops(http, kind, repoId, srcDir, names, { repo: dstRepo, dir: dstDir });
}

/**
 * POST /api/v2.1/repos/sync-batch-{move,copy}-item/ with a JSON body. A move
 * whose answer was lost is done when every name left the source folder and is
 * in the destination; a copy is sent again only when it cannot have run.
 */
async function syncBatch(
  http: HttpCore,
  kind: 'copy' | 'move',
  repoId: string,
  srcDir: string,
  names: string[],
  dstRepo: string,
  dstDir: string,
): Promise<void> {
  const moved = async () => {
    const [src, dst] = await Promise.all([entriesOf(http, repoId, srcDir), entriesOf(http, dstRepo, dstDir)]);
    return names.every((n) => !src.some((e) => e.name === n) && dst.some((e) => e.name === n));
  };
  await http.done({
    op: `batch ${kind}`,
    method: 'POST',
    repo: repoId,
    url: `/api/v2.1/repos/sync-batch-${kind}-item/`,
    json: {
      src_repo_id: repoId,
      src_parent_dir: q(normalizeDir(srcDir)),
      src_dirents: names,
      dst_repo_id: dstRepo,
      dst_parent_dir: q(normalizeDir(dstDir)),
    },
    ...(kind === 'move' ? { retry: 'checked' as const, check: moved } : { retry: 'write' as const }),
  });
}

/**
 * DELETE /api/v2.1/repos/batch-delete-item/ with a JSON body (fileops/delete
 * on servers without it). Deleting again is harmless, and seahub answers
 * success for names that are not there.
 */
export async function batchDelete(
  http: HttpCore,
  state: BatchState,
  repoId: string,
  dir: string,
  names: string[],
): Promise<void> {
  if (names.length === 0) return;
  if (!state.missing.has('delete')) {
    try {
      await http.done({
        op: 'batch delete',
        method: 'DELETE',
        repo: repoId,
        url: '/api/v2.1/repos/batch-delete-item/',
        json: { repo_id: repoId, parent_dir: q(normalizeDir(dir)), dirents: names },
        retry: 'idempotent',
      });
      return;
    } catch (e) {
      if (!isApiError(e, 'not_found') || ITS_OWN_404.test(e.serverMessage)) throw e;
      state.missing.add('delete');
    }
  }
  await fileops(http, 'delete', repoId, dir, names);
}
