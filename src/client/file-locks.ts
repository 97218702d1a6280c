// File locks exist on Seafile Pro only. On Community Edition (seahub 10) a
// lock answers 500 with an HTML page (seahub calls a lock function CE's
// seaserv lacks) and every unlock answers 403 "File is not locked"; listings
// carry no is_locked. The client learns once whether the server has locks:
// from /api2/server-info/ (features list "seafile-pro" on Pro, only
// "seafile-basic" on CE: seahub api2/views_misc.py ServerInfoView), or, when
// that says nothing, from those two answers. Without locks, lock and unlock
// fail at once with `unsupported` and no request; the failing lock is never
// retried (its retry class 'write' sends a 5xx back at once).
import { ApiError, isApiError } from './errors.js';
import type { HttpCore } from './http.js';
import { setFileLock } from './endpoints/files.js';
import { serverInfo } from './endpoints/session.js';
import type { ServerInfo } from './types.js';

export const NO_FILE_LOCKS = 'this server does not support file locks';

export type LockSupport = 'yes' | 'no' | 'unknown';

/** What server-info's features say about locks (an old server without features says nothing). */
export function lockSupportOf(info: Pick<ServerInfo, 'features'>): LockSupport {
  const f = Array.isArray(info.features) ? info.features : [];
  if (f.includes('seafile-pro')) return 'yes';
  if (f.includes('seafile-basic')) return 'no';
  return 'unknown';
}

const NOT_LOCKED = /^file is not locked/i;

export class FileLocks {
  private learned: LockSupport = 'unknown';
  private asked: Promise<LockSupport> | null = null;

  constructor(private readonly http: HttpCore) {}

  /** Whether the server has file locks; false only once it is known not to. */
  async supported(): Promise<boolean> {
    return (await this.support()) !== 'no';
  }

  private support(): Promise<LockSupport> {
    if (this.learned !== 'unknown') return Promise.resolve(this.learned);
    this.asked ??= serverInfo(this.http).then(
      (info) => {
        const s = lockSupportOf(info);
        if (this.learned === 'unknown') this.learned = s;
        return s;
      },
      // unreachable now: ask again next time, and let the lock call itself tell
      () => {
        this.asked = null;
        return 'unknown' as const;
      },
    );
    return this.asked;
  }

  async set(repoId: string, path: string, operation: 'lock' | 'unlock'): Promise<void> {
    const s = await this.support();
    if (s === 'no') throw unsupported(operation, 0);
    try {
      await setFileLock(this.http, repoId, path, operation);
    } catch (e) {
      if (!isApiError(e)) throw e;
      // Pro: the file is not locked by anyone, which is what an unlock asks for
      if (operation === 'unlock' && e.status === 403 && NOT_LOCKED.test(e.serverMessage) && s === 'yes') return;
      const ceAnswer =
        (operation === 'lock' && e.status === 500) ||
        (operation === 'unlock' && e.status === 403 && NOT_LOCKED.test(e.serverMessage));
      if (s === 'unknown' && ceAnswer) {
        this.learned = 'no';
        throw unsupported(operation, e.status, e);
      }
      throw e;
    }
    if (s === 'unknown') this.learned = 'yes';
  }
}

function unsupported(operation: string, status: number, cause?: unknown): ApiError {
  return new ApiError({
    kind: 'unsupported',
    status,
    operation: `${operation} file`,
    serverMessage: NO_FILE_LOCKS,
    cause,
  });
}
