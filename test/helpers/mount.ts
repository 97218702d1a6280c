// Real FUSE mounts for e2e tests: `seafs mount` as a foreground child process
// tracked by PID, `seafs unmount` through the CLI, and a cleanup that always
// runs (afterAll, and a last-resort process 'exit' hook) so a failing test
// never leaves a mount or a process behind. Also: async runners for ordinary
// tools (never execSync: a blocked event loop starves the test's own timers).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CLI, type TestServer } from './server.js';

export { CLI };

export interface RunResult {
  code: number;
  out: string;
  err: string;
}

export interface RunOptions {
  /** resolve with a non-zero code instead of rejecting */
  allowFail?: boolean;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  input?: string;
}

/** Runs a program (no shell) as a child process; rejects on a non-zero exit unless allowFail. */
export function run(file: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      {
        cwd: opts.cwd,
        env: opts.env ?? process.env,
        maxBuffer: 64 << 20,
        timeout: opts.timeoutMs ?? 180_000,
        killSignal: 'SIGKILL',
      },
      (e, out, err) => {
        let code = 0;
        if (e) {
          const c = (e as { code?: unknown }).code;
          code = typeof c === 'number' ? c : 1;
          if ((e as { killed?: boolean }).killed) err += `\n[killed after ${opts.timeoutMs ?? 180_000} ms]`;
        }
        if (code !== 0 && !opts.allowFail) {
          reject(new Error(`${file} ${args.join(' ')} failed (${code}):\n${err}\n${out.slice(0, 2000)}`));
        } else resolve({ code, out, err });
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** Runs a bash script; quote paths with `q()`. */
export function sh(script: string, opts: RunOptions = {}): Promise<RunResult> {
  return run('bash', ['-c', script], opts);
}

/** Single-quotes a string for bash. */
export function q(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---- mounts ----

export interface MountOptions {
  /** library name or id; omitted: all-libraries mode */
  library?: string;
  user?: string;
  password?: string;
  readOnly?: boolean;
  attrTimeout?: number;
  dirCacheTime?: number;
  /** reuse a mount point (remount after a crash); default: a fresh temp folder */
  mountpoint?: string;
  /** reuse a cache dir; default: a fresh one per mount */
  cacheDir?: string;
  extraArgs?: string[];
  readyTimeoutMs?: number;
  /** the password of an encrypted library (SEAFS_LIBRARY_PASSWORD) */
  libraryPassword?: string;
  /** more environment of the mount process (switches such as SEAFS_UNLOCK_REFRESH_SEC) */
  env?: NodeJS.ProcessEnv;
  /** the seafs script run (mount and unmount) with node: default the checkout's dist/cli/main.js */
  cli?: string;
  /** a source instead of the server's URL with --user and a password (a saved account: `NAME:Library`) */
  source?: string;
}

export interface Mount {
  mnt: string;
  cacheDir: string;
  pid: number;
  child: ChildProcess;
  /** everything the mount process printed so far */
  output(): string;
  /** resolves with the exit code (or 128+signal) of the mount process */
  exited: Promise<number>;
  /** `seafs unmount MNT`; resolves with its result (does not reject) */
  unmount(): Promise<RunResult>;
  /** SIGKILL the mount process and wait for it (leaves a dead mount, as a crash does) */
  kill9(): Promise<void>;
}

const live = new Set<{ mnt: string; child: ChildProcess }>();
let scratch: string | null = null;

/** A per-process scratch dir for mount points, cache dirs and the control sockets. */
export function scratchDir(): string {
  if (!scratch) {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'seafs-e2e-'));
    mkdirSync(path.join(scratch, 'run'), { mode: 0o700 });
  }
  return scratch;
}

/** The env every seafs process of these tests gets: its own runtime dir for control sockets. */
function seafsEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run'),
    // the thumbnails a mount writes for pictures listed land in the scratch dir, not the user's ~/.cache
    XDG_CACHE_HOME: path.join(scratchDir(), 'xdg-cache'),
    ...extra,
  };
}

function alive(c: ChildProcess): boolean {
  return c.exitCode === null && c.signalCode === null;
}

