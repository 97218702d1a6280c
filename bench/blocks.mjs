#!/usr/bin/env node
// Uploads by blocks against whole-file uploads (issue 29), bytes counted by a proxy between the mount and
// the server. Not a test: a table on stdout, progress on stderr. Build first (npm run build).
//   BENCH_PASSWORD=... node bench/blocks.mjs --url http://127.0.0.1:8000 --user a@b.c [--files-url URL]
//        [--size-mib 1024] [--latency-ms 0] [--modes blocks,whole] [--jobs fresh,edit,append,cp,cut,reread]
// reread (reads by block, src/vfs/read/block-reuse.ts): a file read once through the mount, then changed
// in one 8 MiB block by another client (the API), read again: bytes downloaded ('whole': SEAFS_BLOCK_READS=off).
// --url: the server (a `seafs serve` or a real Seafile server); the proxy listens on free ports, and on a
// real server, whose file server has its own origin (--files-url, e.g. http://127.0.0.1:8082), it rewrites
// that origin in the API's answers so transfers go through its second listener too. --latency-ms delays
// every request by that much (a distant server). Each job makes a fresh library; every file written is
// checked at the end by downloading it through the API (SHA-1 against the local source).
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, findPids, isMounted, killPid, lazyUnmount, run, sleep, waitFor } from './lib/proc.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist/cli/main.js');
const { values: opt } = parseArgs({
  options: {
    url: { type: 'string' },
    'files-url': { type: 'string' },
    user: { type: 'string' },
    'size-mib': { type: 'string', default: '1024' },
    'latency-ms': { type: 'string', default: '0' },
    modes: { type: 'string', default: 'blocks,whole' },
    jobs: { type: 'string', default: 'fresh,edit,append,cp,cut' },
    work: { type: 'string' },
  },
});
if (!opt.url || !opt.user || !process.env.BENCH_PASSWORD) {
  process.stderr.write('usage: BENCH_PASSWORD=... node bench/blocks.mjs --url URL --user EMAIL [options]\n');
  process.exit(2);
}
const MiB = 1024 * 1024;
const SIZE = Number(opt['size-mib']) * MiB;
const LATENCY = Number(opt['latency-ms']);
const log = (m) => process.stderr.write(`[blocks-bench] ${m}\n`);
const work = opt.work ?? mkdtempSync(join(tmpdir(), 'seafs-blocks-bench-'));
mkdirSync(work, { recursive: true });

// ---- the counting proxy ----
const counts = { api: 0, files: 0 };
/** bytes the server answered (downloads), by the same kinds */
const received = { api: 0, files: 0 };
let cutAt = Infinity; // reset every connection once the file server has received this many bytes
let cutDone = false;
const sockets = new Set();
const agents = [];
function listener(target, kind, rewrite) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  agents.push(agent); // its idle connections to the server would keep the bench from exiting
  const server = http.createServer((req, res) => {
    const go = () => {
      const up = http.request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
        (ans) => {
          const rk = req.url?.startsWith('/seafhttp/') ? 'files' : kind;
          ans.on('data', (d) => (received[rk] += d.length));
          if (!rewrite || !/json|text/.test(String(ans.headers['content-type'] ?? ''))) {
            res.writeHead(ans.statusCode ?? 502, ans.headers);
            ans.pipe(res);
            return;
          }
          const chunks = [];
          ans.on('data', (d) => chunks.push(d));
          ans.on('end', () => {
            const body = Buffer.from(Buffer.concat(chunks).toString('utf8').split(rewrite.from).join(rewrite.to));
            const h = { ...ans.headers, 'content-length': String(body.length) };
            delete h['transfer-encoding'];
            res.writeHead(ans.statusCode ?? 502, h);
            res.end(body);
          });
        },
      );
      up.on('error', () => res.destroy());
      // a server with one origin (seafs serve) takes file transfers under /seafhttp/
      const k = req.url?.startsWith('/seafhttp/') ? 'files' : kind;
      req.on('data', (d) => {
        counts[k] += d.length;
        if (!cutDone && counts.files >= cutAt) {
          cutDone = true;
          log(`cutting every connection at ${(counts.files / MiB).toFixed(0)} MiB sent`);
          for (const s of sockets) s.destroy();
        }
      });
      req.pipe(up);
    };
    if (LATENCY > 0) setTimeout(go, LATENCY);
    else go();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r({ server, port: server.address().port })));
}
const filesTarget = opt['files-url'] ? new URL(opt['files-url']) : null;
const filesProxy = filesTarget ? await listener(filesTarget, 'files', null) : null;
const apiProxy = await listener(
  new URL(opt.url),
  'api',
  filesProxy ? { from: filesTarget.origin, to: `http://127.0.0.1:${filesProxy.port}` } : null,
);
const proxyUrl = `http://127.0.0.1:${apiProxy.port}`;
const sent = () => counts.api + counts.files;

