#!/usr/bin/env node
// Cold reads with the default options, seafs beside rclone: one `seafs serve`, files of each size uploaded through
// the API, each read whole (`dd bs=1M`) on a fresh mount with a fresh cache dir after the page cache was dropped,
// the two contenders in turns (the order flips every run), medians of --runs. Beside it, for seafs, what the
// cache gives: the same file read again after a remount (bytes downloaded, counted by a proxy), and after another
// client changed one 8 MiB block of it. Not a test: tables on stdout, progress on stderr. Build first.
//   node bench/cold-read.mjs [--sizes 64,256,1024] [--runs 3] [--rclone-mode writes] [--work DIR]
//   BENCH_SEAFS_ARGS='--no-cache-streams' to measure a variant instead of the default; --variant='ARGS' to add
//   seafs with ARGS as a third contender in the same turns (ENV=VALUE words set its environment).
import { createHash, randomFillSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cleanupAll, cpuMeter, dropCaches, primeServerDisk, run } from './lib/proc.mjs';
import { startServer } from './lib/server.mjs';
import { seafs, rclone } from './lib/mounts.mjs';
import { countingProxy } from './lib/remount.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const { values: opt } = parseArgs({
  options: {
    sizes: { type: 'string', default: '64,256,1024' },
    runs: { type: 'string', default: '3' },
    'rclone-mode': { type: 'string', default: 'writes' },
    'no-rclone': { type: 'boolean', default: false },
    'no-cache-figures': { type: 'boolean', default: false },
    variant: { type: 'string' },
    work: { type: 'string' },
  },
});
const MiB = 1024 * 1024;
const sizes = opt.sizes.split(',').map(Number);
const runs = Number(opt.runs);
const log = (m) => process.stderr.write(`[cold-read] ${m}\n`);
const work = opt.work ?? mkdtempSync(join(tmpdir(), 'seafs-cold-read-'));
mkdirSync(work, { recursive: true });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** the file's bytes: a fixed pseudo-random content per size (written once to the work dir) */
function source(mib) {
  const path = join(work, `src-${mib}.bin`);
  const fd = openSync(path, 'w');
  const buf = Buffer.allocUnsafe(4 * MiB);
  for (let done = 0; done < mib * MiB; done += buf.length) {
    randomFillSync(buf);
    writeSync(fd, buf);
  }
  closeSync(fd);
  return path;
}

async function upload(server, path, name) {
  const link = await server.api.uploadLink(server.repo, '/');
  await run(
    'curl',
    ['-sS', '--fail-with-body', '-F', `file=@${path};filename=${name}`, '-F', 'parent_dir=/', '-F', 'replace=1', link],
    {
      timeoutMs: 900_000,
    },
  );
}

async function ddRead(file, bytes) {
  const r = await run('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M'], { timeoutMs: 900_000 });
  const got = Number(/^(\d+) bytes/m.exec(r.stderr)?.[1]);
  if (got !== bytes) throw new Error(`read ${got} bytes of ${file}, want ${bytes}`);
  return r.ms;
}

async function sha1Of(file) {
  return (await run('sha1sum', [file], { timeoutMs: 900_000 })).stdout.split(' ')[0];
}

