// Processes and mounts the benchmark starts, and the cleanup that undoes them even on failure.
// Every live mount and PID is also kept in $BENCH_STATE, so scripts/bench's trap can clean up after a crash.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, readdirSync, writeFileSync, openSync, closeSync } from 'node:fs';

const mounts = new Set();
const pids = new Set();
const stateFile = process.env.BENCH_STATE;

/** Rewrites the snapshot of what is live now, so a trap never kills a PID that has since been reused. */
function save() {
  if (!stateFile) return;
  const lines = [...[...mounts].map((m) => `mount ${m}`), ...[...pids].map((p) => `pid ${p}`)];
  try {
    writeFileSync(stateFile, lines.join('\n') + (lines.length ? '\n' : ''));
  } catch {
    // best effort
  }
}
export function trackMount(path) {
  mounts.add(path);
  save();
}
export function trackPid(pid) {
  if (!pid) return;
  pids.add(pid);
  save();
}
export function untrackMount(path) {
  mounts.delete(path);
  save();
}
export function untrackPid(pid) {
  pids.delete(pid);
  save();
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Mount points currently in the kernel's table (octal escapes decoded). */
export function mountPoints() {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
}
export const isMounted = (path) => mountPoints().includes(path);

export async function waitFor(pred, { timeoutMs, intervalMs = 50, what }) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > end) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Stop a process we started: SIGTERM, then SIGKILL after graceMs. */
export async function killPid(pid, graceMs = 5000) {
  if (!pid || !isAlive(pid)) return untrackPid(pid);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // best effort
  }
  const end = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < end) await sleep(50);
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // best effort
    }
  }
  untrackPid(pid);
}

export function lazyUnmount(path) {
  if (isMounted(path)) spawnSync('fusermount', ['-uz', path], { stdio: 'ignore' });
  untrackMount(path);
}

/** Synchronous, so it also works from an exit handler. */
export function cleanupAll() {
  for (const m of [...mounts]) lazyUnmount(m);
  for (const pid of [...pids]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // best effort
    }
    pids.delete(pid);
  }
  save();
}

/**
 * Run a command to completion with a time limit. Resolves {code, stdout, stderr, ms}; rejects on timeout
 * (after killing it) or, with check, on a non-zero exit. stdout may be discarded to keep huge outputs cheap.
 */
export function run(
  cmd,
  args,
  { timeoutMs = 600_000, env, input, keepStdout = true, check = true, cwd, name = cmd } = {},
) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, args, {
      env: env ? { ...process.env, ...env } : process.env,
      cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    trackPid(child.pid);
    let stdout = '';
    let stdoutBytes = 0;
    let stdoutLines = 0;
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdoutBytes += d.length;
      for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) stdoutLines++;
      if (keepStdout) stdout += d;
    });
    child.stderr.on('data', (d) => {
      if (stderr.length < 20000) stderr += d;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      untrackPid(child.pid);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      untrackPid(child.pid);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const res = { code, signal, stdout, stdoutBytes, stdoutLines, stderr, ms };
      if (timedOut) return reject(new Error(`${name} timed out after ${Math.round(timeoutMs / 1000)} s`));
      if (check && code !== 0) {
        // cmp reports a difference on stdout, most tools on stderr.
        const why = (
          stderr.trim().split('\n').pop() ||
          stdout.trim().split('\n').pop() ||
          `exit ${code ?? signal}`
        ).slice(0, 200);
        return reject(new Error(`${name} failed: ${why}`));
      }
      resolve(res);
    });
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/** Start a long-lived process; resolves once `ready(stdoutSoFar)` returns a truthy value. */
export function startProcess(cmd, args, { env, ready, timeoutMs = 30_000, logFile }) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: env ? { ...process.env, ...env } : process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackPid(child.pid);
    let out = '';
    let err = '';
    let done = false;
    const log = (d) => {
      if (logFile) appendFileSync(logFile, d);
    };
    const finish = (e, v) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (e) reject(e);
      else resolve(v);
    };
    const timer = setTimeout(
      () => finish(new Error(`${cmd} not ready after ${timeoutMs / 1000} s: ${err.trim().slice(-200)}`)),
      timeoutMs,
    );
    child.stdout.on('data', (d) => {
      log(d);
      out += d;
      const v = ready(out);
      if (v) finish(null, { child, value: v });
    });
    child.stderr.on('data', (d) => {
      log(d);
      if (err.length < 20000) err += d;
    });
    child.on('error', (e) => finish(e));
    child.on('exit', (code, sig) => {
      untrackPid(child.pid);
      finish(
        new Error(
          `${cmd} exited (${code ?? sig}) before it was ready: ${err.trim().split('\n').slice(-3).join(' | ').slice(0, 300)}`,
        ),
      );
    });
  });
}

