// Encrypted libraries seen from the mount. The password itself lives in the
// client, which remembers it, sends it again on a timer, and unlocks again when
// the server forgot it anyway (an hour after it was given, a restart); this module unlocks with a password the user gave,
// turns a refused password into one clear error, and says once per library
// that a library is locked (reads answer EACCES and uploads wait), instead of
// a log line per refused call or upload retry.
import { ApiError, isApiError } from '../../client/errors.js';
import type { Library, SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';

/** The server refused the password of an encrypted library. */
export class WrongLibraryPassword extends VfsError {
  constructor(readonly library: string) {
    super('EACCES', `wrong password for the encrypted library "${library}"`);
  }
}

/** EACCES inside a locked library: the log has said so once, the FUSE layer logs it no more (`quiet`). */
export class LockedLibraryError extends VfsError {
  readonly quiet = true;
  constructor(library: string) {
    super('EACCES', `the library "${library}" is encrypted and locked`);
  }
}

/** A call refused because its encrypted library is locked (the server wants the password first). */
export function lockedLibrary(e: unknown): boolean {
  return isApiError(e, 'password_required');
}

export class LibraryLocks {
  /** libraries whose locked state the log has already told */
  private readonly told = new Set<string>();
  /** libraries this mount unlocked (it holds their passwords) */
  private readonly opened = new Set<string>();

  constructor(
    private readonly api: Pick<SeafileApi, 'unlockLibrary'>,
    private readonly log: (msg: string) => void,
    /** what the log tells a user to run (all-libraries mode); null: the mount holds the password */
    private readonly hint: ((lib: Library) => string) | null,
  ) {}

  /** Unlocks `lib` with `password`; a refused password is a WrongLibraryPassword. */
  async unlock(lib: Library, password: string): Promise<void> {
    try {
      await this.api.unlockLibrary(lib.id, password);
    } catch (e) {
      // servers answer a wrong password with 400 ("Wrong password" / "Incorrect password")
      if (
        e instanceof ApiError &&
        (e.kind === 'password_required' || e.kind === 'bad_request' || e.kind === 'forbidden')
      ) {
        throw new WrongLibraryPassword(lib.name);
      }
      throw e;
    }
    this.told.delete(lib.id);
    this.opened.add(lib.id);
  }

  /**
   * All-libraries mode: an encrypted library this mount holds no password
   * for answers EACCES (servers list such a library but refuse its content,
   * which would make files appear that cannot be read).
   */
  requireOpen(lib: Library): void {
    if (!lib.encrypted || this.opened.has(lib.id)) return;
    this.tell(lib);
    throw new LockedLibraryError(lib.name);
  }

  /** Called with every failure of a call on library `lib`: logs once while it stays locked. */
  noteFailure(lib: Library | undefined, e: unknown): void {
    if (lib && lockedLibrary(e)) this.tell(lib);
  }

  private tell(lib: Library): void {
    if (this.told.has(lib.id)) return;
    this.told.add(lib.id);
    const how = this.hint ? `: ${this.hint(lib)}` : ' and the password the mount holds no longer opens it';
    this.log(`library "${lib.name}" is encrypted and locked; its files answer EACCES and uploads into it wait${how}`);
  }
}

/** The library a call is about: its first argument, or a file-server call's `repoId` option (its first is a URL). */
function repoOf(args: unknown[]): string | undefined {
  if (typeof args[0] === 'string' && !args[0].includes('://')) return args[0];
  for (const a of args) {
    const id = (a as { repoId?: unknown } | null)?.repoId;
    if (a && typeof a === 'object' && typeof id === 'string') return id;
  }
  return undefined;
}

/** `api` whose refusals for want of a library password are reported to `onLocked` with the library id. */
export function watchLocked(api: SeafileApi, onLocked: (repo: string, e: unknown) => void): SeafileApi {
  return new Proxy(api, {
    get: (target, prop, receiver) => {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const out: unknown = v.apply(target, args);
        if (!(out instanceof Promise)) return out;
        return out.catch((e: unknown) => {
          const repo = lockedLibrary(e) ? repoOf(args) : undefined;
          if (repo !== undefined) onLocked(repo, e);
          throw e;
        });
      };
    },
  });
}
