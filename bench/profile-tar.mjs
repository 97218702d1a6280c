#!/usr/bin/env node
// Where an untar's time goes, per file: the benchmark's 2,000-file tarball extracted into a seafs mount (or the
// in-memory FUSE filesystem, `memfs`) under `strace -f -c -w`, which sums the wall-clock time tar spends in each
// system call (each one a FUSE round trip or a few), and the mount's own count of FUSE operations. Then seafs
// unmounts, which waits until every file is on the server. Usage:
//   node bench/profile-tar.mjs OUTDIR [seafs|memfs] [--cpu-prof] [--no-strace] [--files N] [--cli PATH] [--latency MS]
// --latency MS: the server answers MS ms late (as the benchmark's 20 and 80 ms sections).
// PROFILE_NODE='--flag ...' (environment): node flags for the mount process, e.g. '--import ./hook.mjs' to count
// what it allocates.
// --cpu-prof: node --cpu-prof on the mount process; its self time per function during the extract is printed.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountStatus, seededServer, selfTimes, startMount } from './lib/profile.mjs';
import { smallFilesLayout, writeLayout } from './lib/dataset.mjs';
import {
  run,
  spawnBackground,
  waitFor,
  isMounted,
  lazyUnmount,
  cleanupAll,
  cpuSeconds,
  trackMount,
} from './lib/proc.mjs';

const args = process.argv.slice(2);
const out = resolve(args[0] ?? 'bench-profile-tar');
const who = args[1] === 'memfs' ? 'memfs' : 'seafs';
const cpuProf = args.includes('--cpu-prof');
/** --no-strace: tar alone (strace's own cost slows every call) */
const noStrace = args.includes('--no-strace');
const files = Number(args[args.indexOf('--files') + 1] || 2000) || 2000;
const latencyMs = args.includes('--latency') ? Number(args[args.indexOf('--latency') + 1]) || 0 : 0;
// --cli PATH: another build's dist/cli/main.js (to measure a before and an after the same way)
const cli = args.includes('--cli')
  ? resolve(args[args.indexOf('--cli') + 1])
  : fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const log = (s) => process.stderr.write(`[profile-tar] ${s}\n`);
const now = () => Number(process.hrtime.bigint() / 1000n);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
process.on('exit', cleanupAll);

/** strace -c -w summary: syscall -> { seconds, calls } */
function parseStrace(text) {
  const m = new Map();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || !/^[\d.]+$/.test(f[0]) || f[f.length - 1] === 'total') continue;
    const name = f[f.length - 1];
    const calls = Number(f[3]);
    m.set(name, { seconds: Number(f[1]), calls });
  }
  return m;
}

