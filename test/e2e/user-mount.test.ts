// An ordinary user (nobody, uid 65534, through setpriv: no user is created):
// mount, status, unmount, an fstab `user` line with mount(8)/umount(8), a
// crash's stale mount cleared by `seafs unmount --force`, and the messages
// for what keeps a user from mounting (/dev/fuse closed, --allow-other without
// user_allow_other, a mount point of someone else's or not empty) or from
// unmounting (a mount of root's).
//
// Each case runs in a private mount namespace (unshare -m) in which root first
// puts in place, by bind mounts over the system's files and never changing
// them: a /dev/fuse node of the mode the case needs (0666 as Debian has it, or
// 0600), an /etc/fuse.conf without user_allow_other, an /etc/fstab with the
// user line, and a /usr/sbin holding only this checkout's mount helper. The
// mounts live in that namespace; the files are checked through the API here.
import { chownSync, chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRemoteFile, waitRemoteFile } from '../helpers/api-check.js';
import { CLI, isMountpoint, mountLibrary, q, run, sleep } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const HELPER = path.join(ROOT, 'bin/mount.seafs');
const UID = 65534;
const LIB = 'Users';
const ctx = setupE2E([LIB]);

let base = '';
let home = '';
/** mount processes started in the namespaces, killed by PID if a case leaves one */
const pids = new Set<number>();

beforeAll(async () => {
  // the user runs this checkout's build: a checkout below a folder closed to others (a 0700 temp dir) cannot
  // pass these tests, and says so here rather than as a missing module in each case
  const reach = await run('setpriv', [`--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', 'test', '-r', CLI], {
    allowFail: true,
  });
  if (reach.code !== 0)
    throw new Error(
      `uid ${UID} cannot read ${CLI}: every folder above the checkout must be open to others (o+x) for the ordinary-user tests`,
    );
  base = mkdtempSync(path.join(os.tmpdir(), 'seafs-user-'));
  chmodSync(base, 0o755);
  home = path.join(base, 'home');
  for (const d of [home, path.join(home, 'run'), path.join(home, 'cache'), path.join(base, 'mnt')]) {
    mkdirSync(d, { mode: 0o700 });
    chownSync(d, UID, UID);
  }
  chmodSync(path.join(base, 'mnt'), 0o755);
  const pw = path.join(home, 'pw');
  writeFileSync(pw, ctx.server.adminPassword + '\n', { mode: 0o600 });
  chownSync(pw, UID, UID);
  // /dev/fuse's stand-ins: the same device, two modes
  await run('mknod', ['-m', '666', path.join(base, 'fuse-open'), 'c', '10', '229']);
  await run('mknod', ['-m', '600', path.join(base, 'fuse-closed'), 'c', '10', '229']);
  writeFileSync(path.join(base, 'fuse.conf'), '# mount_max = 1000\n#user_allow_other\n');
  const opts = `user,noauto,username=${ctx.server.adminEmail},password_file=${pw},cache_dir=${path.join(home, 'cache')}`;
  writeFileSync(
    path.join(base, 'fstab'),
    `${ctx.server.url}#${LIB} ${path.join(base, 'mnt')} fuse.seafs ${opts} 0 0\n`,
  );
});

afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  if (base) rmSync(base, { recursive: true, force: true });
});

