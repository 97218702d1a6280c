// The FUSE contenders. mount() gives a handle:
//   path      the mount point (the library's root)
//   pid       the process serving it (for peak RSS)
//   settle(check, what)  returns once the data written so far is on the server, the moment the workload's
//             clock stops: seafs unmounts (its unmount waits for pending uploads), rclone polls `check`,
//             memfs has no server. `check()` resolves true when the server holds the expected data.
//   close()   unmounts if still mounted and ends the process (never timed).
// opts.cacheDir (seafs, rclone): mount on this cache dir and leave it in place (the remount job's).
import { mkdirSync, mkdtempSync, rmSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  run,
  startProcess,
  spawnBackground,
  waitFor,
  isMounted,
  trackMount,
  trackPid,
  untrackPid,
  killPid,
  isAlive,
  lazyUnmount,
  findPids,
  sleep,
} from './proc.mjs';
import { mountArgs } from './server.mjs';

const MEMFS = fileURLToPath(new URL('../memfs.mjs', import.meta.url));

function fresh(ctx, kind, name) {
  const dir = join(ctx.work, kind);
  mkdirSync(dir, { recursive: true });
  return mkdtempSync(join(dir, `${name}-`));
}

/** Never recursive: if a mount somehow survived, a recursive delete would wipe the library through it. */
function removeMountDir(mnt) {
  try {
    rmdirSync(mnt);
  } catch {
    // best effort
  }
}

async function waitExit(pid, ms) {
  const end = Date.now() + ms;
  while (isAlive(pid) && Date.now() < end) await sleep(50);
  return !isAlive(pid);
}

export const seafs = {
  name: 'seafs',
  async mount(ctx, mode, opts = {}) {
    const mnt = fresh(ctx, 'mnt', 'seafs');
    const cache = opts.cacheDir ?? fresh(ctx, 'cache', 'seafs');
    trackMount(mnt);
    // control socket and log inside the work dir, which the run removes (not in /run/seafs for good)
    const runtime = { SEAFS_RUNTIME_DIR: join(ctx.work, 'run') };
    const env = { SEAFS_PASSWORD: ctx.server.user.password, ...runtime };
    const args = [
      ...mountArgs(ctx.cli, ctx.server, mnt),
      '--daemon',
      '--cache-dir',
      cache,
      // variants measured side by side, e.g. BENCH_SEAFS_ARGS='--no-cache-streams'
      ...(process.env.BENCH_SEAFS_ARGS ?? '').split(' ').filter(Boolean),
      ...(opts.seafsArgs ?? []),
    ];
    try {
      await run(process.execPath, args, { env, timeoutMs: 60_000, name: 'seafs mount' });
      await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'the seafs mount' });
    } catch (err) {
      lazyUnmount(mnt);
      for (const pid of findPids(mnt)) await killPid(pid, 1000);
      removeMountDir(mnt);
      throw err;
    }
    // --daemon detaches: find the serving process by its command line (it names our unique mount point).
    const pid = findPids(mnt)[0] ?? null;
    if (pid) trackPid(pid);
    let unmounted = false;
    const unmount = async () => {
      if (unmounted) return;
      unmounted = true;
      await run(process.execPath, [ctx.cli, 'unmount', mnt], {
        env: runtime,
        timeoutMs: ctx.timeoutMs,
        name: 'seafs unmount',
      });
      if (isMounted(mnt)) throw new Error('still mounted after `seafs unmount` returned');
    };
    return {
      path: mnt,
      pid,
      /** the mount's answer to `seafs status --json` */
      async status() {
        const r = await run(process.execPath, [ctx.cli, 'status', '--json', mnt], {
          env: runtime,
          timeoutMs: 30_000,
          name: 'seafs status',
        });
        return JSON.parse(r.stdout)[0];
      },
      async settle(check, what) {
        await unmount();
        if (check && !(await check())) throw new Error(`${what}: not on the server after \`seafs unmount\` returned`);
      },
      async close() {
        try {
          if (!unmounted && isMounted(mnt)) await unmount();
        } finally {
          lazyUnmount(mnt);
          if (pid && !(await waitExit(pid, 10_000))) await killPid(pid);
          untrackPid(pid);
          if (!opts.cacheDir) rmSync(cache, { recursive: true, force: true });
          removeMountDir(mnt);
        }
      },
    };
  },
};

let obscured = null;
async function rcloneEnv(ctx) {
  if (!obscured) obscured = (await run('rclone', ['obscure', '-'], { input: ctx.server.user.password })).stdout.trim();
  return {
    RCLONE_CONFIG_BENCH_TYPE: 'seafile',
    RCLONE_CONFIG_BENCH_URL: ctx.server.url,
    RCLONE_CONFIG_BENCH_USER: ctx.server.user.email,
    RCLONE_CONFIG_BENCH_PASS: obscured,
    RCLONE_CONFIG_BENCH_LIBRARY: ctx.server.library,
  };
}

