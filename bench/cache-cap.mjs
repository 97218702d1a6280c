#!/usr/bin/env node
// The cache dir's size under --cache-max-size while big copies go onto the mount and big reads come off it.
// Not a test: a table on stdout, progress on stderr. Build first (npm run build).
//   node bench/cache-cap.mjs [--limit-mib 256] [--total-mib 2048] [--files 64] [--jobs one,many,read]
//        [--runs 1] [--cache-max-size ARG]
// Starts its own `seafs serve`; each job gets a fresh mount and cache dir. The cache dir (all of it: the read
// chunk cache in blocks/, the files being written in dirty/, the journal and listings) is measured every
// 0.2 s (allocated bytes, as du counts them) from the start of the job until its files are on the server:
// the peak, and the size once the mount is idle. Jobs: one (cp of one file of --total-mib), many (cp of
// --files files making --total-mib), read (cat of the file `one` wrote, through a fresh mount), readmany (cat
// of the files `many` wrote, through a fresh mount). Every file
// written is checked through the API (SHA-1 against the local source). --limit-mib 0 runs with the default
// limit (4096 MiB); --cache-max-size passes its argument as is (e.g. `256M` once units are accepted).
// --rate-mbps N: the mount reaches the server through a proxy that takes request bodies at N MB/s at most
// (a slow uplink: uploads lag behind the copy, the case where files being written pile up in the cache dir).
// Job full (as root, not in the default list): the cache dir on a tmpfs of --full-disk-mib; --full-copy-mib are
// copied as one file, then as files of 8 MiB: what cp says, and what the server holds (a prefix, whole, or lost).
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { cleanupAll, findPids, isMounted, killPid, lazyUnmount, run, sleep, waitFor } from './lib/proc.mjs';
import { countingProxy } from './lib/remount.mjs';
import { startServer } from './lib/server.mjs';
import { agent } from './lib/api.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const { values: opt } = parseArgs({
  options: {
    'limit-mib': { type: 'string', default: '256' },
    'cache-max-size': { type: 'string' },
    'total-mib': { type: 'string', default: '2048' },
    files: { type: 'string', default: '64' },
    jobs: { type: 'string', default: 'one,many,read,readmany' },
    runs: { type: 'string', default: '1' },
    'rate-mbps': { type: 'string', default: '0' },
    'full-disk-mib': { type: 'string', default: '64' },
    'full-copy-mib': { type: 'string', default: '200' },
    work: { type: 'string' },
  },
});
const MiB = 1024 * 1024;
const LIMIT = Number(opt['limit-mib']);
const TOTAL = Number(opt['total-mib']) * MiB;
const FILES = Number(opt.files);
const RUNS = Number(opt.runs);
const log = (m) => process.stderr.write(`[cache-cap] ${m}\n`);
const work = opt.work ?? mkdtempSync(join(tmpdir(), 'seafs-cache-cap-'));
mkdirSync(work, { recursive: true });
process.on('exit', cleanupAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/** allocated bytes under `dir` (what du counts); files that vanish meanwhile are skipped */
function dirBytes(dir) {
  let sum = 0;
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const n of names) {
    const p = join(dir, n);
    try {
      const st = lstatSync(p);
      sum += st.blocks * 512;
      if (st.isDirectory()) sum += dirBytes(p);
    } catch {
      // gone meanwhile
    }
  }
  return sum;
}

/** samples dirBytes(dir) every 200 ms until stopped: the peak, and by part (blocks/, dirty/) at the peak */
function sampler(dir) {
  let peak = 0;
  let at = {};
  let n = 0;
  const tick = () => {
    const total = dirBytes(dir);
    n++;
    if (total > peak) {
      peak = total;
      // the account's folder inside the cache dir holds blocks/ (read cache) and dirty/ (files being written)
      const acct = readdirSync(dir).map((a) => join(dir, a));
      at = { blocks: 0, dirty: 0 };
      for (const a of acct) {
        at.blocks += dirBytes(join(a, 'blocks'));
        at.dirty += dirBytes(join(a, 'dirty'));
      }
    }
  };
  const timer = setInterval(tick, 200);
  tick();
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { peak, at, samples: n };
    },
  };
}

const server = await startServer({ root: work, cli: CLI, latencyMs: 0, log });
const { api, repo, user, library } = server;

// ---- the slow uplink: request bodies at RATE bytes/s at most, all connections together ----
const RATE = Number(opt['rate-mbps']) * 1e6;
let mountUrl = server.url;
let proxy = null;
if (RATE > 0) {
  proxy = await countingProxy(server.url, { uploadRate: RATE });
  mountUrl = proxy.url;
  log(`uploads through a proxy at ${opt['rate-mbps']} MB/s: ${mountUrl}`);
}

