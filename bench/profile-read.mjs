#!/usr/bin/env node
// Profiles a seafs mount's cold sequential read: node --cpu-prof on the mount process, one file read once with
// dd after the page cache is dropped. Usage: node bench/profile-read.mjs OUTDIR [MiB] [LATENCY_MS] [--remount]
// (root, for drop_caches); --remount profiles a read from the disk cache that an earlier mount filled. Prints the mount's reader counters (seafs status) too.
// The .cpuprofile lands in OUTDIR (open it in Chrome DevTools, or summarise it with --summary).
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountStatus, seededServer, selfTimes, startMount, stopMount } from './lib/profile.mjs';
import { run, cleanupAll, dropCaches, cpuSeconds } from './lib/proc.mjs';

/** user and system CPU seconds of each thread of `pid`, by thread id */
function threadCpu(pid) {
  const m = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      m.set(tid, { name, user: Number(f[11]) / 100, sys: Number(f[12]) / 100 });
    } catch {
      // thread gone
    }
  }
  return m;
}

const args = process.argv.slice(2).filter((a) => a !== '--remount');
/** --remount: the file is read once through a mount (with --cache-streams), which is unmounted; the profiled
 * mount then reads it again on the same cache dir (from the disk cache) */
const remount = process.argv.includes('--remount');
if (args.some((a) => a.startsWith('-'))) {
  // an unknown flag would otherwise become the output folder (and be written into the checkout)
  process.stderr.write('usage: node bench/profile-read.mjs [--remount] [OUT_DIR [MiB [LATENCY_MS]]]\n');
  process.exit(2);
}
const out = resolve(args[0] ?? 'bench-profile');
const mib = Number(args[1] ?? 512);
const latencyMs = Number(args[2] ?? 0);
const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const log = (s) => process.stderr.write(`[profile] ${s}\n`);
mkdirSync(out, { recursive: true });
process.on('exit', cleanupAll);
try {
  const { server, mnt, env } = await seededServer({ out, cli, mib, latencyMs, log });
  // BENCH_SEAFS_ARGS: extra mount options (a variant to compare)
  const extra = (process.env.BENCH_SEAFS_ARGS ?? '').split(' ').filter(Boolean);
  const mount = (node) =>
    startMount({ cli, server, mnt, out, env, node, options: [...(remount ? ['--cache-streams'] : []), ...extra] });
  if (remount) {
    const first = await mount([]);
    dropCaches();
    const r0 = await run('dd', [`if=${join(mnt, 'big.bin')}`, 'of=/dev/null', 'bs=1M']);
    log(`first read (kept on disk): ${(r0.ms / 1000).toFixed(2)} s`);
    await stopMount({ cli, mnt, env, child: first });
  }
  const child = await mount(['--cpu-prof', '--cpu-prof-dir', out]);
  dropCaches();
  const t0 = threadCpu(child.pid);
  const c0 = cpuSeconds(child.pid);
  const s0 = cpuSeconds(server.pid);
  const w0 = Number(process.hrtime.bigint() / 1000n); // the profile's clock: monotonic microseconds
  const r = await run('dd', [`if=${join(mnt, 'big.bin')}`, 'of=/dev/null', 'bs=1M']);
  const w1 = Number(process.hrtime.bigint() / 1000n);
  const used = cpuSeconds(child.pid) - c0;
  const t1 = threadCpu(child.pid);
  for (const [tid, v] of t1) {
    const d = { user: v.user - (t0.get(tid)?.user ?? 0), sys: v.sys - (t0.get(tid)?.sys ?? 0) };
    if (d.user + d.sys >= 0.01)
      log(`  thread ${tid} ${v.name}: user ${d.user.toFixed(2)} s, system ${d.sys.toFixed(2)} s`);
  }
  const serverUsed = cpuSeconds(server.pid) - s0;
  log(
    `read ${mib} MiB in ${(r.ms / 1000).toFixed(2)} s: mount ${used.toFixed(2)} CPU-s (${(used / (mib / 1024)).toFixed(2)} per GiB), server ${serverUsed.toFixed(2)} CPU-s`,
  );
  log(`reader: ${JSON.stringify((await mountStatus(cli, mnt, env)).reader)}`);
  await stopMount({ cli, mnt, env, child });
  await server.stop();
  const { self, total, files } = selfTimes(out, w0, w1);
  log(`profile: ${files.join(' ')}`);
  // self time per function during the read only, top 25
  for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25))
    process.stdout.write(
      `${((100 * t) / total).toFixed(1).padStart(5)}%  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}\n`,
    );
} catch (err) {
  log(`failed: ${err.stack}`);
  process.exitCode = 1;
}
cleanupAll();
