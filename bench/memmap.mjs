#!/usr/bin/env node
// Where a seafs mount's resident memory goes: mounts the local server (foreground, with MALLOC_ARENA_MAX=2 as a
// --daemon mount gets it), optionally reads then writes a file through it, and prints the mount process's
// resident set by kind of mapping (/proc/PID/smaps) beside V8's own count (`seafs status --json`).
// Usage: node bench/memmap.mjs OUTDIR [MiB [read,write,tar]]   (MiB > 0: read a MiB file, then write one, sampling
// after each; the third argument picks the jobs; tar: the benchmark's 2,000-file untar until on the server)
// The source file stays in OUTDIR for the next run; the server's data and the cache are removed.
// MEMMAP_NODE='--flag ...' puts node flags on the mount's command line (variants measured side by side).
import { mkdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountStatus, seededServer, startMount, stopMount } from './lib/profile.mjs';
import { smallFilesLayout, writeLayout } from './lib/dataset.mjs';
import { run, waitFor, cleanupAll, sleep, cpuSeconds } from './lib/proc.mjs';

const out = resolve(process.argv[2] ?? 'bench-memmap');
const mib = Number(process.argv[3] ?? 0);
const jobs = (process.argv[4] ?? 'read,write').split(',');
const nodeFlags = (process.env.MEMMAP_NODE ?? '').split(' ').filter(Boolean);
const cli = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const log = (s) => process.stderr.write(`[memmap] ${s}\n`);
const MiB = (kb) => (kb / 1024).toFixed(1);

/** Rss (kB) of `pid` summed by kind of mapping; thread stacks are the anonymous mappings right above a guard page. */
export function residentByKind(pid) {
  const node = realpathSync(process.execPath);
  const kinds = new Map();
  let prev = null;
  let cur = null;
  const add = (kind, kb) => kinds.set(kind, (kinds.get(kind) ?? 0) + kb);
  const flush = () => {
    if (!cur) return;
    let kind;
    if (cur.path === node)
      kind = cur.perms.includes('x')
        ? 'node binary: text'
        : cur.perms.includes('w')
          ? 'node binary: data'
          : 'node binary: read-only data';
    else if (cur.path === '[heap]') kind = 'brk heap (malloc main arena)';
    else if (cur.path === '[stack]') kind = 'main thread stack';
    else if (cur.path.startsWith('/')) kind = cur.path.endsWith('.node') ? 'native addons (.node)' : 'shared libraries';
    else if (cur.path) kind = `other ${cur.path}`;
    else if (prev && prev.perms.startsWith('---p') && prev.end === cur.start && cur.size <= 8 * 1024 + 4)
      kind = 'thread stacks (anon below 8 MiB)';
    else kind = 'anonymous (V8 heap, malloc arenas, mmapped buffers)';
    add(kind, cur.rss);
    prev = cur;
  };
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (m) {
      flush();
      const start = parseInt(m[1], 16);
      const end = parseInt(m[2], 16);
      cur = { start, end, perms: m[3], path: m[4].trim(), size: (end - start) / 1024, rss: 0 };
    } else if (cur && line.startsWith('Rss:')) cur.rss = Number(/(\d+)/.exec(line)[1]);
  }
  flush();
  return kinds;
}

/** Runs `job` while sampling `pid`'s mappings every 200 ms; returns its result and the sample with the largest total. */
async function watched(pid, job) {
  let top = null;
  const take = () => {
    try {
      const kinds = residentByKind(pid);
      const total = [...kinds.values()].reduce((a, b) => a + b, 0);
      if (!top || total > top.total) top = { kinds, total };
    } catch {
      // the process is gone
    }
  };
  const timer = setInterval(take, 200);
  try {
    const result = await job();
    take(); // a job shorter than one interval has its one sample here
    return { result, top };
  } finally {
    clearInterval(timer);
  }
}

function sample(pid, label, st, kinds = residentByKind(pid)) {
  const total = [...kinds.values()].reduce((a, b) => a + b, 0);
  const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  process.stdout.write(
    `\n== ${label}: RSS ${MiB(total)} MiB (peak ${MiB(hwm)} MiB, CPU ${cpuSeconds(pid).toFixed(2)} s)\n`,
  );
  for (const [k, kb] of [...kinds].sort((a, b) => b[1] - a[1]))
    process.stdout.write(`  ${MiB(kb).padStart(6)} MiB  ${k}\n`);
  if (st?.memory) {
    const m = st.memory;
    const f = (b) => (b / 2 ** 20).toFixed(1);
    process.stdout.write(
      `  V8: heapTotal ${f(m.heapTotal)} MiB (used ${f(m.heapUsed)}, new space ${f(st.newSpaceBytes ?? 0)}), ` +
        `external ${f(m.external)} MiB (ArrayBuffers ${f(m.arrayBuffers)})\n`,
    );
  }
}

mkdirSync(out, { recursive: true });
process.on('exit', cleanupAll);
try {
  const { server, src, mnt, env: base } = await seededServer({ out, cli, mib: Math.max(mib, 1), log });
  const env = { ...base, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' };
  const child = await startMount({ cli, server, mnt, out, env, node: nodeFlags });
  const status = () => mountStatus(cli, mnt, env);
  await sleep(3000);
  sample(child.pid, 'idle, 3 s after mounting', await status());
  if (mib > 0 && jobs.includes('read')) {
    const { result: r, top } = await watched(child.pid, () =>
      run('dd', [`if=${join(mnt, 'big.bin')}`, 'of=/dev/null', 'bs=1M']),
    );
    sample(child.pid, `largest sample while reading ${mib} MiB`, null, top.kinds);
    sample(child.pid, `after reading ${mib} MiB (${(r.ms / 1000).toFixed(1)} s)`, await status());
  }
  if (mib > 0 && jobs.includes('write')) {
    // the write's clock stops when the file is on the server: uploads still under way hold memory too
    const { result: w, top } = await watched(child.pid, async () => {
      const r = await run('dd', [`if=${src}`, `of=${join(mnt, 'w.bin')}`, 'bs=1M', 'conv=fsync']);
      await waitFor(async () => (await status()).queue.length === 0, { timeoutMs: 600_000, what: 'the upload' });
      return r;
    });
    sample(child.pid, `largest sample while writing ${mib} MiB and uploading it`, null, top.kinds);
    sample(child.pid, `after writing ${mib} MiB (${(w.ms / 1000).toFixed(1)} s)`, await status());
  }
  if (jobs.includes('tar')) {
    const small = join(out, 'small');
    const tarball = join(out, 'small.tar');
    writeLayout(small, smallFilesLayout(2000));
    await run('tar', ['-cf', tarball, '-C', small, '.']);
    const dest = join(mnt, 'untar');
    mkdirSync(dest);
    const { result: t, top } = await watched(child.pid, async () => {
      const r = await run('tar', ['-xf', tarball, '--no-same-owner', '-C', dest]);
      await waitFor(async () => (await status()).queue.length === 0, { timeoutMs: 600_000, what: 'the uploads' });
      return r;
    });
    sample(child.pid, 'largest sample while untarring 2,000 files and uploading them', null, top.kinds);
    sample(child.pid, `after the untar (${(t.ms / 1000).toFixed(1)} s)`, await status());
  }
  await stopMount({ cli, mnt, env, child });
  await server.stop();
  // the library and the cache hold a copy or two of the file: only the logs are worth keeping
  for (const d of [server.dataDir, join(out, 'cache')]) rmSync(d, { recursive: true, force: true });
} catch (err) {
  log(`failed: ${err.stack}`);
  process.exitCode = 1;
}
cleanupAll();