// ---- local data ----
const srcDir = join(work, 'src');
mkdirSync(srcDir, { recursive: true });
const big = join(srcDir, 'big.bin');
const small = [];
function makeFile(path, bytes) {
  const fd = openSync(path, 'w');
  const h = createHash('sha1');
  for (let o = 0; o < bytes; o += 16 * MiB) {
    const b = randomBytes(Math.min(16 * MiB, bytes - o));
    h.update(b);
    writeSync(fd, b);
  }
  closeSync(fd);
  return h.digest('hex');
}
log(`making ${TOTAL / MiB} MiB of source data (one file and ${FILES} files)`);
const bigSha = makeFile(big, TOTAL);
mkdirSync(join(srcDir, 'many'), { recursive: true });
for (let i = 0; i < FILES; i++) {
  const p = join(srcDir, 'many', `f${String(i).padStart(3, '0')}.bin`);
  small.push({ name: `f${String(i).padStart(3, '0')}.bin`, sha: makeFile(p, Math.floor(TOTAL / FILES)) });
}

async function remoteSha1(path) {
  const link = await api.downloadLink(repo, path);
  const res = await request(link, { dispatcher: agent });
  const h = createHash('sha1');
  for await (const c of res.body) h.update(c);
  return h.digest('hex');
}

// ---- mounts ----
const env = { SEAFS_PASSWORD: user.password, SEAFS_RUNTIME_DIR: join(work, 'run') };
let mounts = 0;
async function mount(prepare = async () => {}) {
  const id = ++mounts;
  const mnt = join(work, `mnt-${id}`);
  const cacheRoot = join(work, `cache-${id}`);
  mkdirSync(mnt, { recursive: true });
  mkdirSync(cacheRoot, { recursive: true });
  await prepare(cacheRoot);
  const args = [CLI, 'mount', mountUrl, mnt, '--library', library, '--user', user.email, '--daemon'];
  args.push('--cache-dir', cacheRoot);
  if (opt['cache-max-size']) args.push('--cache-max-size', opt['cache-max-size']);
  else if (LIMIT > 0) args.push('--cache-max-size', String(LIMIT));
  await run(process.execPath, args, { env, timeoutMs: 60_000, name: 'seafs mount' });
  await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'the mount' });
  const pid = findPids(mnt)[0];
  const status = async () =>
    JSON.parse((await run(process.execPath, [CLI, 'status', '--json', mnt], { env, timeoutMs: 30_000 })).stdout)[0];
  return {
    mnt,
    cacheRoot,
    /** waits until nothing is pending; returns the writes that waited for room (status' cacheRoom) */
    async settled() {
      for (;;) {
        const st = await status();
        if ((st.queue ?? st.pending).length === 0) return st.cacheRoom ?? null;
        await sleep(250);
      }
    },
    async close() {
      await run(process.execPath, [CLI, 'unmount', mnt], { env, timeoutMs: 600_000 }).catch(() => {});
      lazyUnmount(mnt);
      if (pid) await killPid(pid, 5000);
      try {
        rmSync(cacheRoot, { recursive: true, force: true });
      } catch {
        // a mount point (the full-disk job's tmpfs): its owner removes it
      }
      rmSync(mnt, { recursive: true, force: true });
    },
  };
}

// ---- jobs ----
const rows = [];
async function job(name, fn) {
  const m = await mount();
  try {
    const s = sampler(m.cacheRoot);
    const t0 = Date.now();
    const copyMs = await fn(m);
    const room = await m.settled();
    const settleMs = Date.now() - t0;
    const { peak, at, samples } = s.stop();
    await sleep(1500); // the deletes of finished uploads' temp files
    const final = dirBytes(m.cacheRoot);
    const row = {
      job: name,
      limitMiB: LIMIT || 4096,
      rateMBps: RATE ? RATE / 1e6 : 'none',
      peakMiB: +(peak / MiB).toFixed(1),
      peakBlocksMiB: +((at.blocks ?? 0) / MiB).toFixed(1),
      peakDirtyMiB: +((at.dirty ?? 0) / MiB).toFixed(1),
      finalMiB: +(final / MiB).toFixed(1),
      copyS: +(copyMs / 1000).toFixed(2),
      settleS: +(settleMs / 1000).toFixed(2),
      MBps: +(TOTAL / 1e6 / (settleMs / 1000)).toFixed(1),
      writeWaits: room ? room.waits : 'n/a',
      waitedS: room ? +(room.waitedMs / 1000).toFixed(1) : 'n/a',
      samples,
    };
    rows.push(row);
    log(JSON.stringify(row));
  } finally {
    await m.close();
  }
}

