#!/usr/bin/env node
// The benchmark driver (run it through scripts/bench, which builds first and cleans up after a crash).
//   node bench/run.mjs [--quick] [--runs N] [--latency 0,20,80] [--contenders seafs,rclone,http,memfs,httpfs]
//                      [--jobs seqread,write,tar,ls,find,randread,remount,bigtree] [--bigtree-runs N]
//                      [--out bench-results] [--work DIR] [--keep-work]
// Progress goes to stderr; the tables go to stdout; JSON and an SVG chart go to --out.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
  cpSync,
  symlinkSync,
  readdirSync,
  readFileSync,
} from 'node:fs';
import { tmpdir, cpus, totalmem, release, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cleanupAll, run, mountPoints } from './lib/proc.mjs';
import { startServer, seed } from './lib/server.mjs';
import { seafs, rclone, memfs, httpfs } from './lib/mounts.mjs';
import { metrics as metricList, JOBS, mountJob, httpJob, httpContender } from './lib/jobs.mjs';
import { table, summarize, targets, targetLines, latencyTable, crossTargets } from './lib/report.mjs';
import { bigTreeJob, bigTreeShape, seedBigTree } from './lib/bigtree.mjs';
import { chart } from './lib/svg.mjs';
import {
  randomFile,
  smallFilesLayout,
  writeLayout,
  contentFor,
  treeLayout,
  expectedFindCount,
  findThresholdKiB,
} from './lib/dataset.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values: opt } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    runs: { type: 'string' },
    latency: { type: 'string', default: '0,20,80' },
    contenders: { type: 'string', default: 'seafs,rclone,http,memfs,httpfs' },
    jobs: { type: 'string', default: JOBS.join(',') },
    'bigtree-runs': { type: 'string' },
    out: { type: 'string', default: join(ROOT, 'bench-results') },
    work: { type: 'string' },
    'keep-work': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  process.stdout.write(`Usage: bash scripts/bench [options]
  --quick              small sizes (64 MiB file, 40 small files, 400 in the tree, 2,000 in the large tree), 1 run
  --runs N             runs per workload and contender (default 3; --quick 1); medians are reported
  --latency 0,20,80    server latencies in ms (seafs serve --latency-ms), one server and one table each;
                       a last table puts seafs and rclone at every latency side by side
  --contenders LIST    seafs,rclone,http,memfs,httpfs (default all; httpfs runs seqread only)
  --jobs LIST          ${JOBS.join(',')} (default all)
  --bigtree-runs N     runs of the large-tree job (default 1: rclone walks 2,000 folders at ~10 listings/s)
  --out DIR            where the JSON and SVG go (default bench-results/)
  --work DIR           working folder (default a fresh one under the temp dir); --keep-work keeps it
  BENCH_SEAFS_ARGS     (environment) extra seafs mount options, e.g. '--no-cache-streams', to compare variants

Jobs and what they print (medians):
  seqread   1 GiB read cold and warm (MB/s), peak RSS of the mount, mount CPU-s per GiB of the cold read
            (utime+stime of the mount process from /proc/PID/stat; the http column is the network's limit)
  write     1 GiB written until on the server (MB/s), peak RSS, mount CPU-s per GiB (until on the server)
  tar       untar 2,000 small files until on the server (s)
  ls, find  ls -lR / find -size +10k of 10,000 files in 500 folders, cold and warm (s)
  randread  2,000 random 4 KiB reads (reads/s)
  remount   the 1 GiB file read, the mount unmounted, caches dropped, mounted again on the same cache dir and
            read again (MB/s), and the bytes that second read downloaded (a proxy counts them; memfs: cold read)
  bigtree   100,000 files in 2,000 folders under /big: ls -lR, find -type f and du -s, each on a fresh mount
            with the page cache dropped (s); peak RSS of the mount during ls -lR; the metadata cache's entries
            and estimated size after it (seafs status). Seeded and run in the first latency section only.
`);
  process.exit(0);
}

const config = opt.quick
  ? // rclone's seafile backend paces itself to one API call per 100 ms, which sets these sizes for < 2 min.
    {
      bigBytes: 64 << 20,
      smallFiles: 40,
      treeFolders: 20,
      treeFiles: 400,
      randomReads: 100,
      bigTreeFolders: 40,
      bigTreeFiles: 2000,
      bigTreeRuns: 1,
      runs: 1,
      timeoutMs: 120_000,
    }
  : {
      bigBytes: 1 << 30,
      smallFiles: 2000,
      treeFolders: 500,
      treeFiles: 10000,
      randomReads: 2000,
      bigTreeFolders: 2000,
      bigTreeFiles: 100_000,
      bigTreeRuns: 1,
      runs: 3,
      timeoutMs: 1_200_000,
    };
