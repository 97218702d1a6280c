// The mount process: log in, resolve the library, mount, serve the control
// socket, and on unmount/SIGINT/SIGTERM upload everything pending before
// detaching. Shared by `seafs mount` and `seafs demo`. The login is
// connect.ts, the settings mount-settings.ts; startMount's steps share the
// mount's state (the vfs, the FUSE mount, the control socket, the unmount's
// bound) through one closure.
import { createHash } from 'node:crypto';
import { chmod, mkdir, realpath } from 'node:fs/promises';
import { homedir } from 'node:os';
import v8 from 'node:v8';
import { join, resolve } from 'node:path';
import type { SeafileClient } from '../../client/client.js';
import { clearStaleMount, mountVfs, type FuseMount } from '../../fuse/mount.js';
import type { OpCounts } from '../../fuse/ops.js';
import { VfsError } from '../../vfs/errors.js';
import { DEFAULT_DELETE_GUARD, Vfs, WrongLibraryPassword } from '../../vfs/vfs.js';
import { shellWord } from '../control/confirm-delete.js';
import { controlAlive, listenControl } from '../control/control-socket.js';
import { waitForDetached, watchDetach } from './detach-watch.js';
import { logger, unexpectedErrorHandler } from '../log.js';
import { pinControl } from '../control/pin.js';
import { fmtBytes, fmtDuration } from '../control/status-format.js';
import { readLibraryPassword } from './secrets.js';
import { cacheTimes } from './cache-times.js';
import { parseUmask } from './fstab-options.js';
import { fmtBandwidth, parseBwLimit } from '../size-units.js';
import { UserError } from '../user-error.js';
import { loginAgain, savedToken } from '../accounts/account-source.js';
import { TokenWatch } from './token-watch.js';
import { appliedV8Flags, mountIsUp } from './v8-tuning.js';
import {
  foreignMountProblem,
  mountedProblem,
  mountpointFacts,
  mountpointProblem,
  readProcMounts,
  staleProblem,
} from './preflight.js';
import { unlockAgainLog } from './password-resend.js';
import { blockThreshold, cacheBytes, type MountSettings } from './mount-settings.js';
import { log } from './mount-log.js';
import { explain } from './connect.js';
import { UnmountBound, unmountWaitMs } from './unmount-wait.js';

export { blockThreshold, type MountSettings } from './mount-settings.js';
export { log } from './mount-log.js';
export { connect, offlineClient, uploadSwitches } from './connect.js';

const NEW_FILE_DELAY_MS = Number(process.env.SEAFS_NEW_FILE_DELAY_MS ?? 300);

/** A failure to explain in one line, without a stack. */
export { UserError };

/** The log hook of the vfs and fuse layers: repeats from their retry loops are collapsed. */
const layerLog = logger.hook();

/** Check the mount point; clear a stale mount left by a dead seafs (mount/preflight.ts says what else is wrong). */
async function prepareMountpoint(mnt: string, nonempty: boolean): Promise<void> {
  // one detached from outside and still uploading is waited for a few seconds (mount/detach-watch.ts)
  const busy = await waitForDetached(mnt, log);
  if (busy) throw new UserError(busy);
  if (await controlAlive(mnt))
    throw new UserError(`${mnt} is already mounted by a running seafs (seafs unmount ${mnt})`);
  const foreign = foreignMountProblem(mnt, process.getuid?.() ?? 0, readProcMounts());
  if (foreign) throw new UserError(foreign);
  let m = mountpointFacts(mnt);
  // a dead seafs mount can still answer stat (cached root attributes): clear it too
  if (m.state === 'stale' || m.mountedType === 'fuse.seafs') {
    log(`clearing a stale mount at ${mnt}`);
    try {
      await clearStaleMount(mnt);
    } catch (e) {
      throw new UserError(staleProblem(mnt, `clearing it failed: ${(e as Error).message}`));
    }
    m = mountpointFacts(mnt);
  }
  if (m.mountedType) throw new UserError(mountedProblem(mnt, m.mountedType));
  const problem = mountpointProblem(m, process.getuid?.() ?? 0, nonempty);
  if (problem) throw new UserError(problem);
}

export interface RunningMount {
  vfs: Vfs;
  label: string;
  mountpoint: string;
  /** uploads what is pending, detaches; resolves with the exit code (0: nothing lost) */
  shutdown(reason: string): Promise<number>;
  /** stop waiting for uploads now (a second signal): they stay in the journal for the next mount */
  giveUp(why: string): void;
  /** resolves with the exit code once a shutdown (from any source) has finished */
  finished: Promise<number>;
}