/** the cache dir on a small tmpfs: a copy of one large file, then of files that each fit */
async function fullDisk() {
  const diskMiB = Number(opt['full-disk-mib']);
  const copy = Number(opt['full-copy-mib']) * MiB;
  const one = join(srcDir, 'full-one.bin');
  const oneSha = makeFile(one, copy);
  const parts = join(srcDir, 'full-parts');
  mkdirSync(parts, { recursive: true });
  const partShas = [];
  for (let o = 0, i = 0; o < copy; o += 8 * MiB, i++)
    partShas.push([`p${i}.bin`, makeFile(join(parts, `p${i}.bin`), Math.min(8 * MiB, copy - o))]);
  let tmpfs = null;
  const m = await mount(async (dir) => {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${diskMiB}m`, 'tmpfs', dir]);
    tmpfs = dir;
  });
  const outcome = async (cmd) => {
    const r = await run('bash', ['-c', cmd], { check: false, timeoutMs: 600_000 });
    return r.code === 0 ? 'completed' : `failed: ${r.stderr.trim().split('\n').pop().replace(/^.*: /, '')}`;
  };
  try {
    await api.deletePath(repo, '/full-one.bin').catch(() => {});
    await api.deletePath(repo, '/full-parts').catch(() => {});
    const oneSaid = await outcome(`cp ${one} ${m.mnt}/full-one.bin`);
    const partsSaid = await outcome(`cp -r ${parts} ${m.mnt}/full-parts`);
    await m.settled();
    // what the server holds of the large file: whole, an exact prefix, or something else
    const size = await api.fileSize(repo, '/full-one.bin').catch(() => null);
    let held = 'nothing';
    if (size !== null) {
      const h = createHash('sha1');
      const fd = openSync(one, 'r');
      const buf = Buffer.allocUnsafe(size);
      for (let o = 0; o < size;) o += readSync(fd, buf, o, size - o, o);
      closeSync(fd);
      h.update(buf);
      const prefix = h.digest('hex');
      const got = await remoteSha1('/full-one.bin');
      held = got === oneSha ? 'whole' : got === prefix ? `an exact prefix (${(size / MiB).toFixed(1)} MiB)` : 'CORRUPT';
    }
    let whole = 0;
    for (const [n, sha] of partShas) if ((await remoteSha1(`/full-parts/${n}`).catch(() => '')) === sha) whole++;
    const row = { diskMiB, copyMiB: copy / MiB, oneFile: oneSaid, serverHolds: held, files: partsSaid };
    row.filesWhole = `${whole} of ${partShas.length}`;
    fullRows.push(row);
    log(JSON.stringify(row));
  } finally {
    await m.close();
    if (tmpfs) await run('umount', [tmpfs], { check: false });
    if (tmpfs) rmSync(tmpfs, { recursive: true, force: true });
  }
}
const fullRows = [];

const timed = async (cmd) => (await run('bash', ['-c', cmd], { timeoutMs: 3_600_000, name: cmd.split(' ')[0] })).ms;
const jobs = opt.jobs.split(',');
for (let r = 0; r < RUNS; r++) {
  if (jobs.includes('one') || jobs.includes('read')) {
    await api.deletePath(repo, '/one.bin').catch(() => {});
    await job('one', (m) => timed(`cp ${big} ${m.mnt}/one.bin`));
    if ((await remoteSha1('/one.bin')) !== bigSha) throw new Error('one.bin on the server is not what was written');
    log('one.bin checked through the API');
  }
  if (jobs.includes('many')) {
    await api.deletePath(repo, '/many').catch(() => {});
    await job('many', (m) => timed(`cp -r ${srcDir}/many ${m.mnt}/many`));
    for (const f of small)
      if ((await remoteSha1(`/many/${f.name}`)) !== f.sha) throw new Error(`many/${f.name} on the server differs`);
    log(`many: ${small.length} files checked through the API`);
  }
  if (jobs.includes('read')) await job('read', (m) => timed(`cat ${m.mnt}/one.bin > /dev/null`));
  if (jobs.includes('full')) await fullDisk();
  if (jobs.includes('readmany')) await job('readmany', (m) => timed(`cat ${m.mnt}/many/* > /dev/null`));
}

function table(list) {
  const cols = Object.keys(list[0] ?? {});
  if (!cols.length) return;
  process.stdout.write(`| ${cols.join(' | ')} |\n|${cols.map(() => '---').join('|')}|\n`);
  for (const r of list) process.stdout.write(`| ${cols.map((c) => r[c]).join(' | ')} |\n`);
}
table(rows);
if (fullRows.length) process.stdout.write('\n');
table(fullRows);
await proxy?.close();
await server.stop();
await agent.close().catch(() => {});
rmSync(work, { recursive: true, force: true });