/** Start a background process (output to logFile or discarded), tracked for cleanup. */
export function spawnBackground(cmd, args, { env, logFile } = {}) {
  const out = logFile ? openSync(logFile, 'a') : 'ignore';
  const child = spawn(cmd, args, { env: env ? { ...process.env, ...env } : process.env, stdio: ['ignore', out, out] });
  if (typeof out === 'number') closeSync(out);
  trackPid(child.pid);
  child.on('exit', () => untrackPid(child.pid));
  return child;
}

/** PIDs (other than ours) whose command line contains every one of `parts`. */
export function findPids(...parts) {
  const found = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (parts.every((p) => cmd.includes(p))) found.push(Number(d));
    } catch {
      // best effort
    }
  }
  return found;
}

/** Peak resident set size of a live process, in MiB (null when it is gone). */
export function peakRssMiB(pid) {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Samples VmHWM while a process lives; `.peak` keeps the last value seen (VmHWM only grows). */
export function rssSampler(pid, intervalMs = 100) {
  const s = {
    peak: null,
    stop() {
      clearInterval(timer);
      sample();
      return s.peak;
    },
  };
  const sample = () => {
    const v = peakRssMiB(pid);
    if (v !== null) s.peak = Math.max(s.peak ?? 0, v);
  };
  const timer = setInterval(sample, intervalMs);
  sample();
  return s;
}

let dropWarned = false;

/**
 * Cold reads start with the guest's page cache dropped, but this VM's disk sits on storage whose own caching no
 * command here drops: whoever reads a server object from the disk first after it was written pays that cold
 * device (500 MB/s against 2.5 GB/s), and that was always the first contender. Reading the server's large objects
 * once from the disk (the guest cache dropped first: right after the seed they are still in it) before each drop
 * gives every contender the same device state; the guest cache is still cold for all of them.
 */
export function primeServerDisk(dataDir) {
  dropCaches();
  spawnSync('sh', ['-c', 'find "$1" -type f -size +64M -exec cat {} + > /dev/null', 'sh', dataDir]);
}

/** Flush and drop the page cache (needs root); warns once and carries on when it cannot. */
export function dropCaches() {
  spawnSync('sync');
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '3\n');
    return true;
  } catch (err) {
    if (!dropWarned)
      process.stderr.write(`bench: cannot drop caches (${err.code}); cold runs are only cold in the mount\n`);
    dropWarned = true;
    return false;
  }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU time (user + system) a live process has used so far, in seconds (null when it is gone). */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces: count fields after its closing parenthesis
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK; // fields 14 (utime) and 15 (stime)
  } catch {
    return null;
  }
}

/**
 * The CPU time a process uses from now on. Sampled every `intervalMs` as well, so a process that exits before
 * stop() (seafs ends at its unmount) still counts up to its last sample (at most one interval is lost).
 */
export function cpuMeter(pid, intervalMs = 50) {
  const start = cpuSeconds(pid);
  let last = start;
  const timer = setInterval(() => {
    const v = cpuSeconds(pid);
    if (v !== null) last = v;
  }, intervalMs);
  return {
    /** seconds used since the meter started (null when the process was never seen) */
    stop() {
      clearInterval(timer);
      const v = cpuSeconds(pid);
      if (v !== null) last = v;
      return start === null ? null : last - start;
    },
  };
}