if (opt.runs) config.runs = Math.max(1, Number(opt.runs));
if (opt['bigtree-runs']) config.bigTreeRuns = Math.max(1, Number(opt['bigtree-runs']));
/** runs of a job: the large tree has its own count */
const runsOf = (job) => (job === 'bigtree' ? config.bigTreeRuns : config.runs);
/** jobs that run in the first latency section only */
const FIRST_SECTION_ONLY = ['bigtree'];
const latencies = opt.latency.split(',').map(Number);
const ALL = { seafs, rclone, http: httpContender, memfs, httpfs };
const contenders = opt.contenders.split(',').map((n) => {
  if (!ALL[n]) throw new Error(`unknown contender ${n}`);
  return ALL[n];
});
const jobs = opt.jobs.split(',').filter((j) => {
  if (!JOBS.includes(j)) throw new Error(`unknown job ${j} (${JOBS.join(', ')})`);
  return true;
});
const metrics = metricList(config).filter((m) => jobs.includes(m.job));
const log = (s) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

// Whatever happens, no mount or process of ours outlives the run.
process.on('exit', cleanupAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    log(`${sig}: cleaning up`);
    cleanupAll();
    process.exit(130);
  });
}

const SETTINGS = {
  seafs:
    'seafs mount URL MNT --library L --user U --daemon --cache-dir <fresh>; clock stops when `seafs unmount` returns',
  rclone:
    'rclone mount (seafile backend via env) --vfs-cache-mode full (reads, listings) | writes (write, untar) --vfs-write-back 0s --cache-dir <fresh>; clock stops when the server lists the data (polled every 200 ms)',
  http: 'curl for the big download/upload; undici (keep-alive) for listings, 8 folders at a time; untar = 25 files per multipart request, 8 in flight; random reads = one Range GET at a time on a reuse=1 link',
  memfs: 'bench/memfs.mjs: fuse-native, big_writes, kernel_cache, attr/entry timeout 5 s, data in RAM',
  httpfs:
    'memfs whose big file is read from the server: one GET on a plain socket into a ring buffer (the least work over HTTP); seqread only',
  cold: "fresh mount and fresh cache dir; the server's large objects read once (same host disk cache for every contender), then sync and echo 3 > /proc/sys/vm/drop_caches",
};

function applies(metric, contender) {
  if (metric.notFor?.includes(contender)) return false;
  if (contender === 'http')
    return (
      !['ls_warm', 'find_warm', 'rss_read', 'rss_write', 'rss_tar'].includes(metric.id) && metric.job !== 'remount'
    );
  if (contender === 'memfs') return !metric.id.startsWith('rss_') && metric.id !== 'remount_mib';
  if (contender === 'httpfs') return ['read_cold', 'read_warm', 'cpu_read'].includes(metric.id);
  return true;
}

async function fixtures(work) {
  const dir = join(work, 'fixtures');
  mkdirSync(dir, { recursive: true });
  const src = join(dir, `src-${config.bigBytes}.bin`);
  await randomFile(src, config.bigBytes);
  const small = smallFilesLayout(config.smallFiles);
  const smallDir = join(dir, 'small');
  rmSync(smallDir, { recursive: true, force: true });
  writeLayout(smallDir, small);
  const tarball = join(dir, 'small.tar');
  await run('tar', ['-cf', tarball, '-C', smallDir, '.']);
  const tree = treeLayout(config.treeFolders, config.treeFiles);
  return {
    src,
    tarball,
    small,
    smallData: (i) => contentFor(i, small[i].size),
    findKiB: findThresholdKiB,
    findCount: expectedFindCount(tree),
  };
}

/**
 * A private copy of the built CLI, so a rebuild in the checkout during a long run cannot mix two versions of
 * seafs into one table. node_modules is linked, not copied.
 */
function snapshotCli(work) {
  const dir = join(work, 'seafs');
  mkdirSync(dir, { recursive: true });
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return join(dir, 'dist/cli/main.js');
}

/**
 * Whether a DAMON kdamond is running a `pageout` scheme: some VMs (Firecracker guests among them) page out memory
 * that looks idle, page cache included, so a "warm" re-read may find part of the file gone from the page cache
 * even with gigabytes free. Recorded so that warm figures can be read with that in mind.
 */
function damonPageout() {
  const base = '/sys/kernel/mm/damon/admin/kdamonds';
  try {
    for (const k of readdirSync(base)) {
      if (!/^\d+$/.test(k) || readFileSync(join(base, k, 'state'), 'utf8').trim() !== 'on') continue;
      const schemes = join(base, k, 'contexts/0/schemes');
      for (const sc of readdirSync(schemes)) {
        if (/^\d+$/.test(sc) && readFileSync(join(schemes, sc, 'action'), 'utf8').trim() === 'pageout') return true;
      }
    }
  } catch {
    // no DAMON sysfs interface
  }
  return false;
}

