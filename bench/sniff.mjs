#!/usr/bin/env node
// What opening a folder in a file manager downloads. File managers stat every entry and read the head of each
// file to guess its type (GIO reads the first 4 KiB); a mount should fetch little for that, not the files.
// Measured on a folder of small-ish files seeded through the API (never through a mount), with the bytes the
// server sends counted by a proxy between each mount and the server:
//   stat    `ls -l` of the folder on a fresh mount (listing and attributes)
//   sniff   `head -c 4096` of every file (as GIO sniffs): bytes downloaded in total and per file, requests
//   file    `file` of every file (it reads further than 4 KiB), for information, seafs only
//   gio     `gio info -a standard::content-type` of every file on another fresh mount: GIO's own sniff
//           (4 KiB read at the start), when gio is installed (--gio no: without; --gio only: that alone)
// Each contender mounts with a fresh cache and its defaults (rclone as bench/lib/mounts.mjs mounts it for
// reading: --vfs-cache-mode full), the page cache dropped first when root.
// With --base-cli (the dist/cli/main.js of another build, e.g. the commit before a change), that build is a
// contender as well ("seafs-base"), and the sequential throughput of both builds is compared: a cold `cat` of a
// large file on a fresh mount, direct to the server (no proxy), runs alternating, medians with the load average.
// Not a test: a table on stdout, progress on stderr. Build first (npm run build).
//   node bench/sniff.mjs [--files 200] [--file-mib 4] [--seq-mib 256] [--runs 3]
//        [--contenders seafs,seafs-base,rclone] [--base-cli ../other/dist/cli/main.js] [--gio yes|no|only]
//        [--work DIR]
import { spawnSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pool } from './lib/api.mjs';
import { randomFile } from './lib/dataset.mjs';
import { rclone, seafs } from './lib/mounts.mjs';
import { cleanupAll, dropCaches, primeServerDisk, run, sleep } from './lib/proc.mjs';
import { startServer } from './lib/server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const { values: opt } = parseArgs({
  options: {
    files: { type: 'string', default: '200' },
    'file-mib': { type: 'string', default: '4' },
    'seq-mib': { type: 'string', default: '256' },
    runs: { type: 'string', default: '3' },
    contenders: { type: 'string' },
    'base-cli': { type: 'string' },
    work: { type: 'string' },
    gio: { type: 'string', default: 'yes' },
  },
});
const KiB = 1024;
const MiB = 1024 * KiB;
const FILES = Number(opt.files);
const FILE_BYTES = Number(opt['file-mib']) * MiB;
const SEQ_BYTES = Number(opt['seq-mib']) * MiB;
const RUNS = Number(opt.runs);
const BASE_CLI = opt['base-cli'] ? resolve(opt['base-cli']) : null;
// --contenders '' runs the sequential comparison alone
const CONTENDERS = (opt.contenders ?? (BASE_CLI ? 'seafs,seafs-base,rclone' : 'seafs,rclone'))
  .split(',')
  .filter(Boolean);
if (CONTENDERS.includes('seafs-base') && !BASE_CLI) {
  process.stderr.write('seafs-base needs --base-cli PATH (dist/cli/main.js of the other build)\n');
  process.exit(2);
}
// GIO's own sniff as well when `gio` is installed (--gio only: that alone)
const GIO = opt.gio !== 'no' && spawnSync('gio', ['version'], { stdio: 'ignore' }).status === 0;
const GIO_ONLY = GIO && opt.gio === 'only';
const DIR = '/sniff';
const BIG = '/big.bin';
const log = (m) => process.stderr.write(`[sniff-bench] ${m}\n`);
const work = opt.work ?? mkdtempSync(join(tmpdir(), 'seafs-sniff-bench-'));
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

// every mount and process the bench started goes, whatever happens
process.on('exit', cleanupAll);
for (const sig of ['SIGINT', 'SIGTERM'])
  process.on(sig, () => {
    cleanupAll();
    process.exit(130);
  });

