// Mounting a Vfs with fuse-native: kernel options (big_writes appended to
// the option string, which fuse-native cannot express), per-operation
// timeouts, stale-mount clearing, and a lazy unmount.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import Fuse from 'fuse-native';
import type { Vfs } from '../vfs/vfs.js';
import { makeOps, type OpCounts } from './ops.js';
import { OpDeadlines } from './op-deadlines.js';
import { setReadAhead } from './readahead.js';

export interface FuseMountOptions {
  mountpoint: string;
  /** shown by `mount` and `df` as seafs:<name> */
  name: string;
  attrTimeoutSec?: number;
  entryTimeoutSec?: number;
  allowOther?: boolean;
  /** kernel readahead in KiB, set when the process may (root); 0 leaves the kernel's 128 KiB */
  readAheadKb?: number;
  /** more kernel mount options libfuse understands (nosuid, noexec, ro, ...) */
  extraOptions?: string[];
  debug?: boolean;
  /** the FUSE operations count their calls into it */
  counts?: OpCounts;
  /** false: the xattr operations are left out (answered ENOTSUP by the kernel, asked once) */
  xattrs?: boolean;
  log?: (msg: string) => void;
}

export interface FuseMount {
  unmount(): Promise<void>;
  /** the kernel readahead in force, KiB (null: unknown) */
  readAheadKb: number | null;
}

// no caller hangs forever, but a large fsync or an open that downloads the file can finish (op-deadlines.ts)
const TIMEOUTS = {
  default: 30_000,
  read: 120_000,
  write: 60_000,
  open: 30 * 60_000,
  create: 60_000,
  truncate: 30 * 60_000,
  fsync: 60 * 60_000,
  flush: 120_000,
  release: 120_000,
  rename: 30 * 60_000,
  unlink: 30 * 60_000,
  rmdir: 120_000,
  // pinning a folder lists its whole tree before it answers
  setxattr: 10 * 60_000,
};

/** characters that would break the comma-separated -o string */
function optSafe(s: string): string {
  return s.replace(/[,\s=\\]/g, '_');
}

function fusermountUz(mnt: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('fusermount', ['-uz', mnt], (err, _out, stderr) =>
      err ? reject(new Error(stderr.trim() || err.message)) : resolve(),
    );
  });
}

/** true when `mnt` is a mount point in /proc/mounts */
export async function isMounted(mnt: string): Promise<boolean> {
  try {
    const text = await readFile('/proc/mounts', 'utf8');
    const esc = mnt.replace(/ /g, '\\040');
    return text.split('\n').some((l) => l.split(' ')[1] === esc);
  } catch {
    return false;
  }
}

/** Lazily detach a mount whose process is gone (stat answers ENOTCONN). */
export async function clearStaleMount(mnt: string): Promise<boolean> {
  if (!(await isMounted(mnt))) return false;
  await fusermountUz(mnt);
  return true;
}

export async function mountVfs(vfs: Vfs, opts: FuseMountOptions): Promise<FuseMount> {
  const log = opts.log ?? (() => {});
  const attr = Math.max(0.1, opts.attrTimeoutSec ?? 2);
  const entry = Math.max(0.1, opts.entryTimeoutSec ?? attr);
  const deadlines = new OpDeadlines({ limits: TIMEOUTS, log });
  const fuse = new Fuse(
    opts.mountpoint,
    deadlines.wrapAll(makeOps(vfs, { log, debug: opts.debug, counts: opts.counts, xattrs: opts.xattrs })),
    {
      force: true,
      mkdir: false,
      fsname: `seafs:${optSafe(opts.name)}`,
      subtype: 'seafs',
      autoCache: true,
      maxRead: 128 * 1024,
      attrTimeout: attr,
      entryTimeout: entry,
      allowOther: !!opts.allowOther,
      debug: !!opts.debug,
      // the deadlines above, kept without a timer per operation
      timeout: false,
    },
  );
  // fuse-native has no big_writes: without it the kernel sends 4 KiB writes
  const base = fuse._fuseOptions.bind(fuse);
  fuse._fuseOptions = () => {
    const o = base();
    // atomic_o_trunc: an open with O_TRUNC arrives as such, not as an open (which would fetch
    // the old content to edit it) followed by a truncate
    const extra = [
      ...(opts.extraOptions ?? []).map(optSafe),
      'big_writes',
      'atomic_o_trunc',
      `negative_timeout=${Math.min(entry, 1)}`,
    ].join(',');
    return o ? `${o},${extra}` : `-o${extra}`;
  };
  await new Promise<void>((resolve, reject) => fuse.mount((err) => (err ? reject(err) : resolve())));
  const ra = opts.readAheadKb ?? 512;
  const readAheadKb = ra > 0 ? await setReadAhead(opts.mountpoint, ra, log) : null;
  let unmounted = false;
  return {
    readAheadKb,
    async unmount() {
      if (unmounted) return;
      unmounted = true;
      // detached from outside (umount, fusermount -u): nothing left to detach
      if (!(await isMounted(opts.mountpoint))) return;
      await new Promise<void>((resolve) =>
        fuse.unmount((err) => {
          if (err) log(`unmount: ${err.message}`);
          resolve();
        }),
      );
      // the native side may already be gone; make sure the kernel mount is
      if (await isMounted(opts.mountpoint)) await fusermountUz(opts.mountpoint).catch(() => {});
    },
  };
}
