// The checks before a mount (src/cli/mount/preflight.ts), as pure functions of
// the system's facts: each problem an ordinary user can meet gets its message,
// saying what was seen and what to do.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  foreignMountProblem,
  modeString,
  mountAt,
  mountedProblem,
  mountedTypeAt,
  mountpointFacts,
  mountpointProblem,
  staleProblem,
  systemProblem,
  type MountpointFacts,
  type SystemFacts,
} from '../../../src/cli/mount/preflight.js';

const OK: SystemFacts = {
  uid: 1000,
  user: 'ann',
  devFuse: { mode: 0o20666, owner: 'root', group: 'root', groupWritable: true, usable: true },
  fusermount: { path: '/usr/bin/fusermount', setuidRoot: true },
  userAllowOther: false,
};
const with_ = (f: Partial<SystemFacts>): SystemFacts => ({ ...OK, ...f });

describe('system checks', () => {
  it('pass for an ordinary user when /dev/fuse is open and fusermount is setuid root', () => {
    expect(systemProblem(OK, false)).toBeNull();
  });

  it('/dev/fuse missing: the module or the container', () => {
    const p = systemProblem(with_({ devFuse: null }), false)!;
    expect(p).toMatch(/^\/dev\/fuse does not exist/);
    expect(p).toContain('modprobe fuse');
    expect(p).toContain('--device /dev/fuse');
  });

  it('/dev/fuse not open to the user: the permission seen and the chmod', () => {
    const f = with_({ devFuse: { mode: 0o20600, owner: 'root', group: 'root', groupWritable: false, usable: false } });
    expect(systemProblem(f, false)).toBe(
      '/dev/fuse is crw------- root:root, so ann (uid 1000) cannot open it: as root, open it to users with ' +
        'chmod 0666 /dev/fuse (the usual mode; a udev rule KERNEL=="fuse", MODE="0666" keeps it after a reboot)',
    );
  });

  it('/dev/fuse open to a group: join it', () => {
    const f = with_({ devFuse: { mode: 0o20660, owner: 'root', group: 'fuse', groupWritable: true, usable: false } });
    expect(systemProblem(f, false)).toBe(
      '/dev/fuse is crw-rw---- root:fuse, so ann (uid 1000) cannot open it: join its group (as root: usermod -aG fuse ann), then log in again',
    );
  });

  it('fusermount missing, or not setuid root for an ordinary user', () => {
    expect(systemProblem(with_({ fusermount: null }), false)).toBe(
      'fusermount is not installed (or not on PATH): seafs mounts and unmounts through it (Debian: apt-get install fuse)',
    );
    expect(systemProblem(with_({ uid: 0, user: 'root', fusermount: null }), false)).toMatch(
      /seafs unmounts through it/,
    );
    expect(systemProblem(with_({ fusermount: { path: '/usr/bin/fusermount', setuidRoot: false } }), false)).toBe(
      '/usr/bin/fusermount is not setuid root, so an ordinary user cannot mount with it (as root: chmod u+s /usr/bin/fusermount)',
    );
    expect(systemProblem(with_({ uid: 0, fusermount: { path: '/f', setuidRoot: false } }), false)).toBeNull();
  });

  it('--allow-other without user_allow_other in /etc/fuse.conf (root needs none)', () => {
    expect(systemProblem(OK, true)).toBe(
      '--allow-other (allow_other) needs user_allow_other in /etc/fuse.conf for an ordinary user (as root: echo user_allow_other >> /etc/fuse.conf)',
    );
    expect(systemProblem(with_({ userAllowOther: true }), true)).toBeNull();
    expect(systemProblem(with_({ uid: 0 }), true)).toBeNull();
  });

  it('modeString reads like ls -l', () => {
    expect(modeString(0o20666)).toBe('crw-rw-rw-');
    expect(modeString(0o40755)).toBe('drwxr-xr-x');
    expect(modeString(0o100640)).toBe('-rw-r-----');
  });
});

