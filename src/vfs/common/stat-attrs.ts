// What `stat` and `statfs` show: the shapes the FUSE adapter passes on, and how
// a folder, a file and the account's quota become them. Owners are the
// mounting user (or --uid/--gid); modes are 777 for folders and 666 for files
// less the umask (--umask, default 022), less the write bits where the mount
// or the library is read-only or the file is locked by someone else. The
// server keeps no owners or modes, so these are the same for every entry.
// A symbolic link (--links) is 777, as every link on Linux.
import { constants as C } from 'node:fs';
import type { AccountInfo } from '../../client/types.js';

export interface Attr {
  mode: number;
  size: number;
  nlink: number;
  uid: number;
  gid: number;
  mtime: Date;
  atime: Date;
  ctime: Date;
  blocks: number;
  blksize: number;
}

export interface StatFs {
  bsize: number;
  frsize: number;
  blocks: number;
  bfree: number;
  bavail: number;
  files: number;
  ffree: number;
  favail: number;
  namemax: number;
}

/** the I/O size the kernel is told (libfuse 2 sends at most 128 KiB per request) */
const BLKSIZE = 128 * 1024;
/** every statfs field is 32 bits wide: count in MiB blocks */
const STATFS_BSIZE = 1024 * 1024;

export class AttrShaper {
  private readonly mountTime = new Date();

  constructor(
    readonly uid: number,
    readonly gid: number,
    readonly umask = 0o022,
  ) {}

  private perms(full: number, readOnly: boolean): number {
    const p = full & ~this.umask & 0o777;
    return readOnly ? p & ~0o222 : p;
  }

  /** a folder; `mtimeSec` 0: unknown (the mount's start time is shown) */
  dir(mtimeSec: number, readOnly: boolean): Attr {
    const t = mtimeSec ? new Date(mtimeSec * 1000) : this.mountTime;
    return {
      mode: C.S_IFDIR | this.perms(0o777, readOnly),
      size: 4096,
      nlink: 2,
      uid: this.uid,
      gid: this.gid,
      mtime: t,
      atime: t,
      ctime: t,
      blocks: 8,
      blksize: BLKSIZE,
    };
  }

  file(size: number, mtimeMs: number, readOnly: boolean): Attr {
    const t = new Date(mtimeMs);
    return {
      mode: C.S_IFREG | this.perms(0o666, readOnly),
      size,
      nlink: 1,
      uid: this.uid,
      gid: this.gid,
      mtime: t,
      atime: t,
      ctime: t,
      blocks: Math.ceil(size / 512),
      blksize: BLKSIZE,
    };
  }

  /** a symbolic link (--links): size is its target's length; links are 777 whatever the umask, as on Linux */
  link(size: number, mtimeMs: number): Attr {
    return { ...this.file(size, mtimeMs, false), mode: C.S_IFLNK | 0o777 };
  }
}

/** The account's quota as filesystem blocks (an unlimited quota shows as the largest size). */
export function statfsOf(info: AccountInfo): StatFs {
  const unlimited = !(info.total > 0);
  const totalBlocks = unlimited ? 2 ** 32 - 1 : Math.min(2 ** 32 - 1, Math.floor(info.total / STATFS_BSIZE));
  const used = Math.ceil(Math.max(0, info.usage) / STATFS_BSIZE);
  const free = Math.max(0, totalBlocks - used);
  return {
    bsize: STATFS_BSIZE,
    frsize: STATFS_BSIZE,
    blocks: totalBlocks,
    bfree: free,
    bavail: free,
    files: 1_000_000,
    ffree: 1_000_000,
    favail: 1_000_000,
    namemax: 255,
  };
}
