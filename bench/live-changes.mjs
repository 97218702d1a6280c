#!/usr/bin/env node
// What following the server's notification server buys, against `seafs serve` with notifications (the default)
// and with --no-notifications, every mount with its DEFAULT options. Not a test: tables on stdout, progress on
// stderr. Build first (npm run build).
//   node bench/live-changes.mjs [--runs 20] [--idle-minutes 10] [--refresh-s 10] [--modes notifications,polling]
//                               [--parts latency,idle] [--work DIR] [--keep-work]
// 1. latency: two mounts of one library (same user). Each run: mount B lists /live (as a user with the folder
//    open), a new small file (unique name) is written through mount A, the API is polled until it lists the file
//    (landed), and mount B's readdir of /live every 20 ms until it shows: median, p90 and max of (seen on B -
//    landed). Every file written is then checked through the API.
// 2. idle: a library of 10,000 files in 20 folders (seeded through the API, one multipart upload per folder), a
//    mount that lists its root and all 20 folders once, then runs `ls -A` on each folder every --refresh-s
//    seconds (a shell or a file manager refreshing) for --idle-minutes: the requests the server received while
//    idle, by kind (from the server's --verbose request log), per mode; the first listing is counted apart.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pool } from './lib/api.mjs';
import { seafs } from './lib/mounts.mjs';
import { cleanupAll, run, sleep, waitFor } from './lib/proc.mjs';
import { startServer } from './lib/server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const { values: opt } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    'idle-minutes': { type: 'string', default: '10' },
    'refresh-s': { type: 'string', default: '10' },
    modes: { type: 'string', default: 'notifications,polling' },
    parts: { type: 'string', default: 'latency,idle' },
    work: { type: 'string' },
    'keep-work': { type: 'boolean', default: false },
  },
});
const RUNS = Number(opt.runs);
const IDLE_MS = Number(opt['idle-minutes']) * 60_000;
const REFRESH_MS = Number(opt['refresh-s']) * 1000;
const MODES = opt.modes.split(',');
const PARTS = opt.parts.split(',');
const FOLDERS = 20;
const PER_FOLDER = 500;
for (const m of MODES) if (!['notifications', 'polling'].includes(m)) throw new Error(`unknown mode ${m}`);
if (!(RUNS > 0) || !(IDLE_MS > 0) || !(REFRESH_MS > 0)) throw new Error('--runs, --idle-minutes, --refresh-s: > 0');