// ---- the counting proxy: bytes the server answers and requests, what is in flight ----
const count = { requests: 0, apiBytes: 0, fileBytes: 0, inFlight: 0, lastActivity: Date.now() };
const open = new Map(); // requests in flight: url by start time
const sockets = new Set();
let proxy = null;
function startProxy(target) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    // the mount's change notifications stay open for its life: counted, never waited for
    const waitable = !req.url?.startsWith('/notification');
    count.requests++;
    if (waitable) count.inFlight++;
    count.lastActivity = Date.now();
    const key = {};
    open.set(key, `${req.method} ${req.url}`);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      open.delete(key);
      if (waitable) count.inFlight--;
      count.lastActivity = Date.now();
    };
    res.on('close', finish);
    const files = req.url?.startsWith('/seafhttp/');
    const up = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
      (ans) => {
        ans.on('data', (d) => {
          if (files) count.fileBytes += d.length;
          else count.apiBytes += d.length;
          count.lastActivity = Date.now();
        });
        res.writeHead(ans.statusCode ?? 502, ans.headers);
        ans.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    // a reader that gives up (a mount closing a stream) ends the request to the server as well
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((r) =>
    server.listen(0, '127.0.0.1', () =>
      r({
        url: `http://127.0.0.1:${server.address().port}`,
        close() {
          server.close();
          for (const s of sockets) s.destroy();
          agent.destroy();
        },
      }),
    ),
  );
}
const snapshot = () => ({ requests: count.requests, api: count.apiBytes, files: count.fileBytes });
/** what the server sent since `s0`, once nothing has moved for `quietMs` (readahead finishing in the background) */
async function since(s0, quietMs = 1500) {
  const end = Date.now() + 60_000;
  let told = false;
  while (Date.now() < end && (count.inFlight > 0 || Date.now() - count.lastActivity < quietMs)) {
    if (!told && end - Date.now() < 55_000) {
      told = true;
      log(`still in flight after 5 s: ${[...open.values()].join(', ') || 'none'}`);
    }
    await sleep(100);
  }
  const s = snapshot();
  return { requests: s.requests - s0.requests, api: s.api - s0.api, files: s.files - s0.files };
}

// asynchronous: the proxy runs in this process and must go on answering meanwhile
const sh = (cmd, timeoutMs = 1_800_000) => run('bash', ['-c', cmd], { timeoutMs, name: cmd.split(' ')[0] });

// ---- seeding, through the API ----
async function seedData(server) {
  const { api, repo } = server;
  const t0 = Date.now();
  await api.mkdir(repo, DIR);
  const link = await api.uploadLink(repo, DIR);
  const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(4, '0')}.bin`);
  const batches = [];
  for (let i = 0; i < names.length; i += 8) batches.push(names.slice(i, i + 8));
  await pool(batches, 2, async (batch) => {
    const files = batch.map((name) => ({ name, data: randomFillSync(Buffer.allocUnsafe(FILE_BYTES)) }));
    await api.upload(link, DIR, files);
  });
  const listed = await api.listDir(repo, DIR);
  if (listed.length !== FILES || listed.some((e) => e.size !== FILE_BYTES))
    throw new Error(`seeding ${DIR}: the server lists ${listed.length} files, want ${FILES} of ${FILE_BYTES} bytes`);
  if (BASE_CLI) {
    const src = join(work, 'big.src');
    await randomFile(src, SEQ_BYTES);
    const l = await api.uploadLink(repo, '/');
    await run('curl', ['-sS', '--fail-with-body', '-F', `file=@${src};filename=big.bin`, '-F', 'parent_dir=/', l], {
      timeoutMs: 900_000,
    });
    rmSync(src, { force: true });
    if ((await api.fileSize(repo, BIG)) !== SEQ_BYTES) throw new Error(`seeding ${BIG}: wrong size on the server`);
  }
  log(`seeded ${FILES} files of ${FILE_BYTES / MiB} MiB in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

// ---- the contenders ----
const kinds = {
  seafs: { driver: seafs, cli: CLI, mode: 'read' },
  'seafs-base': { driver: seafs, cli: BASE_CLI, mode: 'read' },
  rclone: { driver: rclone, cli: CLI, mode: 'read' },
};
const ctxFor = (server, url, cli) => ({ work, cli, server: { ...server, url }, timeoutMs: 120_000 });

const rows = [];
/** a row of the bytes table: `d` what the server sent during the command, which took `ms` */
function addRow(contender, what, d, ms) {
  const r = {
    contender,
    what,
    totalMiB: (d.files + d.api) / MiB,
    dataPerFileKiB: d.files / KiB / FILES,
    apiPerFileKiB: d.api / KiB / FILES,
    requests: d.requests,
    s: ms / 1000,
    load: load(),
  };
  rows.push(r);
  log(`${contender} ${what}: ${JSON.stringify(r)}`);
}
async function sniffJob(name, server) {
  const k = kinds[name];
  const m = await k.driver.mount(ctxFor(server, proxy.url, k.cli), k.mode);
  try {
    const dir = `${m.path}${DIR}`;
    dropCaches();
    const row = (what, d, ms) => addRow(name, what, d, ms);
    let s0 = snapshot();
    const ls = await sh(`ls -l ${dir} | tail -n +2 | wc -l`);
    if (Number(ls.stdout.trim()) !== FILES) throw new Error(`${name}: ls -l shows ${ls.stdout.trim()} entries`);
    row('stat (ls -l)', await since(s0), ls.ms);

    s0 = snapshot();
    // one process opening and reading each file in turn, as a file manager's type sniffing does
    const head = await sh(`head -q -c 4096 ${dir}/* | wc -c`);
    if (Number(head.stdout.trim()) !== FILES * 4096) throw new Error(`${name}: head read ${head.stdout.trim()} bytes`);
    row('sniff (head -c 4096)', await since(s0), head.ms);
    if (m.status) log(`${name} reader after the sniff: ${JSON.stringify((await m.status()).reader ?? {})}`);

    if (name !== 'rclone') {
      s0 = snapshot();
      const f = await sh(`file ${dir}/* > /dev/null`);
      row('file (for information)', await since(s0), f.ms);
    }
  } finally {
    await m.close();
  }
}

