// What a mount needs from the system, checked before the password is asked:
// /dev/fuse open to the user, fusermount (setuid root: an ordinary user mounts
// through it), user_allow_other in /etc/fuse.conf for --allow-other, and an
// empty folder of the user's own as the mount point. Without these checks
// libfuse's only word is "fuse failed". The checks are pure functions of the
// facts (unit-tested); systemFacts() and mountpointFacts() read them.
import { accessSync, constants, readFileSync, readdirSync, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export interface SystemFacts {
  uid: number;
  /** the user's name, when /etc/passwd knows it */
  user?: string;
  /** /dev/fuse; null: missing */
  devFuse: { mode: number; owner: string; group: string; groupWritable: boolean; usable: boolean } | null;
  /** the fusermount on PATH; null: none */
  fusermount: { path: string; setuidRoot: boolean } | null;
  /** /etc/fuse.conf has user_allow_other */
  userAllowOther: boolean;
}

export interface MountpointFacts {
  path: string;
  /** missing: nothing there; stale: stat fails as on a mount whose process is gone */
  state: 'missing' | 'stale' | 'folder' | 'other';
  /** the owner's uid and name (folder or other) */
  uid?: number;
  owner?: string;
  /** entries in the folder; null: unreadable */
  entries?: number | null;
  /** the type of the file system mounted exactly there (/proc/mounts); null: none */
  mountedType: string | null;
}

/** ls -l's mode string of a device or file (crw-rw-rw-) */
export function modeString(mode: number): string {
  const type =
    (mode & 0o170000) === 0o020000
      ? 'c'
      : (mode & 0o170000) === 0o040000
        ? 'd'
        : (mode & 0o170000) === 0o060000
          ? 'b'
          : '-';
  const bits = ['r', 'w', 'x'];
  let s = type;
  for (let i = 8; i >= 0; i--) s += mode & (1 << i) ? bits[(8 - i) % 3] : '-';
  return s;
}

function who(f: SystemFacts): string {
  return f.user ? `${f.user} (uid ${f.uid})` : `uid ${f.uid}`;
}

/** The first thing that keeps this user from mounting at all (null: none). */
export function systemProblem(f: SystemFacts, allowOther: boolean): string | null {
  const root = f.uid === 0;
  const d = f.devFuse;
  if (!d)
    return (
      '/dev/fuse does not exist: the FUSE kernel module is not loaded (as root: modprobe fuse) or, in a ' +
      'container, the device was not passed in (docker run --device /dev/fuse --cap-add SYS_ADMIN)'
    );
  if (!d.usable) {
    const seen = `/dev/fuse is ${modeString(d.mode)} ${d.owner}:${d.group}, so ${who(f)} cannot open it`;
    if (d.groupWritable && d.group !== 'root')
      return `${seen}: join its group (as root: usermod -aG ${d.group} ${f.user ?? 'USER'}), then log in again`;
    return `${seen}: as root, open it to users with chmod 0666 /dev/fuse (the usual mode; a udev rule KERNEL=="fuse", MODE="0666" keeps it after a reboot)`;
  }
  if (!f.fusermount)
    return `fusermount is not installed (or not on PATH): seafs ${root ? 'unmounts' : 'mounts and unmounts'} through it (Debian: apt-get install fuse)`;
  if (!root && !f.fusermount.setuidRoot)
    return `${f.fusermount.path} is not setuid root, so an ordinary user cannot mount with it (as root: chmod u+s ${f.fusermount.path})`;
  if (allowOther && !root && !f.userAllowOther)
    return '--allow-other (allow_other) needs user_allow_other in /etc/fuse.conf for an ordinary user (as root: echo user_allow_other >> /etc/fuse.conf)';
  return null;
}

/** What is wrong with the mount point when nothing is mounted there (null: fine). */
export function mountpointProblem(m: MountpointFacts, uid: number, nonemptyAllowed: boolean): string | null {
  if (m.state === 'missing') return `the mount point ${m.path} does not exist (create it with mkdir)`;
  if (m.state === 'other') return `the mount point ${m.path} is not a folder`;
  if (m.state === 'stale') return staleProblem(m.path, 'it answers as a mount whose process is gone');
  if (uid !== 0 && m.uid !== uid)
    return `the mount point ${m.path} belongs to ${m.owner ?? `uid ${m.uid}`}, not to you: mount on a folder of your own (mkdir ~/drive)`;
  if (m.entries === null) return `the mount point ${m.path} cannot be read: mount on a folder of your own`;
  if (!nonemptyAllowed && (m.entries ?? 0) > 0)
    return `the mount point ${m.path} is not empty (${m.entries} ${m.entries === 1 ? 'entry' : 'entries'}): mount on an empty folder, the drive would hide them`;
  return null;
}

/** A stale mount that could not be cleared here: the way out. */
export function staleProblem(mnt: string, why: string): string {
  return `a stale mount is left at ${mnt} (${why}), probably by a seafs that crashed: clear it with seafs unmount --force ${mnt}`;
}

/** Something else is mounted at the mount point. */
export function mountedProblem(mnt: string, type: string): string {
  return `${mnt} is already a mount point (${type}): unmount it first, or mount on another folder`;
}

// ---- reading the facts ----

function names(file: string): Map<number, string> {
  const m = new Map<number, string>();
  try {
    for (const l of readFileSync(file, 'utf8').split('\n')) {
      const f = l.split(':');
      if (f.length > 2 && /^\d+$/.test(f[2])) m.set(Number(f[2]), f[0]);
    }
  } catch {
    // no such file: numbers only
  }
  return m;
}

function onPath(cmd: string): string | null {
  for (const d of (process.env.PATH ?? '').split(delimiter).concat(['/usr/bin', '/bin'])) {
    if (!d) continue;
    const p = join(d, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return null;
}

export function systemFacts(): SystemFacts {
  const uid = process.getuid?.() ?? 0;
  const users = names('/etc/passwd');
  const groups = names('/etc/group');
  let devFuse: SystemFacts['devFuse'] = null;
  try {
    const st = statSync('/dev/fuse');
    let usable = true;
    try {
      accessSync('/dev/fuse', constants.R_OK | constants.W_OK);
    } catch {
      usable = false;
    }
    devFuse = {
      mode: st.mode,
      owner: users.get(st.uid) ?? String(st.uid),
      group: groups.get(st.gid) ?? String(st.gid),
      groupWritable: (st.mode & 0o060) === 0o060,
      usable,
    };
  } catch {
    devFuse = null;
  }
  const fm = onPath('fusermount');
  let fusermount: SystemFacts['fusermount'] = null;
  if (fm) {
    const st = statSync(fm);
    fusermount = { path: fm, setuidRoot: st.uid === 0 && (st.mode & 0o4000) !== 0 };
  }
  let userAllowOther = false;
  try {
    userAllowOther = /^\s*user_allow_other\s*$/m.test(readFileSync('/etc/fuse.conf', 'utf8'));
  } catch {
    // no /etc/fuse.conf
  }
  return { uid, user: users.get(uid), devFuse, fusermount, userAllowOther };
}

/** the file system mounted exactly at `mnt` (/proc/mounts escapes blanks as octal): its type and FUSE user_id */
export function mountAt(mnt: string, procMounts: string): { type: string; userId: number | null } | null {
  let found: { type: string; userId: number | null } | null = null;
  for (const l of procMounts.split('\n')) {
    const f = l.split(' ');
    if (f.length < 3) continue;
    const at = f[1].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (at !== mnt) continue;
    const id = /(?:^|,)user_id=(\d+)(?:,|$)/.exec(f[3] ?? '');
    found = { type: f[2], userId: id ? Number(id[1]) : null };
  }
  return found;
}

export function mountedTypeAt(mnt: string, procMounts: string): string | null {
  return mountAt(mnt, procMounts)?.type ?? null;
}

/** A FUSE mount of another user, which an ordinary user can neither clear nor unmount (null: not that case). */
export function foreignMountProblem(mnt: string, uid: number, procMounts: string): string | null {
  const m = mountAt(mnt, procMounts);
  if (!m || uid === 0 || m.userId === null || m.userId === uid) return null;
  const name = names('/etc/passwd').get(m.userId);
  return `${mnt} is mounted by ${name ? `${name} (uid ${m.userId})` : `uid ${m.userId}`}: only that user or root can unmount it`;
}

export function readProcMounts(): string {
  try {
    return readFileSync('/proc/mounts', 'utf8');
  } catch {
    return '';
  }
}

export function mountpointFacts(mnt: string): MountpointFacts {
  const procMounts = readProcMounts();
  const mountedType = mountedTypeAt(mnt, procMounts);
  let st;
  try {
    st = statSync(mnt);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { path: mnt, state: 'missing', mountedType };
    if (code === 'ENOTCONN' || code === 'ECONNABORTED' || code === 'EIO')
      return { path: mnt, state: 'stale', mountedType };
    throw e;
  }
  const owner = names('/etc/passwd').get(st.uid);
  if (!st.isDirectory()) return { path: mnt, state: 'other', uid: st.uid, owner, mountedType };
  let entries: number | null = null;
  try {
    entries = mountedType ? null : readdirSync(mnt).length;
  } catch {
    entries = null;
  }
  return { path: mnt, state: 'folder', uid: st.uid, owner, entries, mountedType };
}

/**
 * `seafs mount`'s checks before it asks for anything: the system, then the mount
 * point unless something is mounted there (a stale mount is cleared by the mount itself).
 */
export function preflight(s: { mountpoint: string; allowOther?: boolean; kernelOptions?: string[] }): string | null {
  const sys = systemFacts();
  const p = systemProblem(sys, !!s.allowOther);
  if (p) return p;
  const m = mountpointFacts(resolve(s.mountpoint));
  if (m.mountedType || m.state === 'stale') return null;
  return mountpointProblem(m, sys.uid, !!s.kernelOptions?.includes('nonempty'));
}
