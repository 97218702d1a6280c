// Copy or move several names of one folder at once. The v2.1 sync-batch
// endpoints take the names as a JSON array; the older api2 fileops joins them
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

/** Whether this server has been found to lack the v2.1 batch endpoints (one per client). */
export interface BatchState {
  legacy: boolean;
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
  if (!state.legacy) {
    try {
      await syncBatch(http, kind, repoId, srcDir, names, dstRepo, dstDir);
      return;
    } catch (e) {
      if (!isApiError(e, 'not_found') || ITS_OWN_404.test(e.serverMessage)) throw e;
      state.legacy = true;
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