/** Runs `script` as uid 65534 in a private mount namespace set up as the header says. */
async function asUser(script: string, fuse: 'open' | 'closed' = 'open') {
  const prelude = `set -e
mount --make-rprivate /
mount --bind ${q(path.join(base, `fuse-${fuse}`))} /dev/fuse
mount --bind ${q(path.join(base, 'fuse.conf'))} /etc/fuse.conf
mount --bind ${q(path.join(base, 'fstab'))} /etc/fstab
mount -t tmpfs seafs-test-sbin /usr/sbin
ln -s ${q(HELPER)} /usr/sbin/mount.fuse.seafs
exec setpriv --reuid=${UID} --regid=${UID} --clear-groups env -i HOME=${q(home)} PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR=${q(path.join(home, 'run'))} bash -c "$1"
`;
  const seafs = `seafs() { node ${q(CLI)} "$@"; }\nMNT=${q(path.join(base, 'mnt'))}\n`;
  const r = await run('unshare', ['-m', 'bash', '-c', prelude, 'prelude', seafs + script], {
    allowFail: true,
    timeoutMs: 120_000,
  });
  for (const m of r.out.matchAll(/\(pid (\d+), log /g)) pids.add(Number(m[1]));
  return r;
}

/** the mount's source and account (the server exists once beforeAll ran) */
const login = () =>
  `${q(ctx.server.url)} "$MNT" --user ${q(ctx.server.adminEmail)} --password-file "$HOME/pw" --cache-dir "$HOME/cache"`;

describe('an ordinary user', () => {
  it('mounts, writes, sees the mount in seafs status and unmounts, without root', async () => {
    const r = await asUser(`set -e
seafs mount ${login()} --library ${LIB} --daemon
echo "by nobody" > "$MNT/by-user.txt"
seafs status
seafs unmount "$MNT"
findmnt "$MNT" >/dev/null || echo "not mounted any more"
`);
    expect(r.code, r.err + r.out).toBe(0);
    const mnt = path.join(base, 'mnt');
    expect(r.out).toContain(`seafs: mounted ${LIB} at ${mnt}`);
    // seafs status reached the mount's control socket in the user's runtime dir, and lists no mount of another user
    expect(r.out).toContain(`${mnt}: ${LIB} on ${ctx.server.url} as ${ctx.server.adminEmail}`);
    expect(r.out).toContain('uploads: none pending');
    expect(r.out.split('\n').filter((l) => / on http\S+ as /.test(l))).toHaveLength(1);
    expect(r.out).toContain('not mounted any more');
    await expectRemoteFile(ctx.api, ctx.repos[LIB], '/by-user.txt', Buffer.from('by nobody\n'));
  });

  it('mounts and unmounts an fstab line with the user option through mount(8) and umount(8)', async () => {
    const r = await asUser(`set -e
mount "$MNT"
findmnt -n -o FSTYPE,OPTIONS "$MNT"
echo "through fstab" > "$MNT/fstab.txt"
umount "$MNT"
echo "umount exit $?"
`);
    expect(r.code, r.err + r.out).toBe(0);
    // mounted by the user (fusermount), not by root
    expect(r.out).toMatch(/^fuse\.seafs \S*user_id=65534,group_id=65534/m);
    expect(r.out).toContain('umount exit 0');
    // umount returns before the mount process has uploaded: it waits for its uploads, then exits
    await waitRemoteFile(ctx.api, ctx.repos[LIB], '/fstab.txt', Buffer.from('through fstab\n'));
    // and then it exits (the next case mounts at the same place, which a live seafs there refuses)
    const deadline = Date.now() + 30_000;
    while ((await run('pgrep', ['-u', String(UID), '-f', 'dist/cli/'], { allowFail: true })).code === 0) {
      if (Date.now() > deadline) throw new Error("the fstab line's mount process did not exit within 30 s");
      await sleep(200);
    }
  });

  it('a stale mount left by kill -9 is cleared by seafs unmount --force, then mounts again', async () => {
    const r = await asUser(`set -e
out=$(seafs mount ${login()} --library ${LIB} --daemon)
echo "$out"
pid=$(echo "$out" | sed -n 's/.*(pid \\([0-9]*\\),.*/\\1/p')
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
stat "$MNT" 2>&1 | head -1 || true
seafs unmount --force "$MNT"
seafs mount ${login()} --library ${LIB} --daemon
cat "$MNT/by-user.txt"
seafs unmount "$MNT"
`);
    expect(r.code, r.err + r.out).toBe(0);
    expect(r.out).toMatch(/Transport endpoint is not connected/);
    expect(r.out).toContain(`seafs: detached ${path.join(base, 'mnt')} (fuse.seafs)`);
    expect(r.out).toContain('by nobody');
  });

  it('is told what to do: /dev/fuse closed, --allow-other, a mount point not its own or not empty', async () => {
    const closed = await asUser(`seafs mount ${login()} --library ${LIB}`, 'closed');
    expect(closed.code).toBe(1);
    expect(closed.err.trim()).toBe(
      `seafs: /dev/fuse is crw------- root:root, so nobody (uid ${UID}) cannot open it: as root, open it to users with chmod 0666 /dev/fuse (the usual mode; a udev rule KERNEL=="fuse", MODE="0666" keeps it after a reboot)`,
    );
    // each checked before logging in
    const other = await asUser(`seafs mount ${login()} --library ${LIB} --allow-other`);
    expect(other.code).toBe(1);
    expect(other.err).toContain('--allow-other (allow_other) needs user_allow_other in /etc/fuse.conf');
    const notOwn = await asUser(`seafs mount ${q(ctx.server.url)} ${q(base)} --user x --password-file "$HOME/pw"`);
    expect(notOwn.code).toBe(1);
    expect(notOwn.err.trim()).toBe(
      `seafs: the mount point ${base} belongs to root, not to you: mount on a folder of your own (mkdir ~/drive)`,
    );
    // a mount of root's is not taken for a stale one: neither unmount nor --force touches it
    const rootMount = await mountLibrary(ctx.server, { library: LIB });
    for (const force of ['', ' --force']) {
      const foreign = await asUser(`seafs unmount${force} ${q(rootMount.mnt)}`);
      expect(foreign.code).toBe(1);
      expect(foreign.err.trim()).toBe(
        `seafs: ${rootMount.mnt} is mounted by root (uid 0): only that user or root can unmount it`,
      );
    }
    expect(await isMountpoint(rootMount.mnt)).toBe(true);
    expect((await rootMount.unmount()).code).toBe(0);
    const full = await asUser(`seafs mount ${q(ctx.server.url)} "$HOME" --user x --password-file "$HOME/pw"`);
    expect(full.code).toBe(1);
    expect(full.err).toMatch(new RegExp(`the mount point ${home} is not empty \\(\\d+ entries\\)`));
  });
});