const log = (m) => process.stderr.write(`[live-bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const work = opt.work ?? mkdtempSync(join(tmpdir(), 'seafs-live-bench-'));
mkdirSync(work, { recursive: true });

process.on('exit', cleanupAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    log(`${sig}: cleaning up`);
    cleanupAll();
    process.exit(130);
  });
}

const SERVE_ARGS = { notifications: [], polling: ['--no-notifications'] };

function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** a mount context for lib/mounts.mjs: the server, with `library` as the library mounted */
const mountCtx = (server, library) => ({
  work: join(work, 'm'),
  cli: CLI,
  server: { ...server, library },
  timeoutMs: 120_000,
});

/** how the mount learns of changes made elsewhere (`seafs status --json`, changes.mode) */
async function changeMode(m, mode) {
  if (mode === 'notifications') {
    // the websocket is opened after the mount: wait until it is subscribed
    await waitFor(async () => (await m.status()).changes?.mode === 'notification', {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: 'the mount to subscribe to the notification server',
    }).catch((e) => log(`warning: ${e.message}`));
  }
  return (await m.status()).changes?.mode ?? '?';
}

// ---- the server's request log (--verbose): "METHOD /path?query STATUS Nms" ----
function logSize(server) {
  return statSync(server.logFile).size;
}
/** requests logged since byte `from` of the server's log, counted by kind (those `keep` keeps) */
function requestsSince(server, from, keep = () => true) {
  const text = readFileSync(server.logFile).subarray(from).toString('utf8');
  const kinds = new Map();
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /\b(GET|POST|PUT|DELETE|HEAD|PATCH|OPTIONS) (\/\S*) (\d{3}) \d+ms$/.exec(line);
    if (!m) continue;
    const k = kindOf(m[1], m[2], m[3]);
    if (!keep(k)) continue;
    total++;
    kinds.set(k, (kinds.get(k) ?? 0) + 1);
  }
  return { total, kinds };
}
/** method, path with ids and tokens generalised, the query's parameter names, the status */
function kindOf(method, url, status) {
  const [p, q] = url.split(/\?(.*)/s, 2);
  const path = p
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, ':repo')
    .replace(/\/[0-9a-f]{40}(?=\/|$)/g, '/:id');
  const params = q === undefined ? [] : [...new URLSearchParams(q).keys()].sort();
  return `${method} ${path}${params.length ? ` ?${params.join('&')}` : ''} ${status}`;
}

async function withServer(mode, fn) {
  const root = join(work, mode);
  mkdirSync(root, { recursive: true });
  const server = await startServer({
    root,
    cli: CLI,
    latencyMs: 0,
    log,
    onDeath: () => cleanupAll(),
    extraArgs: ['--verbose', ...SERVE_ARGS[mode]],
  });
  server.logFile = join(root, 'server-0ms.log');
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

// ---- 1. latency ----
async function latency(mode) {
  return withServer(mode, async (server) => {
    const { api, repo } = server;
    await api.mkdir(repo, '/live');
    const ctx = mountCtx(server, server.library);
    const mounts = [];
    try {
      const a = await seafs.mount(ctx, 'write');
      mounts.push(a);
      const b = await seafs.mount(ctx, 'write');
      mounts.push(b);
      const modeA = await changeMode(a, mode);
      const modeB = await changeMode(b, mode);
      log(`${mode}: mount A follows changes by ${modeA}, mount B by ${modeB}`);
      const delays = [];
      const written = [];
      const runsAt = logSize(server);
      for (let i = 0; i < RUNS; i++) {
        const name = `f-${i}-${Date.now()}.txt`;
        const data = `run ${i} of ${mode} ${name}\n`;
        await readdir(join(b.path, 'live')); // B holds the folder's listing
        await sleep(200);
        const t0 = Date.now();
        writeFileSync(join(a.path, 'live', name), data);
        let landed = null;
        let seen = null;
        const deadline = t0 + 120_000;
        const onServer = (async () => {
          while (landed === null && Date.now() < deadline) {
            // file/detail: a call the mounts do not make, left out of their requests below
            if ((await api.fileSize(repo, `/live/${name}`)) !== null) landed = Date.now();
            else await sleep(20);
          }
        })();
        const onB = (async () => {
          while (seen === null && Date.now() < deadline) {
            if ((await readdir(join(b.path, 'live'))).includes(name)) seen = Date.now();
            else await sleep(20);
          }
        })();
        await Promise.all([onServer, onB]);
        if (landed === null) throw new Error(`${mode} run ${i}: ${name} never reached the server`);
        if (seen === null) throw new Error(`${mode} run ${i}: ${name} never listed by mount B (120 s)`);
        delays.push(seen - landed);
        written.push([name, data]);
        log(
          `${mode} run ${i + 1}/${RUNS}: on the server ${landed - t0} ms after the write, on B ${seen - landed} ms later`,
        );
      }
      const requests = requestsSince(server, runsAt, (k) => !k.includes('/file/detail/'));
      // every file written through the mount, read back through the API
      for (const [name, data] of written) {
        const link = await api.downloadLink(repo, `/live/${name}`);
        const got = await (await fetch(link)).text();
        if (got !== data) throw new Error(`${mode}: /live/${name} on the server is not what was written`);
      }
      log(`${mode}: the ${written.length} files written are on the server as written`);
      const events = (await b.status()).changes?.events ?? 0;
      return { mode, changeMode: modeB, delays, events, requests };
    } finally {
      for (const m of mounts.reverse()) await m.close().catch((e) => log(`closing a mount: ${e.message}`));
    }
  });
}

// ---- 2. idle ----
async function idle(mode) {
  return withServer(mode, async (server) => {
    const { api } = server;
    const library = 'Idle';
    const repo = await api.createRepo(library);
    const t0 = Date.now();
    const folders = Array.from({ length: FOLDERS }, (_, i) => `/d${String(i).padStart(2, '0')}`);
    await pool(folders, 4, async (dir) => {
      await api.mkdir(repo, dir);
      const files = Array.from({ length: PER_FOLDER }, (_, i) => ({
        name: `file-${String(i).padStart(4, '0')}.txt`,
        data: `${dir} ${i}\n`,
      }));
      await api.upload(await api.uploadLink(repo, dir), dir, files);
    });
    const count = await api.countFiles(repo, '/');
    if (count !== FOLDERS * PER_FOLDER) throw new Error(`seeding: the server lists ${count} files`);
    log(`${mode}: seeded ${count} files in ${FOLDERS} folders in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const mounts = [];
    try {
      const startAt = logSize(server);
      const m = await seafs.mount(mountCtx(server, library), 'read');
      mounts.push(m);
      const top = await readdir(m.path);
      if (top.length !== FOLDERS) throw new Error(`the mount lists ${top.length} folders, want ${FOLDERS}`);
      for (const d of folders) {
        const n = (await readdir(join(m.path, d))).length;
        if (n !== PER_FOLDER) throw new Error(`the mount lists ${n} files in ${d}, want ${PER_FOLDER}`);
      }
      const how = await changeMode(m, mode);
      const first = requestsSince(server, startAt);
      log(`${mode}: mounted and listed everything once (${first.total} requests); idle for ${IDLE_MS / 60000} min`);
      const idleAt = logSize(server);
      const end = Date.now() + IDLE_MS;
      let rounds = 0;
      while (Date.now() < end) {
        const r0 = Date.now();
        const paths = folders.map((d) => join(m.path, d));
        await run('ls', ['-A', ...paths], { name: 'ls', keepStdout: false, timeoutMs: 120_000 });
        rounds++;
        const wait = Math.min(end, r0 + REFRESH_MS) - Date.now();
        if (wait > 0) await sleep(wait);
        if (rounds % 6 === 0) log(`${mode}: ${rounds} rounds, ${requestsSince(server, idleAt).total} requests so far`);
      }
      const idleReq = requestsSince(server, idleAt);
      const events = (await m.status()).changes?.events ?? 0;
      log(`${mode}: ${rounds} rounds of ls; ${idleReq.total} requests while idle`);
      return { mode, changeMode: how, first, idle: idleReq, rounds, events };
    } finally {
      for (const m of mounts) await m.close().catch((e) => log(`closing a mount: ${e.message}`));
    }
  });
}

