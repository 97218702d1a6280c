// What the mount adapts to the server's version and account: server-info's
// version and the account's own id from /api2/account/info/ (from Seafile 11.0
// a virtual `<hex>@auth.local` in `email`, which owner, modifier and
// lock_owner carry, while the login e-mail is `contact_email`). Users are
// compared with that id, never the login name. From 13.0, create and rename
// refuse names holding "..", a backslash, an emoji or over 255 bytes: the
// mount answers EINVAL at once (and logs why) instead of a change the server
// would refuse. From 12.0 files of unencrypted libraries are read through the
// file server's direct URL (read/download-links.ts).
import type { SeafileApi } from '../../client/types.js';
import { RefusedName } from './paths.js';

export interface ServerRulesStatus {
  version: string | null;
  /** the account's id is virtual (Seafile 11.0+) */
  virtualIds: boolean;
  /** names are checked as 13.0 does */
  strictNames: boolean;
  /** files are read through the file server's direct URL (12.0+) */
  directDownload?: boolean;
}

/** [major, minor, patch] of server-info's version; null when it is not one */
function parse(v: string): [number, number, number] | null {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(v.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** Why Seafile 13.0 refuses `name` in create and rename, or null. */
export function strictNameProblem(name: string): string | null {
  if (name.includes('..')) return 'it holds ".."';
  if (name.includes('\\')) return 'it holds a backslash';
  if (/[\u{1F300}-\u{1FAD6}]/u.test(name)) return 'it holds an emoji';
  if (Buffer.byteLength(name, 'utf8') > 255) return 'it is over 255 bytes';
  return null;
}

export class ServerRules {
  version: string | null = null;
  /** the account's own id (account info's `email`); null until asked */
  accountId: string | null = null;

  /** asks server-info and account info in the background; failures leave the defaults */
  learn(api: Pick<SeafileApi, 'serverInfo' | 'accountInfo'>): void {
    void api.serverInfo?.().then(
      (i) => void (this.version = String(i.version)),
      () => {},
    );
    void api.accountInfo().then(
      (a) => void (this.accountId = a.email || null),
      () => {},
    );
  }

  private atLeast(major: number): boolean {
    const v = this.version === null ? null : parse(this.version);
    return v !== null && v[0] >= major;
  }

  get strictNames(): boolean {
    return this.atLeast(13);
  }

  /** the file server's direct download (12.0+) */
  get directDownload(): boolean {
    return this.atLeast(12);
  }

  get virtualIds(): boolean {
    return this.accountId?.endsWith('@auth.local') ?? false;
  }

  /** EINVAL (logged by the FUSE adapter) for a name this server's create and rename refuse */
  checkName(name: string): void {
    if (!this.strictNames) return;
    const why = strictNameProblem(name);
    if (why)
      throw new RefusedName('EINVAL', `name refused by Seafile ${this.version} (${why}): ${JSON.stringify(name)}`);
  }

  status(): ServerRulesStatus {
    return {
      version: this.version,
      virtualIds: this.virtualIds,
      strictNames: this.strictNames,
      directDownload: this.directDownload,
    };
  }
}