/** GIO itself (`gio info -a standard::content-type`, which reads each file's first 4 KiB) on a fresh mount */
async function gioJob(name, server) {
  const k = kinds[name];
  const m = await k.driver.mount(ctxFor(server, proxy.url, k.cli), k.mode);
  try {
    dropCaches();
    const s0 = snapshot();
    const g = await sh(`gio info -a standard::content-type ${m.path}${DIR}/* | grep -c 'content-type: '`);
    if (Number(g.stdout.trim()) !== FILES) throw new Error(`${name}: gio typed ${g.stdout.trim()} files`);
    addRow(name, 'gio content type (fresh mount)', await since(s0), g.ms);
  } finally {
    await m.close();
  }
}

const seqRows = [];
async function seqJob(name, server, i) {
  const k = kinds[name];
  const m = await k.driver.mount(ctxFor(server, server.url, k.cli), k.mode);
  try {
    primeServerDisk(server.dataDir); // drops the page cache too
    const before = load();
    const r = await sh(`cat ${m.path}${BIG} | wc -c`);
    if (Number(r.stdout.trim()) !== SEQ_BYTES) throw new Error(`${name}: cat read ${r.stdout.trim()} bytes`);
    const row = { contender: name, run: i + 1, MBps: SEQ_BYTES / MiB / (r.ms / 1000), s: r.ms / 1000, load: before };
    seqRows.push(row);
    // the same reader path in both builds (streams, ranged GETs) says a difference in time is the machine's
    log(`seq ${JSON.stringify(row)} reader ${JSON.stringify((await m.status()).reader ?? {})}`);
  } finally {
    await m.close();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

let server = null;
try {
  log(`work dir ${work}; ${FILES} files of ${FILE_BYTES / MiB} MiB; contenders ${CONTENDERS.join(',')}`);
  server = await startServer({ root: work, cli: CLI, latencyMs: 0, log });
  proxy = await startProxy(new URL(server.url));
  await seedData(server);
  for (const c of CONTENDERS) {
    if (!GIO_ONLY) await sniffJob(c, server);
    if (GIO) await gioJob(c, server);
  }
  if (BASE_CLI) for (let i = 0; i < RUNS; i++) for (const c of ['seafs-base', 'seafs']) await seqJob(c, server, i);
} finally {
  proxy?.close();
  await server?.stop();
  cleanupAll();
}

const p = (s, n) => String(s).padEnd(n);
const out = [];
out.push(`# bytes downloaded per file opened by a file manager (${FILES} files of ${FILE_BYTES / MiB} MiB)`);
out.push(`${new Date().toISOString()}; load average at the end ${load()}; ${process.env.BENCH_SEAFS_ARGS ?? ''}`);
out.push('');
out.push(
  '| contender | what | downloaded MiB | file data per file KiB | API per file KiB | requests | command s | load (1 5 15 min) |',
);
out.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
for (const r of rows)
  out.push(
    `| ${r.contender} | ${r.what} | ${r.totalMiB.toFixed(1)} | ${r.dataPerFileKiB.toFixed(1)} | ${r.apiPerFileKiB.toFixed(2)} | ${r.requests} | ${r.s.toFixed(1)} | ${r.load} |`,
  );
if (seqRows.length) {
  out.push('');
  out.push(`# sequential read: cold cat of a ${SEQ_BYTES / MiB} MiB file, fresh mount, runs alternating`);
  out.push('');
  out.push('| contender | run | MB/s | seconds | load before (1 5 15 min) |');
  out.push('| --- | ---: | ---: | ---: | --- |');
  for (const r of seqRows)
    out.push(`| ${r.contender} | ${r.run} | ${r.MBps.toFixed(0)} | ${r.s.toFixed(2)} | ${r.load} |`);
  out.push('');
  for (const c of ['seafs-base', 'seafs']) {
    const mine = seqRows.filter((r) => r.contender === c).map((r) => r.MBps);
    out.push(`${p(c, 11)} median ${median(mine).toFixed(0)} MB/s over ${mine.length} runs`);
  }
}
process.stdout.write(out.join('\n') + '\n');
if (!opt.work) rmSync(work, { recursive: true, force: true });