const contenders = opt['no-rclone'] ? [seafs] : [seafs, rclone];
if (opt.variant) {
  const words = opt.variant.split(' ').filter(Boolean);
  const env = Object.fromEntries(words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=')));
  const args = words.filter((w) => !/^[A-Z_]+=/.test(w));
  contenders.push({
    name: `seafs ${opt.variant}`,
    mount: async (ctx, mode) => {
      const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
      Object.assign(process.env, env);
      try {
        return await seafs.mount(ctx, mode, { seafsArgs: args });
      } finally {
        for (const [k, v] of Object.entries(saved))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      }
    },
  });
}
let server;
process.on('SIGINT', () => {
  cleanupAll();
  process.exit(130);
});
try {
  server = await startServer({ root: work, cli: CLI, latencyMs: 0, log });
  const ctx = { work, cli: CLI, server, timeoutMs: 900_000 };
  const files = new Map();
  for (const mib of sizes) {
    const src = source(mib);
    await upload(server, src, `f${mib}.bin`);
    files.set(mib, { src, sha1: await sha1Of(src) });
    log(`uploaded ${mib} MiB`);
  }
  const cold = {}; // `${name}:${mib}` -> [{ms, cpu}]
  for (const mib of sizes) {
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? contenders : [...contenders].reverse();
      for (const c of order) {
        const h = await c.mount(ctx, c === rclone ? opt['rclone-mode'] : 'read');
        try {
          primeServerDisk(server.dataDir);
          dropCaches();
          const cpu = h.pid ? cpuMeter(h.pid) : null;
          const ms = await ddRead(join(h.path, `f${mib}.bin`), mib * MiB);
          const used = cpu?.stop() ?? NaN;
          (cold[`${c.name}:${mib}`] ??= []).push({ ms, cpu: used });
          log(`${c.name} ${mib} MiB run ${r + 1}: ${ms.toFixed(0)} ms, mount CPU ${used.toFixed(2)} s`);
        } finally {
          await h.close();
        }
      }
    }
  }
  const out = [];
  out.push(`# Cold read, default options (${new Date().toISOString().slice(0, 10)})`);
  out.push('');
  out.push(
    `${cpus().length} cores (${cpus()[0].model.trim()}), load ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} at the end; ` +
      `seafs serve on the same machine, no added latency; rclone --vfs-cache-mode ${opt['rclone-mode']}` +
      (process.env.BENCH_SEAFS_ARGS ? `; seafs with ${process.env.BENCH_SEAFS_ARGS}` : '') +
      `. Medians of ${runs} (each run: fresh mount, fresh cache dir, page cache dropped; order alternating).`,
  );
  out.push('');
  out.push(
    '| size | seafs MB/s | rclone MB/s | seafs / rclone | seafs s (runs) | rclone s (runs) | seafs mount CPU-s/GiB | rclone mount CPU-s/GiB |',
  );
  out.push('|---|---|---|---|---|---|---|---|');
  for (const mib of sizes)
    for (const v of contenders.filter((c) => c !== seafs && c !== rclone)) {
      const xs = cold[`${v.name}:${mib}`] ?? [];
      const m = median(xs.map((x) => x.ms));
      out.push(
        `| ${mib} MiB, ${v.name} | ${((mib * MiB) / 1e6 / (m / 1000)).toFixed(0)} | | | ${xs.map((x) => (x.ms / 1000).toFixed(2)).join(', ')} | | ${(median(xs.map((x) => x.cpu)) / (mib / 1024)).toFixed(2)} | |`,
      );
    }
  for (const mib of sizes) {
    const s = cold[`seafs:${mib}`] ?? [];
    const rc = cold[`rclone:${mib}`] ?? [];
    const rate = (xs) => (xs.length ? (mib * MiB) / 1e6 / (median(xs.map((x) => x.ms)) / 1000) : NaN);
    const runsOf = (xs) => xs.map((x) => (x.ms / 1000).toFixed(2)).join(', ');
    const cpuPerGiB = (xs) => (xs.length ? median(xs.map((x) => x.cpu)) / (mib / 1024) : NaN);
    out.push(
      `| ${mib} MiB | ${rate(s).toFixed(0)} | ${rate(rc).toFixed(0)} | ${(rate(s) / rate(rc)).toFixed(2)}x | ${runsOf(s)} | ${runsOf(rc)} | ${cpuPerGiB(s).toFixed(2)} | ${cpuPerGiB(rc).toFixed(2)} |`,
    );
  }
  process.stdout.write(out.join('\n') + '\n');

  if (!opt['no-cache-figures']) {
    // what the cache gives, seafs only: through a proxy that counts the file server's bytes
    const rows = [
      '',
      '| size | cold read downloaded | re-read after a remount: downloaded, s | one 8 MiB block changed elsewhere: downloaded, s |',
      '|---|---|---|---|',
    ];
    for (const mib of sizes) {
      const proxy = await countingProxy(server.url);
      const cacheDir = mkdtempSync(join(work, 'cache-kept-'));
      const via = { ...ctx, server: { ...server, url: proxy.url } };
      const name = `g${mib}.bin`;
      try {
        const { src } = files.get(mib);
        await upload(server, src, name);
        const readOnce = async () => {
          const h = await seafs.mount(via, 'read', { cacheDir });
          try {
            dropCaches();
            const d0 = proxy.counts.downloadBytes;
            const t0 = Date.now();
            const sum = await sha1Of(join(h.path, name));
            return { mib: (proxy.counts.downloadBytes - d0) / MiB, s: (Date.now() - t0) / 1000, sum };
          } finally {
            await h.close();
          }
        };
        const first = await readOnce();
        const again = await readOnce();
        // another client rewrites 1 MiB in the middle: one block of the server's 8 MiB cut changes
        const changed = join(work, `changed-${mib}.bin`);
        const bytes = readFileSync(src);
        randomFillSync(bytes, (mib * MiB) / 2, MiB);
        writeFileSync(changed, bytes);
        const want = createHash('sha1').update(bytes).digest('hex');
        await upload(server, changed, name);
        const after = await readOnce();
        if (first.sum !== files.get(mib).sha1 || again.sum !== first.sum || after.sum !== want)
          throw new Error(`${mib} MiB: the mount read other bytes than were uploaded`);
        rows.push(
          `| ${mib} MiB | ${first.mib.toFixed(1)} MiB | ${again.mib.toFixed(1)} MiB, ${again.s.toFixed(2)} s | ${after.mib.toFixed(1)} MiB, ${after.s.toFixed(2)} s |`,
        );
        log(`cache figures ${mib} MiB done`);
      } finally {
        await proxy.close();
        rmSync(cacheDir, { recursive: true, force: true });
      }
    }
    process.stdout.write(rows.join('\n') + '\n');
  }
} finally {
  await server?.stop();
  cleanupAll();
  if (!opt.work) rmSync(work, { recursive: true, force: true });
}