async function machine() {
  const rc = await run('rclone', ['version'], { check: false }).catch(() => ({ stdout: 'missing' }));
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memMiB: Math.round(totalmem() / 2 ** 20),
    kernel: release(),
    node: process.version,
    rclone: rc.stdout.split('\n')[0],
    damonPageout: damonPageout(),
  };
}

async function main() {
  if (!existsSync(join(ROOT, 'dist/cli/main.js')))
    throw new Error(`${ROOT}dist/cli/main.js is missing: run npm run build (scripts/bench does)`);
  const work = opt.work ? resolve(opt.work) : mkdtempSync(join(tmpdir(), 'seafs-bench-'));
  mkdirSync(work, { recursive: true });
  const cli = snapshotCli(work);
  const startedAt = new Date();
  const loadAtStart = loadavg()[0];
  log(
    `${opt.quick ? 'quick' : 'full'} run: ${config.runs} run(s), latencies ${latencies.join(', ')} ms, contenders ${contenders.map((c) => c.name).join(', ')}; work dir ${work}`,
  );
  const fx = await fixtures(work);
  log(`fixtures ready (${config.bigBytes >> 20} MiB source, ${config.smallFiles}-file tarball)`);

  // JSON and SVG are rewritten after every job, so an interrupted run still leaves its figures behind.
  const names = contenders.map((c) => c.name);
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const host = await machine();
  const saveReport = (complete) => {
    mkdirSync(opt.out, { recursive: true });
    for (const s of servers) {
      for (const m of Object.values(s.results))
        for (const cell of Object.values(m)) cell.median = summarize(cell).median ?? null;
    }
    const report = {
      complete,
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      mode: opt.quick ? 'quick' : 'full',
      command: `bash scripts/bench ${process.argv
        .slice(2)
        .filter((a) => !a.startsWith('--work'))
        .join(' ')}`.trim(),
      config,
      machine: { ...host, loadAvg1mAtStart: loadAtStart, loadAvg1mAtEnd: loadavg()[0] },
      contenders: names,
      settings: SETTINGS,
      metrics,
      servers,
    };
    const goals = names.includes('seafs')
      ? [
          ...servers.flatMap((s) =>
            targets({ latencyMs: s.latencyMs, metrics: metrics.filter((m) => s.results[m.id]), results: s.results }),
          ),
          ...crossTargets({ servers, metrics }),
        ]
      : [];
    report.targets = goals;
    const jsonPath = join(opt.out, `${stamp}.json`);
    const svgPath = join(opt.out, `${stamp}.svg`);
    writeFileSync(jsonPath, JSON.stringify(report, null, 2));
    writeFileSync(
      svgPath,
      chart({
        title: `seafs benchmark (${report.mode}, ${config.runs} run(s), medians${complete ? '' : ', INCOMPLETE'}) ${report.startedAt.slice(0, 16)}Z`,
        panels: servers.map((s) => ({ title: `server latency ${s.latencyMs} ms`, results: s.results })),
        metrics,
        contenders: names,
      }),
    );
    return { report, goals, jsonPath, svgPath };
  };

  const servers = [];
  for (const latencyMs of latencies) {
    const results = {};
    const cellOf = (m, c) => ((results[m] ??= {})[c] ??= { values: [], errors: [] });
    const section = { latencyMs, results };
    servers.push(section);
    let server;
    try {
      // If the server dies, end whatever is waiting on it (mounts, readers) so the job fails now, not at its timeout.
      server = await startServer({ root: work, cli, latencyMs, log, onDeath: () => cleanupAll() });
      const t0 = Date.now();
      await seed(server, {
        src: fx.src,
        bigBytes: config.bigBytes,
        treeFolders: config.treeFolders,
        treeFiles: config.treeFiles,
        log,
      });
      section.seedSeconds = (Date.now() - t0) / 1000;
      if (jobs.includes('bigtree') && servers.length === 1)
        section.bigTreeSeedSeconds = await seedBigTree(server, config, log);
      // let the seed's writes reach the disk before anything is timed (the first run after it was slower)
      spawnSync('sync');
      await new Promise((r) => setTimeout(r, 3000));
    } catch (err) {
      log(`server (${latencyMs} ms) failed: ${err.message}`);
      section.serverError = err.message;
      for (const m of metrics)
        for (const c of contenders) if (applies(m, c.name)) cellOf(m.id, c.name).errors.push(`server: ${err.message}`);
      await server?.stop();
      continue;
    }
    const ctx = { work, cli, server, config, fixtures: fx, timeoutMs: config.timeoutMs };
    if (jobs.includes('bigtree')) ctx.bigTree = bigTreeShape(config);
    try {
      for (const job of jobs) {
        if (FIRST_SECTION_ONLY.includes(job) && servers.length > 1) continue;
        const jobMetrics = metrics.filter((m) => m.job === job);
        const runs = runsOf(job);
        for (let r = 1; r <= runs; r++) {
          // each run starts with another contender: whatever the first one after a drop pays is spread over all
          const order = contenders.map((_, k) => contenders[(k + r - 1) % contenders.length]);
          for (const c of order) {
            if (c.jobs && !c.jobs.includes(job)) continue;
            // memfs never talks to the server: measure it once and show the same figures in later sections.
            if (c.name === 'memfs' && servers.length > 1 && !servers[0].serverError) {
              if (r === 1) {
                for (const m of jobMetrics) {
                  const first = servers[0].results[m.id]?.memfs;
                  if (first) {
                    cellOf(m.id, 'memfs').values.push(...first.values);
                    cellOf(m.id, 'memfs').errors.push(...first.errors);
                  }
                }
                section.memfsFrom = servers[0].latencyMs;
              }
              continue;
            }
            if (server.dead && !c.memfs) {
              for (const m of jobMetrics) if (applies(m, c.name)) cellOf(m.id, c.name).errors.push(server.dead);
              continue;
            }
            const runCtx = { ...ctx, runId: `${c.name}-${latencyMs}-${r}`, verify: r === 1 };
            let out = {};
            let error = null;
            const t0 = Date.now();
            try {
              if (job === 'bigtree') out = await bigTreeJob(c, runCtx);
              else out = c.http ? await httpJob(job, runCtx) : await mountJob(job, c, runCtx);
            } catch (err) {
              error = err.message.replace(/\s+/g, ' ').trim();
              if (server.dead && !c.memfs) error = `${server.dead}: ${error}`;
            }
            for (const [k, v] of Object.entries(out)) {
              if (k.startsWith('x_')) (((section.diagnostics ??= {})[c.name] ??= {})[k.slice(2)] ??= []).push(v);
            }
            for (const m of jobMetrics) {
              if (!applies(m, c.name)) continue;
              const cell = cellOf(m.id, c.name);
              if (typeof out[m.id] === 'number' && Number.isFinite(out[m.id])) cell.values.push(out[m.id]);
              else cell.errors.push(error ?? 'not measured');
              (cell.wallSeconds ??= []).push((Date.now() - t0) / 1000); // the whole job, mount and unmount included
            }
            const got = Object.entries(out)
              .map(([k, v]) => `${k}=${v.toFixed(v < 10 ? 3 : 1)}`)
              .join(' ');
            log(
              `${latencyMs} ms | ${job} ${r}/${runs} | ${c.name}: ${error ? `FAILED ${error}` : got} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
            );
          }
        }
        saveReport(false);
      }
    } finally {
      await server.stop();
    }
  }

  const { report, goals, jsonPath, svgPath } = saveReport(true);
  process.stdout.write('\n');
  for (const s of servers)
    process.stdout.write(
      table({
        latencyMs: s.latencyMs,
        metrics: metrics.filter((m) => s.results[m.id]), // a job of the first section only leaves no row
        contenders: names,
        results: s.results,
        note:
          s.memfsFrom !== undefined
            ? `memfs does not use the server: its figures are the ${s.memfsFrom} ms section's`
            : '',
      }) + '\n\n',
    );
  if (servers.length > 1) {
    const side = latencyTable({ servers, metrics, contenders: names.filter((n) => n === 'seafs' || n === 'rclone') });
    if (side) process.stdout.write(side + '\n\n');
  }
  if (goals.length) process.stdout.write(`targets of issues 4 and 15 (seafs):\n${targetLines(goals).join('\n')}\n\n`);
  const busiest = Math.max(loadAtStart, report.machine.loadAvg1mAtEnd);
  if (busiest > cpus().length) {
    process.stdout.write(
      `note: the machine was busy (1-minute load ${busiest.toFixed(1)} on ${cpus().length} CPUs): figures are noisy\n`,
    );
  }
  if (report.machine.damonPageout) {
    process.stdout.write(
      'note: this kernel runs DAMON with a pageout scheme: idle page cache is paged out within seconds, so warm reads partly go back to the mount\n',
    );
  }
  process.stdout.write(`JSON: ${jsonPath}\nSVG:  ${svgPath}\n`);
  if (!opt['keep-work'] && !opt.work) {
    cleanupAll();
    // Never delete through a mount that somehow survived: that would delete the library's files.
    if (mountPoints().some((m) => m.startsWith(work + '/')))
      log(`not removing ${work}: something is still mounted in it`);
    else rmSync(work, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (err) {
  log(`fatal: ${err.stack ?? err.message}`);
  cleanupAll();
  process.exit(1);
}
cleanupAll();
process.exit(0);
