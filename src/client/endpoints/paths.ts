// Library paths as the web API wants them: leading slash, no trailing one,
// and the /api2/repos/{id}/ prefix of per-library endpoints.

/** A library path with its leading slash ('a/b' -> '/a/b'). */
export function q(path: string): string {
  return path.startsWith('/') ? path : `/${path}`;
}

export function repoPath(repoId: string, rest = ''): string {
  return `/api2/repos/${encodeURIComponent(repoId)}/${rest}`;
}

/** '/a/b/' -> '/a/b', 'a' -> '/a', '' -> '/' (servers disagree about the trailing slash of parent_dir). */
export function normalizeDir(p: string): string {
  let s = p.startsWith('/') ? p : `/${p}`;
  while (s.length > 1 && s.endsWith('/')) s = s.slice(0, -1);
  return s;
}

/** The parent folder and the last name of a library path ('/a/b' -> ['/a', 'b']). */
export function splitLast(path: string): [string, string] {
  const p = normalizeDir(path);
  const i = p.lastIndexOf('/');
  return [i <= 0 ? '/' : p.slice(0, i), p.slice(i + 1)];
}