describe('mount point checks', () => {
  const folder = (f: Partial<MountpointFacts>): MountpointFacts => ({
    path: '/home/ann/drive',
    state: 'folder',
    uid: 1000,
    owner: 'ann',
    entries: 0,
    mountedType: null,
    ...f,
  });

  it('an empty folder of the user is fine', () => {
    expect(mountpointProblem(folder({}), 1000, false)).toBeNull();
  });

  it('missing, not a folder', () => {
    expect(mountpointProblem(folder({ state: 'missing' }), 1000, false)).toBe(
      'the mount point /home/ann/drive does not exist (create it with mkdir)',
    );
    expect(mountpointProblem(folder({ state: 'other' }), 1000, false)).toBe(
      'the mount point /home/ann/drive is not a folder',
    );
  });

  it("another user's folder: refused for an ordinary user, fine for root", () => {
    const f = folder({ path: '/mnt', uid: 0, owner: 'root' });
    expect(mountpointProblem(f, 1000, false)).toBe(
      'the mount point /mnt belongs to root, not to you: mount on a folder of your own (mkdir ~/drive)',
    );
    expect(mountpointProblem(f, 0, false)).toBeNull();
  });

  it('not empty, unless nonempty is asked for', () => {
    expect(mountpointProblem(folder({ entries: 3 }), 1000, false)).toBe(
      'the mount point /home/ann/drive is not empty (3 entries): mount on an empty folder, the drive would hide them',
    );
    expect(mountpointProblem(folder({ entries: 1 }), 1000, false)).toMatch(/\(1 entry\)/);
    expect(mountpointProblem(folder({ entries: 3 }), 1000, true)).toBeNull();
  });

  it('a stale mount left by a crash offers seafs unmount --force', () => {
    expect(mountpointProblem(folder({ state: 'stale' }), 1000, false)).toBe(
      'a stale mount is left at /home/ann/drive (it answers as a mount whose process is gone), probably by a seafs that crashed: clear it with seafs unmount --force /home/ann/drive',
    );
    expect(staleProblem('/m', 'clearing it failed: x')).toMatch(/seafs unmount --force \/m$/);
    expect(mountedProblem('/m', 'fuse.sshfs')).toBe(
      '/m is already a mount point (fuse.sshfs): unmount it first, or mount on another folder',
    );
  });
});

describe('reading the facts', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('mountedTypeAt finds the type mounted exactly at a path, blanks as /proc/mounts escapes them', () => {
    const pm = 'proc /proc proc rw 0 0\nseafs:x /home/ann/my\\040drive fuse.seafs rw,user_id=1000 0 0\n';
    expect(mountedTypeAt('/home/ann/my drive', pm)).toBe('fuse.seafs');
    expect(mountedTypeAt('/home/ann', pm)).toBeNull();
  });

  it("mountAt reads a FUSE mount's user_id; another user's mount is theirs to unmount", () => {
    const pm = 'seafs:x /mnt/drive fuse.seafs rw,nosuid,user_id=0,group_id=0 0 0\n/dev/sda1 /data ext4 rw 0 0\n';
    expect(mountAt('/mnt/drive', pm)).toEqual({ type: 'fuse.seafs', userId: 0 });
    expect(mountAt('/data', pm)).toEqual({ type: 'ext4', userId: null });
    expect(foreignMountProblem('/mnt/drive', 1000, pm)).toBe(
      '/mnt/drive is mounted by root (uid 0): only that user or root can unmount it',
    );
    expect(foreignMountProblem('/mnt/drive', 0, pm)).toBeNull();
    expect(foreignMountProblem('/mnt/drive', 1000, pm.replace('user_id=0', 'user_id=1000'))).toBeNull();
    expect(foreignMountProblem('/elsewhere', 1000, pm)).toBeNull();
  });

  it('mountpointFacts: missing, a file, a folder with its entries', () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'seafs-mp-'));
    dirs.push(d);
    expect(mountpointFacts(path.join(d, 'none')).state).toBe('missing');
    writeFileSync(path.join(d, 'f'), 'x');
    expect(mountpointFacts(path.join(d, 'f')).state).toBe('other');
    mkdirSync(path.join(d, 'sub'));
    const m = mountpointFacts(d);
    expect(m).toMatchObject({ state: 'folder', uid: process.getuid!(), entries: 2, mountedType: null });
  });
});
