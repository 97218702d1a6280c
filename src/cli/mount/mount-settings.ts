// What a mount is told (MountSettings: the parsed flags of `seafs mount`, or
// the demo's), and the sizes read from them and from the environment.
import { GiB, MiB, parseSize } from '../size-units.js';

/**
 * SEAFS_BLOCK_UPLOADS: files larger than this many MiB go by blocks (default 8: more than one block);
 * 'off' (or 0) uploads every file whole (src/vfs/write/blocks/block-uploads.ts).
 * SEAFS_BLOCK_READS: the same for reads taking cached blocks of other versions (default 16; block-reuse.ts).
 */
export function blockThreshold(v = process.env.SEAFS_BLOCK_UPLOADS, name = 'SEAFS_BLOCK_UPLOADS'): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (v === 'off') return Infinity;
  const bytes = parseSize(v, `${name} (or 'off')`, MiB);
  return bytes === 0 ? Infinity : bytes;
}

/** the disk cache's bound in bytes (--cache-max-size, default 4 GiB) */
export function cacheBytes(s: MountSettings): number {
  return Math.max(0, s.cacheMaxSize ?? 4 * GiB);
}

export interface MountSettings {
  url: string;
  mountpoint: string;
  library?: string;
  /** the password of an encrypted --library: this file, else SEAFS_LIBRARY_PASSWORD, else a prompt */
  libraryPasswordFile?: string;
  readOnly?: boolean;
  /** with allowOther the kernel checks the shown owners and modes (default_permissions) */
  allowOther?: boolean;
  /** owner and group shown for every entry */
  uid?: number;
  gid?: number;
  /** octal text (or a number read as octal digits): bits taken from 777 and 666 */
  umask?: string;
  cacheDir?: string;
  attrTimeout?: number;
  dirCacheTime?: number;
  /** bytes the cache dir may hold: downloaded data and files being written (default 4 GiB) */
  cacheMaxSize?: number;
  /** a front-to-back read is kept in the disk cache too: true any size, false never, unset up to 256 MiB */
  cacheStreams?: boolean;
  /** lock a document on the server while an Office program's lock file for it exists (default true) */
  officeLocks?: boolean;
  /** symbolic links as NAME.rclonelink files, as rclone --links keeps them (default false) */
  links?: boolean;
  /** fill the freedesktop thumbnail cache with the server's thumbnails of listed pictures (default true) */
  thumbnails?: boolean;
  /** kernel readahead, bytes (0: the kernel's default) */
  readAhead?: number;
  /** bandwidth limit as given (`10M`, `UP:DOWN`, `off`; size-units.ts parseBwLimit) */
  bwlimit?: string;
  /** seconds a server request may wait for an answer (the client's timeoutMs) */
  timeout?: number;
  /** generic mount options for the kernel mount (nosuid, noexec, ro, ...) */
  kernelOptions?: string[];
  /** false: no extended attributes (the kernel then stops asking before every write) */
  xattrs?: boolean;
  /** files deleted within a minute above which deletes are held until `seafs confirm-delete` (0: off) */
  deleteGuard?: number;
  debug?: boolean;
  /** the saved account mounted (`seafs mount NAME:...`), and the folder of saved accounts */
  account?: string;
  config?: string;
  /** https: a CA file to trust, a client certificate and its key (absolute paths; tls-options.ts) */
  caFile?: string;
  clientCert?: string;
  clientKey?: string;
}