/** Mounts `opts.library` (or every library) of `server`; resolves once the mount answers `stat`. */
export async function mountLibrary(server: TestServer, opts: MountOptions = {}): Promise<Mount> {
  const base = scratchDir();
  const mnt = opts.mountpoint ?? mkdtempSync(path.join(base, 'mnt-'));
  const cacheDir = opts.cacheDir ?? mkdtempSync(path.join(base, 'cache-'));
  const cli = opts.cli ?? CLI;
  const args =
    opts.source !== undefined
      ? [cli, 'mount', opts.source, mnt, '--cache-dir', cacheDir]
      : [cli, 'mount', server.url, mnt, '--user', opts.user ?? server.adminEmail, '--cache-dir', cacheDir];
  if (opts.library !== undefined) args.push('--library', opts.library);
  if (opts.readOnly) args.push('--read-only');
  if (opts.attrTimeout !== undefined) args.push('--attr-timeout', String(opts.attrTimeout));
  if (opts.dirCacheTime !== undefined) args.push('--dir-cache-time', String(opts.dirCacheTime));
  args.push(...(opts.extraArgs ?? []));
  const child = spawn(process.execPath, args, {
    env: seafsEnv({
      SEAFS_PASSWORD: opts.source !== undefined ? undefined : (opts.password ?? server.adminPassword),
      ...(opts.libraryPassword !== undefined ? { SEAFS_LIBRARY_PASSWORD: opts.libraryPassword } : {}),
      ...opts.env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const entry = { mnt, child };
  live.add(entry);
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => (out += d));
  child.stderr!.on('data', (d: string) => {
    out += d;
    if (process.env.SEAFS_TEST_MOUNT_LOG) process.stderr.write(d);
  });
  const exited = new Promise<number>((r) =>
    child.once('exit', (c, sig) => r(c ?? 128 + (os.constants.signals[sig!] ?? 0))),
  );
  void exited.then(() => live.delete(entry));

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (!alive(child)) throw new Error(`seafs mount exited (${await exited}) before it was ready:\n${out}`);
    if (out.includes('seafs: mounted')) {
      // the ready line is printed once FUSE is attached; prove it answers
      const st = await run('stat', ['-f', '-c', '%T', mnt], { allowFail: true, timeoutMs: 10_000 });
      if (st.code === 0 && (await isMountpoint(mnt))) break;
    }
    if (Date.now() > deadline) {
      await killAndDetach(entry);
      throw new Error(`seafs mount not usable within ${opts.readyTimeoutMs ?? 30_000} ms:\n${out}`);
    }
    await sleep(100);
  }

  return {
    mnt,
    cacheDir,
    pid: child.pid!,
    child,
    output: () => out,
    exited,
    unmount: () =>
      run(process.execPath, [cli, 'unmount', mnt], { allowFail: true, env: seafsEnv(), timeoutMs: 300_000 }),
    async kill9() {
      if (alive(child)) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Registers another process that holds a mount (e.g. `seafs demo`) for cleanupMounts(). */
export function trackMountProcess(child: ChildProcess, mnt: string): void {
  const entry = { mnt, child };
  live.add(entry);
  child.once('exit', () => live.delete(entry));
}

export interface Demo {
  child: ChildProcess;
  /** everything it printed so far */
  output(): string;
  /** resolves with its exit code */
  exited: Promise<number | null>;
  /** the demo server and its account, as the demo printed them */
  url: string;
  user: string;
  password: string;
}

/** Starts `seafs demo MNT` (output into pipes) and resolves once it printed its server and account. */
export async function startDemo(mnt: string): Promise<Demo> {
  const child = spawn(process.execPath, [CLI, 'demo', mnt], { env: testEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  trackMountProcess(child, mnt);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  const t0 = Date.now();
  const account = /user (\S+)\s+password (\S+)/;
  while (!account.test(out)) {
    if (child.exitCode !== null || Date.now() - t0 > 60_000) throw new Error(`seafs demo not ready: ${out}`);
    await sleep(100);
  }
  const [, url] = /server\s+(http:\/\/\S+)/.exec(out)!;
  const [, user, password] = account.exec(out)!;
  return { child, output: () => out, exited, url, user, password };
}

/** The env every seafs process of these tests should get (its own control-socket dir). */
export function testEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return seafsEnv(extra);
}

/** True when `mnt` is listed in /proc/mounts (stat of a dead FUSE mount fails, this does not). */
export async function isMountpoint(mnt: string): Promise<boolean> {
  const r = await run('findmnt', ['-n', '-M', mnt], { allowFail: true, timeoutMs: 10_000 });
  return r.code === 0 && r.out.trim() !== '';
}

async function killAndDetach(e: { mnt: string; child: ChildProcess }): Promise<void> {
  if (alive(e.child)) {
    e.child.kill('SIGKILL');
    await new Promise<void>((r) => {
      if (!alive(e.child)) return r();
      e.child.once('exit', () => r());
      setTimeout(r, 5_000);
    });
  }
  await run('fusermount', ['-uz', e.mnt], { allowFail: true, timeoutMs: 10_000 });
  live.delete(e);
}

/**
 * Kills every mount process this test file started (by PID), lazily detaches
 * every mount point it used and removes the scratch dir. Call it in afterAll.
 */
export async function cleanupMounts(): Promise<void> {
  for (const e of [...live]) await killAndDetach(e);
  if (scratch) {
    // detach anything still mounted under the scratch dir (remounts on reused paths)
    const r = await run('findmnt', ['-rn', '-o', 'TARGET'], { allowFail: true });
    for (const t of r.out.split('\n'))
      if (t.startsWith(scratch + '/')) await run('fusermount', ['-uz', t], { allowFail: true });
    // never recurse into a mount that is still attached: rm would delete remote files
    const left = (await run('findmnt', ['-rn', '-o', 'TARGET'], { allowFail: true })).out
      .split('\n')
      .filter((t) => t.startsWith(scratch + '/'));
    if (left.length) throw new Error(`mounts still attached after cleanup: ${left.join(', ')}`);
    rmSync(scratch, { recursive: true, force: true });
    scratch = null;
  }
}

// Last resort when the worker exits without afterAll (a crash or a timeout):
// only synchronous work is possible here, and nothing is left to starve.
process.once('exit', () => {
  for (const e of live) {
    try {
      if (alive(e.child)) process.kill(e.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    spawnSync('fusermount', ['-uz', e.mnt], { stdio: 'ignore', timeout: 5_000 });
  }
});
