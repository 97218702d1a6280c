// The quota as the mount knows it: statfs, and ENOSPC at close when a file
// cannot fit (its data stays in the journal and goes once there is room),
// rather than an upload failing later. The server charges an upload to the
// quota of the library's owner (seaf_quota_manager_check_quota_with_delta
// takes the library), and the API tells an account only its own quota
// (/api2/account/info/). So only libraries the account owns are checked at
// close; in a library shared with it, the server decides (its 443 is ENOSPC
// at the next fsync or close, the data kept and retried), and statfs there
// shows that library's size as used with no limit, the owner's being unknown.
import type { AccountInfo, Library, SeafileApi } from '../../client/types.js';
import { statfsOf, type StatFs } from '../common/stat-attrs.js';
import { unreachable } from '../common/connectivity.js';
import { VfsError } from '../errors.js';
import type { Libraries } from '../libraries/library-paths.js';
import type { FileState } from './write-back.js';

const FRESH_MS = 30_000;

export class Quota {
  private cache: { at: number; info: AccountInfo } | null = null;

  constructor(
    private readonly api: SeafileApi,
    private readonly libraries: Libraries,
    /** the size the server has now at the file's path (0: none): replaced bytes are freed */
    private readonly remoteSize: (s: FileState) => number,
  ) {}

  /** the account's usage and quota, asked at most every 30 s (or afresh when older than `maxAgeMs`) */
  async account(maxAgeMs = FRESH_MS): Promise<AccountInfo> {
    const c = this.cache;
    if (c && Date.now() - c.at < maxAgeMs) return c.info;
    const info = await this.api.accountInfo();
    this.cache = { at: Date.now(), info };
    return info;
  }

  /** space was freed: the next check asks afresh */
  forget(): void {
    this.cache = null;
  }

  /** statfs of a path in library `repo` (null: the root of all libraries) */
  async statfs(repo: string | null): Promise<StatFs> {
    let info: AccountInfo;
    try {
      info = await this.account();
    } catch (e) {
      // a mount started offline has never heard the quota: no limit shown, rather than df failing
      if (!unreachable(e)) throw e;
      return statfsOf({ usage: (repo && this.libraries.peekById(repo)?.size) || 0, total: -2 } as AccountInfo);
    }
    const lib = repo === null ? undefined : await this.libraries.byId(repo);
    if (lib && !owns(lib, info)) return statfsOf({ ...info, usage: lib.size, total: -2 });
    return statfsOf(info);
  }

  /**
   * The quota as last heard can take the file (true), cannot (false), or
   * has nothing to say (null: never asked, or heard too long ago).
   */
  fitsNow(s: FileState): boolean | null {
    const c = this.cache;
    if (!c || Date.now() - c.at >= FRESH_MS) return null;
    return this.fits(s, c.info);
  }

  /** ENOSPC when the account's quota cannot hold the file; a stale answer that says no is checked afresh */
  async checkRoom(s: FileState): Promise<void> {
    try {
      if (this.fits(s, await this.account()) || this.fits(s, await this.account(2000))) return;
    } catch {
      return; // not known (offline): the upload will tell
    }
    throw new VfsError('ENOSPC', `${s.path} (${s.size} bytes) does not fit in the account's quota`);
  }

  private fits(s: FileState, info: AccountInfo): boolean {
    if (!(info.total > 0)) return true;
    // someone else's library: charged to its owner, whose quota only the server knows
    const lib = this.libraries.peekById(s.repo);
    if (!lib || !owns(lib, info)) return true;
    return info.usage - this.remoteSize(s) + s.size <= info.total;
  }
}

/** the account owns the library (its own, not one shared with it) */
function owns(lib: Library, info: AccountInfo): boolean {
  return lib.type === 'repo' && lib.owner === info.email;
}