export const rclone = {
  name: 'rclone',
  /** mode 'read' -> --vfs-cache-mode full, 'write' -> writes (as issue 4 asks). */
  async mount(ctx, mode, opts = {}) {
    const mnt = fresh(ctx, 'mnt', 'rclone');
    const cache = opts.cacheDir ?? fresh(ctx, 'cache', 'rclone');
    trackMount(mnt);
    const args = [
      'mount',
      'bench:',
      mnt,
      '--vfs-cache-mode',
      mode === 'read' ? 'full' : 'writes',
      '--cache-dir',
      cache,
      // Upload as soon as a file is closed instead of after rclone's default 5 s: the fastest rclone can be.
      '--vfs-write-back',
      '0s',
      '--log-level',
      'NOTICE',
    ];
    const child = spawnBackground('rclone', args, { env: await rcloneEnv(ctx), logFile: join(ctx.work, 'rclone.log') });
    const pid = child.pid;
    try {
      await waitFor(() => isMounted(mnt) || !isAlive(pid), { timeoutMs: 30_000, what: 'the rclone mount' });
      if (!isMounted(mnt)) throw new Error('rclone exited before mounting (see rclone.log in the work dir)');
    } catch (err) {
      lazyUnmount(mnt);
      await killPid(pid, 1000);
      rmSync(cache, { recursive: true, force: true });
      removeMountDir(mnt);
      throw err;
    }
    return {
      path: mnt,
      pid,
      async settle(check, what) {
        if (check)
          await waitFor(check, { timeoutMs: ctx.timeoutMs, intervalMs: 200, what: `${what} to reach the server` });
      },
      async close() {
        try {
          if (isMounted(mnt)) await run('fusermount', ['-u', mnt], { timeoutMs: 30_000, check: false });
        } finally {
          lazyUnmount(mnt);
          if (!(await waitExit(pid, 15_000))) await killPid(pid);
          untrackPid(pid);
          if (!opts.cacheDir) rmSync(cache, { recursive: true, force: true });
          removeMountDir(mnt);
        }
      },
    };
  },
};

/** bench/memfs.mjs at a fresh mount point with `args`, as `name`: the handle of a process that unmounts on SIGTERM */
async function memfsMount(ctx, name, args, extra = {}) {
  const mnt = fresh(ctx, 'mnt', name);
  trackMount(mnt);
  let child;
  try {
    ({ child } = await startProcess(process.execPath, [MEMFS, mnt, ...(await args())], {
      ready: (out) => out.includes('mounted'),
      timeoutMs: 30_000,
      logFile: join(ctx.work, `${name}.log`),
    }));
    await waitFor(() => isMounted(mnt), { timeoutMs: 10_000, what: `the ${name} mount` });
  } catch (err) {
    lazyUnmount(mnt);
    if (child) await killPid(child.pid, 1000);
    removeMountDir(mnt);
    throw err;
  }
  const pid = child.pid;
  return {
    path: mnt,
    pid,
    ...extra,
    async settle() {},
    async close() {
      try {
        await killPid(pid, 10_000); // SIGTERM: memfs unmounts itself
      } finally {
        lazyUnmount(mnt);
        removeMountDir(mnt);
      }
    },
  };
}

export const memfs = {
  name: 'memfs',
  memfs: true,
  mount(ctx) {
    const c = ctx.config;
    const args = async () => [
      '--big',
      `/big.bin:${c.bigBytes}`,
      '--tree',
      `/tree:${c.treeFolders}:${c.treeFiles}:1`,
      // the large tree, when this run lists it (bigtree.mjs)
      ...(ctx.bigTree ? ['--tree', ctx.bigTree.memfsArg] : []),
    ];
    return memfsMount(ctx, 'memfs', args, { inMemory: true });
  },
};

/**
 * memfs serving the big file from the server with the least work a FUSE filesystem can do for that (one
 * streaming GET read into a ring buffer, lib/http-source.mjs): the floor of the cold read's CPU per GiB for any
 * mount on this binding that fetches over HTTP. Only the seqread job.
 */
export const httpfs = {
  name: 'httpfs',
  jobs: ['seqread'],
  mount(ctx) {
    const { api, repo } = ctx.server;
    const args = async () => [
      '--big',
      `/big.bin:${ctx.config.bigBytes}`,
      '--read-url',
      await api.downloadLink(repo, '/big.bin', true),
    ];
    return memfsMount(ctx, 'httpfs', args);
  },
};
