// How a symbolic link is kept on the server with --links: a regular file named
// after the link plus `.rclonelink`, whose content is the link's target, bytes
// for bytes with no newline. That is rclone's own format (its local backend and
// its mount with -l/--links), so rclone and seafs read each other's links.

export const LINK_SUFFIX = '.rclonelink';

/** the longest target a link may have: Linux's PATH_MAX less the terminating NUL */
export const MAX_TARGET_BYTES = 4095;

/** the server's name of the link named `name` (a name or a whole path) */
export function storedLinkName(name: string): string {
  return name + LINK_SUFFIX;
}

/** the link a stored file name stands for; null: an ordinary name (a bare `.rclonelink` too) */
export function linkNameOf(stored: string): string | null {
  return stored.length > LINK_SUFFIX.length && stored.endsWith(LINK_SUFFIX)
    ? stored.slice(0, -LINK_SUFFIX.length)
    : null;
}

/** whether a name is one the mount never shows as such (it shows the link instead) */
export function isLinkFileName(name: string): boolean {
  return linkNameOf(name) !== null;
}

/**
 * The names a folder shows: each `X.rclonelink` file as `X`. A real entry `X`
 * beside `X.rclonelink` is shadowed by the link (shown once, as the link), as
 * rclone's mount does with --links: its sorted listing puts the link last.
 */
export function shownNames(stored: Iterable<string>, isFile: (name: string) => boolean): string[] {
  const out = new Set<string>();
  for (const n of stored) {
    const link = linkNameOf(n);
    out.add(link !== null && isFile(n) ? link : n);
  }
  return [...out];
}
