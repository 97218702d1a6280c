// The mount and the passwords of its encrypted libraries: how often the
// client sends each again (servers forget one an hour after it was given),
// and the log lines when it did so by itself.
import type { UnlockEvent } from '../../client/library-passwords.js';
import type { Library } from '../../client/types.js';
import type { LogLevel } from '../log.js';

/**
 * SEAFS_UNLOCK_REFRESH_SEC: seconds between two sends of a library password
 * (default: the client's 45 min); a switch for tests and for servers set to
 * forget sooner. Undefined when unset or not a positive number.
 */
export function unlockRefreshMs(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const v = Number(env.SEAFS_UNLOCK_REFRESH_SEC);
  return env.SEAFS_UNLOCK_REFRESH_SEC && Number.isFinite(v) && v > 0 ? Math.round(v * 1000) : undefined;
}

/**
 * The client's onUnlockAgain for a mount: one line per unlock the server
 * made necessary (info), per failed one (warn), and the routine timed sends
 * at debug level.
 */
export function unlockAgainLog(
  libraryOf: (repo: string) => Promise<Library | undefined>,
  log: (msg: string, level?: LogLevel) => void,
): (ev: UnlockEvent) => void {
  return (ev) =>
    void libraryOf(ev.repo)
      .catch(() => undefined)
      .then((lib) => {
        const name = `library "${lib?.name ?? ev.repo}"`;
        if (ev.error !== undefined) {
          const why = ev.error instanceof Error ? ev.error.message : String(ev.error);
          log(
            `${name}: sending its password again failed (${why}); its files may answer EACCES until it works`,
            'warn',
          );
        } else if (ev.reason === 'refused') {
          log(
            `${name}: the server had forgotten its password (an hour after it was given, or a restart); sent it again`,
          );
        } else {
          log(`${name}: its password sent again, before the server forgets it`, 'debug');
        }
      });
}
