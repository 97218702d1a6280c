// What changes for a client between the Seafile versions `seafs serve
// --server-version` can answer as (read from seahub and seafile-server by tag):
//   11.0  accounts get a virtual id (hex@auth.local) that owner, creator,
//         modifier and lock_owner carry; the login e-mail is the contact
//         e-mail; "Authorization: Bearer <token>" is taken as well as "Token"
//   12.0  "too many files in library" is 447 (it was 442); uploads keep
//         last_modify from 12.0.4; the file server has a direct download,
//         GET /seafhttp/repos/{id}/files/{path}?op=download with the API token
//   13.0  the api2 share-link views f/{token}/, f/{token}/detail/ and
//         d/{token}/dir/ are gone (13.0.18); create and rename refuse names
//         holding "..", a backslash, emoji, or over 255 bytes
// Without an explicit version the server keeps its historical mix: 10.0's
// accounts, names and links with 12.0.4's last_modify.

/** [major, minor, patch] of an X.Y.Z version; null when it is not one */
export function parseServerVersion(v: string): [number, number, number] | null {
  const m = /^(\d{1,4})\.(\d{1,4})\.(\d{1,4})$/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : null;
}

/** X.Y.Z as one comparable number */
function rank(v: string): number {
  const [a, b, c] = parseServerVersion(v) ?? [99, 0, 0];
  return a * 1e8 + b * 1e4 + c;
}

export interface VersionBehaviour {
  /** owner, creator, modifier, lock_owner... carry `<hex>@auth.local`, not the login e-mail (11.0) */
  virtualIds: boolean;
  /** "Authorization: Bearer" is accepted as well as "Token" (11.0) */
  bearer: boolean;
  /** the status of "too many files in library": 442 before 12.0, 447 after */
  tooManyFilesStatus: 442 | 447;
  /** uploads keep last_modify (12.0.4) */
  keepsLastModify: boolean;
  /** GET {fileserver}/repos/{id}/files/{path}?op=download with the API token (12.0) */
  directDownload: boolean;
  /** api2 f/{token}/, f/{token}/detail/, d/{token}/dir/ still answer (gone in 13.0.18) */
  api2LinkViews: boolean;
  /** create and rename refuse "..", "\", emoji and names over 255 bytes (13.0) */
  strictNames: boolean;
  /** seahub hands notification tokens at /api/v2.1/repos/{id}/repo-notification-jwt-token/ (12.0) */
  notificationTokenView: boolean;
}

/** The behaviour of seafile-server `version`; undefined: the default mix described above */
export function behaviourOf(version: string | undefined): VersionBehaviour {
  if (version === undefined) {
    return {
      virtualIds: false,
      bearer: true,
      tooManyFilesStatus: 442,
      keepsLastModify: true,
      directDownload: false,
      api2LinkViews: true,
      strictNames: false,
      notificationTokenView: true,
    };
  }
  const at = (v: string) => rank(version) >= rank(v);
  return {
    virtualIds: at('11.0.0'),
    bearer: at('11.0.0'),
    tooManyFilesStatus: at('12.0.0') ? 447 : 442,
    keepsLastModify: at('12.0.4'),
    directDownload: at('12.0.0'),
    api2LinkViews: !at('13.0.18'),
    strictNames: at('13.0.0'),
    notificationTokenView: at('12.0.0'),
  };
}

/**
 * Why the newest seahub refuses `name` in create and rename (13.0), or null:
 * ".." anywhere in it, a backslash, an emoji (U+1F300-U+1FAD6), over 255 bytes.
 */
export function strictNameProblem(name: string): string | null {
  if (name.includes('..')) return 'it holds ".."';
  if (name.includes('\\')) return 'it holds a backslash';
  if (/[\u{1F300}-\u{1FAD6}]/u.test(name)) return 'it holds an emoji';
  if (Buffer.byteLength(name, 'utf8') > 255) return 'it is over 255 bytes';
  return null;
}
