// `seafs unmount --force`: detach the mount lazily (fusermount -uz) without
// asking its process, for a stale mount left by a crash (whose files waiting
// for upload stay in the journal for the next mount) or a process that hangs
// (it still finishes its uploads once the kernel lets go). Works for the user
// who mounted it (fusermount) and for root. fuse-native is not loaded.
import { execFile } from 'node:child_process';
import { foreignMountProblem, mountedTypeAt, readProcMounts as procMounts } from './preflight.js';
import { UserError } from '../user-error.js';

function exec(file: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) =>
    execFile(file, args, (err, _out, stderr) => resolve(err ? stderr.trim() || err.message : null)),
  );
}

/** Detaches `mnt`; resolves with the line to print, rejects with a UserError saying why not. */
export async function forceUnmount(mnt: string): Promise<string> {
  const type = mountedTypeAt(mnt, procMounts());
  if (!type) throw new UserError(`nothing is mounted at ${mnt}`);
  const foreign = foreignMountProblem(mnt, process.getuid?.() ?? 0, procMounts());
  if (foreign) throw new UserError(foreign);
  let err = await exec('fusermount', ['-uz', mnt]);
  if (err && process.getuid?.() === 0) err = (await exec('umount', ['-l', mnt])) && err;
  if (err && mountedTypeAt(mnt, procMounts()))
    throw new UserError(
      `cannot detach ${mnt}: ${err}${process.getuid?.() === 0 ? '' : ' (only the user who mounted it, or root, can)'}`,
    );
  return `detached ${mnt} (${type})`;
}
