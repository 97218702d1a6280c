// Seafile file locks from the mount (`seafs lock`, `seafs unlock-file`, the
// user.seafile.lock attribute). Only Seafile Pro has them; on any other
// server every way in fails with ENOTSUP and one clear message, never a
// server error (the client learns once whether the server has them).
import { isApiError } from '../../client/errors.js';
import type { SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';

export const NO_FILE_LOCKS = 'this server does not support file locks';

/** Whether the server has locks; an unanswered question counts as yes (the lock call will tell). */
export async function locksSupported(api: SeafileApi): Promise<boolean> {
  if (!api.lockFile || !api.unlockFile) return false;
  if (!api.supportsFileLocks) return true;
  return api.supportsFileLocks().catch(() => true);
}

/** Lock (on) or unlock a file on the server for this account. */
export async function setServerLock(api: SeafileApi, repo: string, path: string, on: boolean): Promise<void> {
  if (!(await locksSupported(api))) throw new VfsError('ENOTSUP', NO_FILE_LOCKS);
  try {
    await (on ? api.lockFile! : api.unlockFile!).call(api, repo, path);
  } catch (e) {
    if (isApiError(e, 'unsupported')) throw new VfsError('ENOTSUP', NO_FILE_LOCKS, { cause: e });
    throw e;
  }
}