export async function startMount(s: MountSettings, client: SeafileClient, email: string): Promise<RunningMount> {
  const mnt = resolve(s.mountpoint);
  await prepareMountpoint(mnt, !!s.kernelOptions?.includes('nonempty'));
  const realMountpoint = await realpath(mnt).catch(() => mnt);
  const root = s.cacheDir ? resolve(s.cacheDir) : join(homedir(), '.cache', 'seafs');
  const account = createHash('sha256')
    .update(`${s.url.replace(/\/+$/, '')}\u0000${email}`)
    .digest('hex')
    .slice(0, 16);
  const cacheDir = join(root, account);
  // the cache holds the user's file contents: readable by its owner only
  await mkdir(cacheDir, { recursive: true, mode: 0o700 });
  await chmod(cacheDir, 0o700);

  const times = cacheTimes(s.dirCacheTime, s.attrTimeout);
  // the limits of file transfers (the client's token buckets: the vfs knows nothing of them)
  if (s.bwlimit !== undefined) {
    client.setBandwidth(parseBwLimit(s.bwlimit));
    const l = client.bandwidth;
    if (l.up !== null || l.down !== null) log(`bandwidth limit: ${fmtBandwidth(l)}`);
  }
  let vfs: Vfs;
  let retryUploads = () => {};
  // a token refused while mounted: said once (log, status); a saved account's new login is taken (mount/token-watch.ts)
  const tokenWatch = new TokenWatch(client, {
    hint: s.account
      ? `log in again: ${loginAgain(s.account, s.config)} (the mount then takes the new login)`
      : 'mount again with a valid password or token (the journal keeps what waits)',
    log: (m) => logger.warn(m),
    reload: s.account ? () => savedToken(s.account!, s.config) : undefined,
    onBack: () => retryUploads(),
  });
  try {
    vfs = await Vfs.create(client, {
      library: s.library,
      readOnly: s.readOnly,
      uid: s.uid,
      gid: s.gid,
      umask: s.umask !== undefined ? parseUmask(s.umask, '--umask') : undefined,
      cacheDir,
      dirCacheTimeMs: times.listingMs,
      officeLocks: s.officeLocks,
      links: s.links === true,
      // the URIs file managers hash name the mountpoint's real path (taken before the mount hides it)
      thumbnails: s.thumbnails === false ? undefined : { mountpoint: realMountpoint },
      diskCacheBytes: cacheBytes(s),
      reader: {
        cacheStreamsUpTo: s.cacheStreams === undefined ? undefined : s.cacheStreams ? Infinity : 0,
        blockReuseMinBytes: blockThreshold(process.env.SEAFS_BLOCK_READS, 'SEAFS_BLOCK_READS'),
      },
      libraryPassword: async (lib) => {
        const password = await readLibraryPassword(s, lib.name);
        logger.addSecret(password);
        return password;
      },
      unlockHint: (lib) => `give its password with: seafs unlock ${mnt} '${lib.name.replace(/'/g, `'\\''`)}'`,
      log: layerLog,
      serverUrl: s.url,
      deleteGuard: {
        max: s.deleteGuard ?? DEFAULT_DELETE_GUARD,
        confirmHint: `seafs confirm-delete ${shellWord(mnt)}`,
      },
      // a new file waits 300 ms after its close before its upload, so that write-temp-then-rename (rsync,
      // git's lock files, installers) uploads once under the final name instead of a rename that waits for
      // the upload and then its own call: rsync -a of 210 files onto the real Seafile server took 68 s
      // (210 renames at 100-300 ms each, one after another), against 4.7 s on seafs serve
      writeBack: { newFileDelayMs: NEW_FILE_DELAY_MS, blocks: { threshold: blockThreshold() } },
    });
  } catch (e) {
    if (e instanceof WrongLibraryPassword || e instanceof UserError)
      throw new UserError(e.message.replace(/^EACCES: /, ''));
    if (e instanceof VfsError && e.code === 'ENOENT' && s.library) {
      const libs = await client.listLibraries().catch(() => []);
      throw new UserError(
        `no library named or with id "${s.library}"; the account reaches: ${libs.map((l) => l.name).join(', ') || 'none'}`,
      );
    }
    throw explain(e, s.url, false);
  }
  retryUploads = () => vfs.retryUploads();
  // the passwords the client sends again by itself (on its timer, after a refusal): one line each
  client.onUnlockAgain = unlockAgainLog((repo) => vfs.libraryById(repo), layerLog);
  const label = vfs.library?.name ?? 'all libraries';
  const opCounts: OpCounts = {};
  // detached from outside (umount, fusermount -u): upload what is pending and exit (mount/detach-watch.ts; made
  // before the mount, armed once it is up)
  const watch = watchDetach(mnt, () => {
    if (!stopping) void shutdown('the mount was detached');
  });
  let fuse: FuseMount;
  try {
    fuse = await mountVfs(vfs, {
      mountpoint: mnt,
      name: vfs.library?.name ?? 'all',
      attrTimeoutSec: times.kernelSec,
      allowOther: s.allowOther,
      readAheadKb: s.readAhead === undefined ? undefined : Math.round(s.readAhead / 1024),
      counts: opCounts,
      xattrs: s.xattrs !== false,
      // other users are held to the owners and modes shown, as on a local disk
      extraOptions:
        s.allowOther && !s.kernelOptions?.includes('default_permissions')
          ? [...(s.kernelOptions ?? []), 'default_permissions']
          : s.kernelOptions,
      debug: s.debug,
      log: layerLog,
    });
  } catch (e) {
    watch.close();
    vfs.close();
    throw new UserError(`cannot mount at ${mnt}: ${(e as Error).message}`);
  }
  // start-up is over: the V8 flags that wait for it, if any (SEAFS_TURBOFAN=mounted; mount/v8-tuning.ts)
  mountIsUp();

  const startedAt = Date.now();
  let stopping: Promise<number> | null = null;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((r) => (finish = r));
  const control = await listenControl(
    mnt,
    () => void shutdown('seafs unmount'),
    () =>
      JSON.stringify({
        pid: process.pid,
        mountpoint: mnt,
        server: s.url,
        account: email,
        library: label,
        startedAt,
        cacheDir,
        cacheMaxBytes: vfs.stats().diskCache ? cacheBytes(s) : 0,
        bandwidth: client.bandwidth,
        queue: vfs.uploadQueue(),
        ops: opCounts,
        readAheadKb: fuse.readAheadKb,
        ...vfs.status(),
        tokenRefused: tokenWatch.state(),
        rssBytes: process.memoryUsage().rss,
        memory: process.memoryUsage(),
        // the V8 flags the process set (src/cli/mount/v8-tuning.ts), and the young generation's size now
        v8Flags: appliedV8Flags(),
        newSpaceBytes: v8.getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space')?.space_size,
      }),
    {
      // `seafs confirm-delete MOUNTPOINT [--cancel]` (src/vfs/remove/mass-delete-guard.ts)
      'delete-guard': (arg) => JSON.stringify({ held: vfs.answerDeleteGuard(arg === 'cancel') }),
      'cache-clear': () => {
        const freed = vfs.clearCache();
        log(`cache cleared: ${freed} bytes of downloaded data dropped (files waiting for upload are kept)`);
        return JSON.stringify({ freed });
      },
      // `seafs lock PATH` / `seafs unlock-file PATH`: the path inside the mount, as JSON
      'file-lock': async (arg) => {
        const { path, on } = JSON.parse(arg) as { path: string; on: boolean };
        await vfs.setLock(path, on);
        log(`${path} ${on ? 'locked' : 'unlocked'} on the server`);
        return 'ok';
      },
      // `seafs bwlimit MOUNTPOINT [RATE]`: the new limits (none: only the current ones), answered as JSON
      bwlimit: (arg) => {
        if (arg.trim()) {
          client.setBandwidth(parseBwLimit(arg.trim(), 'seafs bwlimit'));
          log(`bandwidth limit now ${fmtBandwidth(client.bandwidth)} (seafs bwlimit)`);
        }
        return JSON.stringify(client.bandwidth);
      },
      // `seafs pin PATH` / `seafs unpin PATH` (control/pin.ts)
      pin: pinControl(vfs),
      // `seafs restore FILE --at TIME`: the path inside the mount and the time (ms), as JSON
      'file-restore': async (arg) => {
        const { path, at } = JSON.parse(arg) as { path: string; at: number };
        const r = await vfs.restoreVersion(path, at);
        if (!r.current) log(`${path} restored to its version "${r.name}"`);
        // how long the kernel may still show the file's old size and time (see control/file-restore.ts)
        return JSON.stringify({ ...r, kernelMs: Math.ceil(times.kernelSec * 1000) });
      },
    },
    async (library, password) => {
      logger.addSecret(password);
      if (vfs.library)
        throw new Error(`this mount holds one library (${vfs.library.name}); unlock applies to all-libraries mounts`);
      try {
        const lib = await vfs.unlockLibrary(library, password);
        log(`library "${lib.name}" unlocked (seafs unlock)`);
        return lib.name;
      } catch (e) {
        throw new Error(e instanceof VfsError ? e.message.replace(/^[A-Z]+: /, '') : (e as Error).message);
      }
    },
  );
  const say = (line: string) => {
    log(line);
    control.broadcast(line);
  };
  // the unmount's progress lines: the rate since the unmount began and the time left
  let since: { at: number; bytes: number } | null = null;
  const describe = (list: { path: string; size: number }[]) => {
    const bytes = list.reduce((a, f) => a + f.size, 0);
    const names = list
      .slice(0, 5)
      .map((f) => f.path)
      .join(', ');
    const done = vfs.stats().uploadedBytes;
    since ??= { at: Date.now(), bytes: done };
    const secs = (Date.now() - since.at) / 1000;
    const rate = secs >= 2 ? (done - since.bytes) / secs : 0;
    const speed = rate > 0 ? `; ${fmtBytes(Math.round(rate))}/s, about ${fmtDuration(bytes / rate)} left` : '';
    return `${list.length} upload(s), ${fmtBytes(bytes)}: ${names}${list.length > 5 ? ', ...' : ''}${speed}`;
  };

  let bound: UnmountBound | null = null;
  function shutdown(reason: string): Promise<number> {
    if (stopping) return stopping;
    // the wait for uploads ends when the server stays away (see mount/unmount-wait.ts): what is left stays in the journal
    const b = new UnmountBound({
      waitMs: unmountWaitMs(),
      cacheDir,
      sample: () => {
        const st = vfs.stats();
        return { landed: st.uploads, failures: st.failures, offline: !st.online };
      },
    });
    bound = b;
    b.start();
    /** the step's result, or null once the bound gave up */
    const bounded = <T>(p: Promise<T>): Promise<T | null> => Promise.race([p, b.gaveUp.then(() => null)]);
    stopping = (async () => {
      say(`unmounting ${mnt} (${reason})`);
      const progress = (list: { path: string; size: number }[]) => say(`waiting for ${describe(list)}`);
      await bounded(vfs.drain(progress));
      if ((await bounded(fuse.unmount())) === null) await clearStaleMount(mnt).catch(() => false);
      // writes that were still in flight when the mount detached
      const failed = (await bounded(vfs.drain(progress))) ?? [];
      // the disk cache's last writes and their markers, before `seafs unmount` returns and a next mount reads them
      await bounded(vfs.shutdown());
      b.close();
      let code = 0;
      if (b.stopped !== null) {
        code = 1;
        const left = vfs.leftBehind();
        say(
          b.stopped.includes('cache folder')
            ? `stopped waiting for uploads: ${b.stopped}; ${left.length} file(s) written here cannot be uploaded any more`
            : `stopped waiting for uploads: ${b.stopped}; ${left.length} file(s) stay in the journal in ${cacheDir} and the next mount uploads them`,
        );
        for (const f of left.slice(0, 20)) say(`  ${f.path} (${fmtBytes(f.size)})`);
        if (left.length > 20) say(`  ... and ${left.length - 20} more`);
        control.broadcast('done failed');
      } else if (failed.length) {
        code = 1;
        say(
          `${failed.length} file(s) could not be uploaded; they are kept in ${cacheDir} and the next mount uploads them:`,
        );
        for (const f of failed) say(`  ${f.path} (${fmtBytes(f.size)}): ${f.error}`);
        control.broadcast('done failed');
      } else {
        say(`unmounted ${mnt}; every upload is on the server`);
        control.broadcast('done ok');
      }
      await bounded(control.close());
      tokenWatch.close();
      vfs.close();
      if (b.stopped === null) await client.close().catch(() => {});
      return code;
    })().catch((e) => {
      logger.error(`unmount failed: ${(e as Error).message}`);
      return 1;
    });
    void stopping.then(finish);
    return stopping;
  }
  /** a second signal: stop waiting for uploads now (what is pending stays in the journal) */
  function giveUp(why: string): void {
    if (!stopping) void shutdown(why);
    bound?.abort(why);
  }
  watch.arm();
  void finished.then(() => watch.close());
  return { vfs, label, mountpoint: mnt, shutdown, giveUp, finished };
}

/**
 * Exit on SIGINT/SIGTERM/SIGHUP/unmount after uploads; never leave a dead mount
 * on an unexpected error. SIGHUP (the terminal of a foreground mount closed) is
 * a SIGTERM, as in libfuse: upload, unmount, exit; the dead terminal only
 * silences the log. A mount meant to outlive its terminal runs with --daemon.
 */
export function handleSignals(m: RunningMount): void {
  let signals = 0;
  const onSignal = (sig: string) => {
    signals++;
    if (signals > 1) m.giveUp(`a second ${sig}`);
    else void m.shutdown(sig);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGHUP', () => onSignal('SIGHUP'));
  process.on('uncaughtException', unexpectedErrorHandler(logger, 'unexpected error (the mount keeps running)'));
  process.on('unhandledRejection', unexpectedErrorHandler(logger, 'unexpected rejection (the mount keeps running)'));
}