// ---- the API (direct, not through the proxy) ----
async function api(method, path, form) {
  const res = await fetch(new URL(path, opt.url), {
    method,
    headers: {
      authorization: `Token ${token}`,
      ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    body: form ? new URLSearchParams(form).toString() : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}
const token = (
  await (
    await fetch(new URL('/api2/auth-token/', opt.url), {
      method: 'POST',
      body: new URLSearchParams({ username: opt.user, password: process.env.BENCH_PASSWORD }),
    })
  ).json()
).token;
if (!token) throw new Error('login failed');

async function remoteSha1(repo, path) {
  const link = await api('GET', `/api2/repos/${repo}/file/?p=${encodeURIComponent(path)}&reuse=1`);
  const res = await fetch(link);
  const h = createHash('sha1');
  for await (const c of res.body) h.update(c);
  return h.digest('hex');
}

// ---- local data: one random source file, sliced and patched with dd ----
const src = join(work, 'src.bin');
function makeSource(bytes) {
  const fd = openSync(src, 'w');
  for (let o = 0; o < bytes; o += 16 * MiB) writeSync(fd, randomBytes(Math.min(16 * MiB, bytes - o)));
  closeSync(fd);
}
async function localSha1(path, len) {
  const h = createHash('sha1');
  for await (const c of createReadStream(path, len === undefined ? {} : { start: 0, end: len - 1 })) h.update(c);
  return h.digest('hex');
}
// asynchronous: the proxy runs in this process and must go on answering meanwhile
const sh = (cmd) => run('bash', ['-c', cmd], { timeoutMs: 3_600_000, name: cmd.split(' ')[0] });

// ---- mounts ----
async function mount(mode, repoName) {
  const mnt = join(work, `mnt-${mode}-${Date.now()}`);
  const cache = join(work, `cache-${mode}-${Date.now()}`);
  mkdirSync(mnt);
  const env = {
    SEAFS_PASSWORD: process.env.BENCH_PASSWORD,
    SEAFS_RUNTIME_DIR: join(work, 'run'),
    SEAFS_BLOCK_UPLOADS: mode === 'whole' ? 'off' : '8',
    SEAFS_BLOCK_READS: mode === 'whole' ? 'off' : '16',
  };
  await run(
    process.execPath,
    [
      CLI,
      'mount',
      proxyUrl,
      mnt,
      '--library',
      repoName,
      '--user',
      opt.user,
      '--daemon',
      '--cache-dir',
      cache,
      '--dir-cache-time',
      '2',
    ],
    { env, timeoutMs: 60_000, name: 'seafs mount' },
  );
  await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'the mount' });
  const pid = findPids(mnt)[0];
  const status = async () =>
    JSON.parse((await run(process.execPath, [CLI, 'status', '--json', mnt], { env, timeoutMs: 30_000 })).stdout)[0];
  return {
    mnt,
    pid,
    status,
    /** waits until nothing is pending; returns the ms it waited */
    async settled() {
      const t0 = Date.now();
      for (;;) {
        const st = await status();
        if ((st.queue ?? st.pending).length === 0) return Date.now() - t0;
        await sleep(250);
      }
    },
    async close() {
      await run(process.execPath, [CLI, 'unmount', mnt], { env, timeoutMs: 600_000 }).catch(() => {});
      lazyUnmount(mnt);
      if (pid) await killPid(pid, 5000);
      rmSync(cache, { recursive: true, force: true });
      rmSync(mnt, { recursive: true, force: true });
    },
  };
}

async function library(name) {
  const r = await api('POST', '/api2/repos/', { name });
  return r.repo_id;
}

// ---- jobs ----
const results = [];
const row = (job, mode, fields) => {
  results.push({ job, mode, ...fields });
  log(`${job} ${mode}: ${JSON.stringify(fields)}`);
};
const checks = [];

async function job(name, mode, fn) {
  const libName = `bench-${name}-${mode}-${Date.now()}`;
  const repo = await library(libName);
  const m = await mount(mode, libName);
  try {
    await fn(m, repo);
    // every file written is read back through the API
    for (const [r, path, want] of checks.splice(0)) {
      const got = await remoteSha1(r, path);
      if (got !== want) throw new Error(`${name} ${mode}: ${path} on the server is not what was written`);
      log(`${name} ${mode}: ${path} checked through the API`);
    }
  } finally {
    await m.close();
    await api('DELETE', `/api2/repos/${repo}/`).catch(() => {});
  }
}

/** a file of SIZE on the server through the mount (the starting point of edit, append and cp) */
async function seeded(m) {
  await sh(`dd if=${src} of=${m.mnt}/f.bin bs=8M count=${SIZE / (8 * MiB)} status=none`);
  await m.settled();
}

/** `len` bytes of the source from `from` */
function sourceBytes(from, len) {
  const fd = openSync(src, 'r');
  const buf = Buffer.allocUnsafe(len);
  for (let o = 0; o < len;) o += readSync(fd, buf, o, len - o, from + o);
  closeSync(fd);
  return buf;
}

/** `data` as /f.bin of `repo`, uploaded by the API (another client), replacing what is there */
async function uploadDirect(repo, data) {
  const link = await api('GET', `/api2/repos/${repo}/upload-link/?p=/`);
  const form = new FormData();
  form.append('file', new Blob([data]), 'f.bin');
  form.append('parent_dir', '/');
  form.append('replace', '1');
  const res = await fetch(`${link}?ret-json=1`, {
    method: 'POST',
    headers: { authorization: `Token ${token}` },
    body: form,
  });
  if (!res.ok) throw new Error(`upload: ${res.status} ${await res.text()}`);
}

const jobs = {
  async fresh(mode) {
    await job('fresh', mode, async (m, repo) => {
      const c0 = cpuSeconds(m.pid);
      const b0 = sent();
      const t0 = Date.now();
      await sh(`dd if=${src} of=${m.mnt}/f.bin bs=1M count=${SIZE / MiB} status=none`);
      await m.settled();
      const ms = Date.now() - t0;
      const cpu = cpuSeconds(m.pid) - c0;
      const st = await m.status();
      row('fresh', mode, {
        ...(mode === 'blocks'
          ? { hashedMiB: Math.round((st.blocks?.hashedBytes ?? 0) / MiB), blockStats: st.blocks }
          : {}),
        MBps: +(SIZE / MiB / (ms / 1000)).toFixed(1),
        cpuPerGiB: +((cpu * 1024 * MiB) / SIZE).toFixed(2),
        sentMiB: +((sent() - b0) / MiB).toFixed(1),
      });
      checks.push([repo, '/f.bin', await localSha1(src, SIZE)]);
    });
  },
  async edit(mode) {
    await job('edit', mode, async (m, repo) => {
      await seeded(m);
      const b0 = sent();
      const t0 = Date.now();
      // 1 MiB of other bytes written in the middle (from the source's second half, past SIZE)
      await sh(
        `dd if=${src} of=${m.mnt}/f.bin bs=1M count=1 skip=${SIZE / MiB} seek=${SIZE / MiB / 2} conv=notrunc status=none`,
      );
      await m.settled();
      row('edit 1 MiB in the middle', mode, {
        sentMiB: +((sent() - b0) / MiB).toFixed(2),
        untilOnServerMs: Date.now() - t0,
      });
      await sh(
        `cp ${src} ${work}/expect.bin && truncate -s ${SIZE} ${work}/expect.bin && dd if=${src} of=${work}/expect.bin bs=1M count=1 skip=${SIZE / MiB} seek=${SIZE / MiB / 2} conv=notrunc status=none`,
      );
      checks.push([repo, '/f.bin', await localSha1(`${work}/expect.bin`)]);
    });
  },
  async append(mode) {
    await job('append', mode, async (m, repo) => {
      await seeded(m);
      const b0 = sent();
      const t0 = Date.now();
      await sh(`dd if=${src} of=${m.mnt}/f.bin bs=1M count=1 skip=${SIZE / MiB} oflag=append conv=notrunc status=none`);
      await m.settled();
      row('append 1 MiB', mode, { sentMiB: +((sent() - b0) / MiB).toFixed(2), untilOnServerMs: Date.now() - t0 });
      checks.push([repo, '/f.bin', await localSha1(src, SIZE + MiB)]);
    });
  },
  async cp(mode) {
    await job('cp', mode, async (m, repo) => {
      await seeded(m);
      // a fresh mount: the copy reads the file from the server, not from the writer's local data
      const b0 = sent();
      const t0 = Date.now();
      await sh(`cp ${m.mnt}/f.bin ${m.mnt}/copy.bin`);
      await m.settled();
      row('cp inside the drive', mode, {
        sentMiB: +((sent() - b0) / MiB).toFixed(2),
        untilOnServerMs: Date.now() - t0,
      });
      checks.push([repo, '/copy.bin', await localSha1(src, SIZE)]);
    });
  },
  async reread(mode) {
    await job('reread', mode, async (m, repo) => {
      const first = sourceBytes(0, SIZE);
      await uploadDirect(repo, first);
      await sh(`cat ${m.mnt}/f.bin > /dev/null`);
      await sleep(3000); // the disk cache writes and indexes what came (in the background)
      // another client rewrites 1 MiB in the middle: one 8 MiB block of the server's cut changes
      const next = Buffer.from(first);
      sourceBytes(SIZE, MiB).copy(next, SIZE / 2);
      await uploadDirect(repo, next);
      const id = (await api('GET', `/api2/repos/${repo}/file/detail/?p=/f.bin`)).id;
      const seen = async () =>
        (await sh(`getfattr --only-values -n user.seafile.id ${m.mnt}/f.bin 2>/dev/null || true`)).stdout === id;
      await waitFor(seen, { timeoutMs: 30_000, what: 'the new version in the mount' });
      await sh('sync; echo 3 > /proc/sys/vm/drop_caches || true');
      const d0 = received.files;
      const t0 = Date.now();
      const sum = (await sh(`sha1sum < ${m.mnt}/f.bin`)).stdout.split(' ')[0];
      const ms = Date.now() - t0;
      const want = createHash('sha1').update(next).digest('hex');
      if (sum !== want) throw new Error('reread: other bytes through the mount than the API has');
      row('reread after a one-block change by another client', mode, {
        downloadedMiB: +((received.files - d0) / MiB).toFixed(2),
        fileMiB: SIZE / MiB,
        ms,
      });
      checks.push([repo, '/f.bin', want]);
    });
  },
  async cut(mode) {
    await job('cut', mode, async (m, repo) => {
      const size = 2 * SIZE;
      const b0 = counts.files;
      cutDone = false;
      cutAt = b0 + 0.6 * size;
      await sh(`dd if=${src} of=${m.mnt}/f.bin bs=1M count=${size / MiB} status=none`);
      await m.settled();
      cutAt = Infinity;
      const after = counts.files - b0 - 0.6 * size;
      row('2x upload cut at 60%', mode, {
        cut: cutDone,
        sentAfterCutPct: +((100 * after) / size).toFixed(1),
        totalSentMiB: +((counts.files - b0) / MiB).toFixed(1),
      });
      checks.push([repo, '/f.bin', await localSha1(src, size)]);
    });
  },
};

try {
  log(`work dir ${work}; file size ${SIZE / MiB} MiB; latency ${LATENCY} ms`);
  makeSource(2 * SIZE + 2 * MiB);
  for (const j of opt.jobs.split(',')) for (const mode of opt.modes.split(',')) await jobs[j](mode);
} finally {
  apiProxy.server.close();
  filesProxy?.server.close();
  for (const s of sockets) s.destroy();
  for (const a of agents) a.destroy();
}
process.stdout.write(`\nuploads by blocks vs whole (file ${SIZE / MiB} MiB, latency ${LATENCY} ms, ${opt.url})\n`);
for (const r of results)
  process.stdout.write(
    `${r.job.padEnd(28)} ${r.mode.padEnd(7)} ${JSON.stringify({ ...r, job: undefined, mode: undefined })}\n`,
  );
rmSync(work, { recursive: true, force: true });