try {
  const small = smallFilesLayout(files);
  const smallDir = join(out, 'small');
  writeLayout(smallDir, small);
  const tarball = join(out, 'small.tar');
  await run('tar', ['-cf', tarball, '-C', smallDir, '.']);
  await run('cat', [tarball], { keepStdout: false });

  let server = null;
  let mnt = join(out, 'mnt');
  let env = { SEAFS_RUNTIME_DIR: join(out, 'run') };
  let child;
  const prof = [
    ...(cpuProf ? ['--cpu-prof', '--cpu-prof-dir', out] : []),
    ...(process.env.PROFILE_NODE ?? '').split(' ').filter(Boolean),
  ];
  if (who === 'seafs') {
    ({ server, mnt, env } = await seededServer({ out, cli, mib: 1, latencyMs, log }));
    child = await startMount({ cli, server, mnt, out, env, node: prof });
  } else {
    mkdirSync(mnt, { recursive: true });
    trackMount(mnt);
    child = spawnBackground(process.execPath, [...prof, fileURLToPath(new URL('./memfs.mjs', import.meta.url)), mnt], {
      logFile: join(out, 'mount.log'),
    });
  }
  await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'the mount' });
  const dest = who === 'seafs' ? join(mnt, 'x', 't') : join(mnt, 't');
  mkdirSync(dest, { recursive: true });
  const c0 = cpuSeconds(child.pid);
  const s0 = server ? cpuSeconds(server.pid) : 0;
  const w0 = now();
  const trace = join(out, 'strace.txt');
  const tarArgs = ['-xf', tarball, '--no-same-owner', '-C', dest];
  const r = noStrace
    ? await run('tar', tarArgs)
    : await run('strace', ['-f', '-c', '-w', '-o', trace, 'tar', ...tarArgs]);
  const w1 = now();
  const mountCpu = cpuSeconds(child.pid) - c0;
  let settle = 0;
  let ops = null;
  if (who === 'seafs') {
    const st = await mountStatus(cli, mnt, env);
    ops = st.ops;
    log(`uploads: ${JSON.stringify(st.uploads ?? st.writeBack ?? {})}`);
    const t = now();
    await run(process.execPath, [cli, 'unmount', mnt], { env, timeoutMs: 600_000 });
    settle = (now() - t) / 1e6;
    await waitFor(() => child.exitCode !== null, { timeoutMs: 30_000, what: 'the mount to exit' });
    const n = await server.api.countFiles(server.repo, '/x/t');
    if (n !== files) throw new Error(`the server lists ${n} files, want ${files}`);
  } else {
    child.kill('SIGTERM');
    await waitFor(() => child.exitCode !== null, { timeoutMs: 30_000, what: 'memfs to exit' });
  }
  lazyUnmount(mnt);
  const serverCpu = server ? cpuSeconds(server.pid) - s0 : 0;
  if (server) await server.stop();
  const extract = (w1 - w0) / 1e6;
  log(
    `${who}: extract ${extract.toFixed(2)} s (under strace; tar's own ${(r.ms / 1000).toFixed(2)} s), settle ${settle.toFixed(2)} s, ` +
      `mount CPU ${mountCpu.toFixed(2)} s during the extract, server CPU ${serverCpu.toFixed(2)} s`,
  );
  if (ops)
    log(
      `FUSE operations per file: ${Object.entries(ops)
        .map(([k, v]) => `${k} ${(v / files).toFixed(2)}`)
        .join(', ')}`,
    );
  const sc = [...(noStrace ? new Map() : parseStrace(readFileSync(trace, 'utf8')))].sort(
    (a, b) => b[1].seconds - a[1].seconds,
  );
  process.stdout.write(`tar's system calls (wall time, strace -c -w), per file of ${files}:\n`);
  process.stdout.write(
    `  ${'call'.padEnd(14)} ${'calls/file'.padStart(10)} ${'ms/file'.padStart(8)} ${'us/call'.padStart(8)}\n`,
  );
  let total = 0;
  for (const [name, v] of sc) {
    total += v.seconds;
    if (v.seconds * 1000 < 0.005 * files) continue;
    process.stdout.write(
      `  ${name.padEnd(14)} ${(v.calls / files).toFixed(2).padStart(10)} ${((v.seconds * 1000) / files).toFixed(3).padStart(8)} ${((v.seconds * 1e6) / v.calls).toFixed(0).padStart(8)}\n`,
    );
  }
  process.stdout.write(`  ${'all'.padEnd(14)} ${''.padStart(10)} ${((total * 1000) / files).toFixed(3).padStart(8)}\n`);
  if (cpuProf) {
    const { self, total: sum } = selfTimes(out, w0, w1);
    const byFile = new Map();
    for (const [k, t] of self) {
      const f = k.split(' ')[1]?.replace(/:\d+$/, '') || '?';
      byFile.set(f, (byFile.get(f) ?? 0) + t);
    }
    process.stdout.write(`mount process, self time by file:\n`);
    for (const [k, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25))
      process.stdout.write(
        `${((100 * t) / sum).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}\n`,
      );
    process.stdout.write(`mount process, self time during the extract (${(sum / 1000).toFixed(0)} ms sampled):\n`);
    for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30))
      process.stdout.write(
        `${((100 * t) / sum).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}\n`,
      );
  }
} catch (err) {
  log(`failed: ${err.stack}`);
  process.exitCode = 1;
}
cleanupAll();
