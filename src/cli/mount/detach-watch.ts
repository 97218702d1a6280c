// A mount detached from outside (umount, fusermount -u, umount -l): the
// mount process notices it at once, uploads what is pending and exits; and a
// new `seafs mount` at that place waits a few seconds for such a process
// rather than refusing at once while it finishes.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { processAlive } from '../../vfs/vfs.js';
import { controlAlive, queryStatus } from '../control/control-socket.js';
import { mountedTypeAt } from './preflight.js';

/** whether `mnt` is a mount point now, from /proc/mounts (true when it cannot be read: nothing is known) */
async function isMounted(mnt: string): Promise<boolean> {
  const text = await readFile('/proc/mounts', 'utf8').catch(() => null);
  return text === null || mountedTypeAt(mnt, text) !== null;
}

export interface DetachWatch {
  /** the mount is up: from now on its detach calls onDetached */
  arm(): void;
  close(): void;
}

/**
 * Calls `onDetached` once when `mnt` is no longer a mount point. The kernel
 * wakes a poll() on /proc/self/mountinfo at each change of the mount table,
 * but Node cannot poll that file (and inotify sees nothing in /proc): util-
 * linux's `findmnt --poll=umount --first-only --mountpoint MNT` does, and
 * exits 0 when MNT is unmounted, within milliseconds; /proc/mounts then
 * confirms. The check every `everyMs` stays as the fallback: no findmnt, or
 * a detach before findmnt read the table.
 *
 * Made before the FUSE mount exists: libfuse 2 opens /dev/fuse without
 * close-on-exec, and a findmnt started later would hold the descriptor, so
 * that the mount of a seafs killed by SIGKILL would hang its callers instead
 * of failing with ENOTCONN (and `seafs unmount` could not tell it stale). For
 * the same reason no second findmnt is started: after an answer that was not
 * this mount's detach (something mounted over MNT and unmounted), the poll is
 * left. arm() once mounted starts the checks. The findmnt process is this
 * process's child; close() ends it (one left by a crash ends when MNT is
 * unmounted).
 */
export function watchDetach(
  mnt: string,
  onDetached: () => void,
  o: { everyMs?: number; mounted?: (mnt: string) => Promise<boolean>; findmnt?: string } = {},
): DetachWatch {
  const mounted = o.mounted ?? isMounted;
  let armed = false;
  let done = false;
  /** findmnt answered before arm() */
  let early = false;
  let poll: NodeJS.Timeout | null = null;
  const check = () =>
    void mounted(mnt).then((on) => {
      if (on || done) return;
      close();
      onDetached();
    });
  const c = spawn(o.findmnt ?? 'findmnt', ['--poll=umount', '--first-only', '--noheadings', '--mountpoint', mnt], {
    stdio: 'ignore',
  });
  let child: ChildProcess | null = c;
  c.unref();
  // no findmnt (or one without --poll): the fallback alone
  c.on('error', () => (child = null));
  c.on('exit', (code) => {
    child = null;
    if (code !== 0 || done) return;
    if (armed) check();
    else early = true;
  });
  function close() {
    done = true;
    if (poll) clearInterval(poll);
    if (child && child.exitCode === null && child.signalCode === null) child.kill();
    child = null;
  }
  return {
    arm() {
      if (armed || done) return;
      armed = true;
      poll = setInterval(check, o.everyMs ?? 2000);
      poll.unref();
      if (early) check();
    },
    close,
  };
}

/**
 * A seafs process still answering for `mnt` whose mount the kernel has
 * already detached (umount from outside: it uploads what was written there,
 * then exits) is waited for up to `waitMs`, said in one line: until it has
 * exited, so that it has also let go of the cache folder the new mount
 * takes over. Resolves with null when no such process is left (or none was
 * there), else with the reason to refuse the new mount. A process whose
 * mount is still attached is the caller's to refuse.
 */
export async function waitForDetached(
  mnt: string,
  say: (line: string) => void,
  o: {
    waitMs?: number;
    stepMs?: number;
    alive?: (mnt: string) => Promise<boolean>;
    mounted?: (mnt: string) => Promise<boolean>;
    pid?: (mnt: string) => Promise<number | null>;
  } = {},
): Promise<string | null> {
  const alive = o.alive ?? controlAlive;
  const mounted = o.mounted ?? isMounted;
  if (!(await alive(mnt)) || (await mounted(mnt))) return null;
  const waitMs = o.waitMs ?? 10_000;
  const pid = await (o.pid ?? statusPid)(mnt);
  const who = pid !== null ? `the seafs process (pid ${pid})` : 'the seafs process';
  say(`waiting up to ${waitMs / 1000} s for ${who} detached from ${mnt} to finish its uploads`);
  const gone = async () => (pid !== null ? !processAlive(pid) : !(await alive(mnt)));
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, o.stepMs ?? 100));
    if (await gone()) return null;
  }
  return `${who} detached from ${mnt} is still uploading what was written there: mount again once it has exited (its log says when)`;
}

async function statusPid(mnt: string): Promise<number | null> {
  try {
    const pid = (JSON.parse((await queryStatus(mnt, 3000)) ?? 'null') as { pid?: unknown } | null)?.pid;
    return typeof pid === 'number' ? pid : null;
  } catch {
    return null;
  }
}