// ---- report ----
const out = (s = '') => process.stdout.write(`${s}\n`);
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const results = { latency: [], idle: [] };
log(`work dir ${work}; load ${load()}`);
let failed = null;
try {
  if (PARTS.includes('latency')) for (const mode of MODES) results.latency.push(await latency(mode));
  if (PARTS.includes('idle')) for (const mode of MODES) results.idle.push(await idle(mode));
} catch (e) {
  failed = e;
  log(`failed: ${e.stack ?? e}`);
}

out(`\nlive changes (${new Date().toISOString()}, load ${load()}; default mount options)`);
if (results.latency.length) {
  out(`\n1. a new file written through mount A, listed by mount B: ms after the API lists it (${RUNS} runs)`);
  out(
    `${pad('server', 31)} ${pad('B follows by', 13)} ${lpad('median', 7)} ${lpad('p90', 7)} ${lpad('max', 7)} ${lpad('events', 7)}`,
  );
  for (const r of results.latency)
    out(
      `${pad(r.mode === 'notifications' ? 'seafs serve' : 'seafs serve --no-notifications', 31)} ${pad(r.changeMode, 13)} ${lpad(quantile(r.delays, 0.5), 7)} ${lpad(quantile(r.delays, 0.9), 7)} ${lpad(Math.max(...r.delays), 7)} ${lpad(r.events, 7)}`,
    );
  out(`\nrequests of mounts A and B together during the ${RUNS} runs (the upload included), by kind`);
  for (const r of results.latency) {
    const name = r.mode === 'notifications' ? 'seafs serve' : 'seafs serve --no-notifications';
    out(`${name}: ${r.requests.total} (${(r.requests.total / RUNS).toFixed(1)} per run)`);
    for (const [k, n] of [...r.requests.kinds].sort((a, b) => b[1] - a[1])) out(`  ${lpad(n, 6)}  ${k}`);
  }
}
if (results.idle.length) {
  const mins = IDLE_MS / 60000;
  out(
    `\n2. requests to the server: a mount of ${FOLDERS * PER_FOLDER} files in ${FOLDERS} folders, \`ls -A\` of every folder every ${REFRESH_MS / 1000} s for ${mins} min`,
  );
  for (const r of results.idle) {
    const name = r.mode === 'notifications' ? 'seafs serve' : 'seafs serve --no-notifications';
    out(
      `\n${name} (mount follows changes by ${r.changeMode}; ${r.rounds} rounds; ${r.events} events): mount + first listing ${r.first.total} requests, idle ${r.idle.total} (${(r.idle.total / mins).toFixed(1)}/min)`,
    );
    const kinds = [...r.idle.kinds].sort((a, b) => b[1] - a[1]);
    for (const [k, n] of kinds) out(`  idle  ${lpad(n, 6)}  ${k}`);
    for (const [k, n] of [...r.first.kinds].sort((a, b) => b[1] - a[1])) out(`  first ${lpad(n, 6)}  ${k}`);
  }
}
cleanupAll();
if (!opt['keep-work'] && !failed) rmSync(work, { recursive: true, force: true });
else log(`work dir kept: ${work}`);
if (failed) process.exit(1);
