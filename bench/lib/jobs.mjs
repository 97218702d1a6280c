// The workloads. A job runs once for one contender and returns {metricId: value}; a throw marks every metric
// it did not return as FAILED for that run. Mount contenders share one implementation; direct HTTP has its own.
import { mkdirSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { agent, pool } from './api.mjs';
import { run, dropCaches, primeServerDisk, rssSampler, cpuMeter } from './proc.mjs';
import { randomOffsets } from './dataset.mjs';
import { BIGTREE_METRICS } from './bigtree.mjs';
import { remountJob } from './remount.mjs';

const RANDREAD = fileURLToPath(new URL('../randread.mjs', import.meta.url));
const now = () => Number(process.hrtime.bigint()) / 1e6;
const mbps = (bytes, ms) => bytes / 1e6 / (ms / 1000);

/**
 * Every metric, in table order. `better` says which direction wins; `notFor` names the contenders it does not
 * apply to (shown as n/a); `runs1` marks a job that runs once whatever --runs says (see bigtree.mjs).
 */
export function metrics(c) {
  const big = c.bigBytes >= 1 << 30 ? `${c.bigBytes / (1 << 30)} GiB` : `${c.bigBytes >> 20} MiB`;
  return [
    { id: 'read_cold', job: 'seqread', label: `seq read ${big}, cold`, unit: 'MB/s', better: 'higher' },
    { id: 'read_warm', job: 'seqread', label: `seq read ${big}, warm`, unit: 'MB/s', better: 'higher' },
    { id: 'write', job: 'write', label: `seq write ${big} to server`, unit: 'MB/s', better: 'higher' },
    { id: 'tar', job: 'tar', label: `untar ${c.smallFiles} small files to server`, unit: 's', better: 'lower' },
    { id: 'ls_cold', job: 'ls', label: `ls -lR ${c.treeFiles} files, cold`, unit: 's', better: 'lower' },
    { id: 'ls_warm', job: 'ls', label: `ls -lR ${c.treeFiles} files, warm`, unit: 's', better: 'lower' },
    { id: 'find_cold', job: 'find', label: `find -size +10k, cold`, unit: 's', better: 'lower' },
    { id: 'find_warm', job: 'find', label: `find -size +10k, warm`, unit: 's', better: 'lower' },
    {
      id: 'randread',
      job: 'randread',
      label: `${c.randomReads} random 4 KiB reads`,
      unit: 'reads/s',
      better: 'higher',
    },
    {
      id: 'read_remount',
      job: 'remount',
      label: `seq read ${big} after a remount (memfs: cold)`,
      unit: 'MB/s',
      better: 'higher',
    },
    { id: 'remount_mib', job: 'remount', label: `downloaded by that read`, unit: 'MiB', better: 'lower' },
    { id: 'rss_read', job: 'seqread', label: `peak RSS, ${big} read`, unit: 'MiB', better: 'lower' },
    { id: 'rss_write', job: 'write', label: `peak RSS, ${big} write`, unit: 'MiB', better: 'lower' },
    { id: 'rss_tar', job: 'tar', label: `peak RSS, untar`, unit: 'MiB', better: 'lower' },
    // CPU time of the mount process (user + system, /proc/PID/stat) per GiB moved: the cost per byte
    {
      id: 'cpu_read',
      job: 'seqread',
      // http: curl's own CPU to receive the file, the cost of the network part alone
      label: `mount CPU, ${big} cold read (http: curl's)`,
      unit: 'CPU-s/GiB',
      better: 'lower',
    },
    {
      id: 'cpu_write',
      job: 'write',
      label: `mount CPU, ${big} write`,
      unit: 'CPU-s/GiB',
      better: 'lower',
      notFor: ['http'],
    },
    ...BIGTREE_METRICS(c),
  ];
}
export const JOBS = ['seqread', 'write', 'tar', 'ls', 'find', 'randread', 'remount', 'bigtree'];

async function ddRead(file, expected, timeoutMs) {
  const r = await run('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M'], { timeoutMs });
  const bytes = Number(/^(\d+) bytes/m.exec(r.stderr)?.[1]);
  if (bytes !== expected) throw new Error(`read ${bytes} bytes, want ${expected}`);
  return r.ms;
}

/** Runs job `job` on a fresh mount of `contender`; `ctx` carries the server, config, fixtures and run id. */
export async function mountJob(job, contender, ctx) {
  const { config: c, server, fixtures, runId } = ctx;
  if (job === 'remount') return remountJob(contender, ctx);
  const mode = job === 'write' || job === 'tar' ? 'write' : 'read';
  const out = {};
  const h = await contender.mount(ctx, mode);
  try {
    const p = (rel) => join(h.path, rel);
    if (job === 'seqread') {
      primeServerDisk(server.dataDir);
      dropCaches();
      const rss = h.pid && !h.inMemory ? rssSampler(h.pid) : null;
      try {
        const cpu = h.pid ? cpuMeter(h.pid) : null;
        out.read_cold = mbps(c.bigBytes, await ddRead(p('big.bin'), c.bigBytes, ctx.timeoutMs));
        const used = cpu?.stop();
        if (used != null) out.cpu_read = used / (c.bigBytes / 2 ** 30);
        out.read_warm = mbps(c.bigBytes, await ddRead(p('big.bin'), c.bigBytes, ctx.timeoutMs));
      } finally {
        if (rss) out.rss_read = rss.stop();
      }
      // Correctness once per contender: a fast read of the wrong bytes is no win (untimed).
      if (ctx.verify && !h.inMemory) await run('cmp', [p('big.bin'), fixtures.src], { timeoutMs: ctx.timeoutMs });
    } else if (job === 'randread') {
      primeServerDisk(server.dataDir);
      dropCaches();
      const args = [RANDREAD, p('big.bin'), String(c.randomReads), '4096', '3'];
      if (!h.inMemory) args.push(fixtures.src);
      const r = JSON.parse((await run(process.execPath, args, { timeoutMs: ctx.timeoutMs, name: 'randread' })).stdout);
      out.randread = r.count / (r.ms / 1000);
    } else if (job === 'ls' || job === 'find') {
      const cmd =
        job === 'ls'
          ? ['ls', ['-lR', p('tree')]]
          : ['find', [p('tree'), '-type', 'f', '-size', `+${fixtures.findKiB}k`]];
      const want = job === 'ls' ? c.treeFiles : fixtures.findCount;
      const count = (r) =>
        job === 'ls' ? r.stdout.split('\n').filter((l) => l.startsWith('-')).length : r.stdoutLines;
      dropCaches();
      for (const phase of ['cold', 'warm']) {
        const r = await run(cmd[0], cmd[1], { timeoutMs: ctx.timeoutMs, keepStdout: job === 'ls' });
        const n = count(r);
        if (n !== want) throw new Error(`${phase}: ${job} saw ${n} files, want ${want}`);
        out[`${job}_${phase}`] = r.ms / 1000;
      }
    } else if (job === 'write') {
      const name = `w-${runId}.bin`;
      mkdirSync(p('w'), { recursive: true });
      await run('cat', [fixtures.src], { keepStdout: false }); // source in the page cache: time the mount, not the disk
      const rss = h.pid && !h.inMemory ? rssSampler(h.pid) : null;
      // until the data is on the server: seafs's process ends at its unmount, the meter keeps its last sample
      const cpu = h.pid ? cpuMeter(h.pid) : null;
      try {
        const t0 = now();
        await run('dd', [`if=${fixtures.src}`, `of=${p(`w/${name}`)}`, 'bs=1M'], { timeoutMs: ctx.timeoutMs });
        const t1 = now();
        await h.settle(async () => (await server.api.fileSize(server.repo, `/w/${name}`)) === c.bigBytes, `/w/${name}`);
        out.write = mbps(c.bigBytes, now() - t0);
        const used = cpu?.stop();
        if (used != null) out.cpu_write = used / (c.bigBytes / 2 ** 30);
        // Diagnostics (JSON only): time in dd, and time after close until the server had it.
        out.x_write_copy_s = (t1 - t0) / 1000;
        out.x_write_settle_s = (now() - t1) / 1000;
      } finally {
        cpu?.stop();
        if (rss) out.rss_write = rss.stop();
        if (!h.inMemory) await server.api.deletePath(server.repo, `/w/${name}`);
      }
    } else if (job === 'tar') {
      const dir = `x/t-${runId}`;
      await run('cat', [fixtures.tarball], { keepStdout: false });
      mkdirSync(p(dir), { recursive: true });
      const rss = h.pid && !h.inMemory ? rssSampler(h.pid) : null;
      try {
        const t0 = now();
        await run('tar', ['-xf', fixtures.tarball, '--no-same-owner', '-C', p(dir)], { timeoutMs: ctx.timeoutMs });
        const t1 = now();
        await h.settle(
          async () => (await server.api.countFiles(server.repo, `/${dir}`)) === c.smallFiles,
          `${c.smallFiles} files in /${dir}`,
        );
        out.tar = (now() - t0) / 1000;
        out.x_tar_extract_s = (t1 - t0) / 1000;
        out.x_tar_settle_s = (now() - t1) / 1000;
      } finally {
        if (rss) out.rss_tar = rss.stop();
        if (!h.inMemory) await server.api.deletePath(server.repo, `/${dir}`);
      }
    }
  } finally {
    // A failing unmount must not hide the workload's own error, nor void a finished measurement.
    await h
      .close()
      .catch((err) => process.stderr.write(`bench: ${contender.name}: unmount after ${job} failed: ${err.message}\n`));
  }
  return out;
}

/** Direct HTTP: the same work through the API and file server, no FUSE (the network's limit). */
/** seconds of user + system CPU in a line of bash's `times` ("0m0.038s 0m0.172s"); null if it is not one */
function childCpu(line) {
  const m = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(line?.trim() ?? '');
  return m ? Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]) : null;
}

export async function httpJob(job, ctx) {
  const { config: c, server, fixtures, runId } = ctx;
  const { api, repo } = server;
  const out = {};
  if (job === 'seqread') {
    primeServerDisk(server.dataDir);
    dropCaches();
    for (const phase of ['cold', 'warm']) {
      const t0 = now();
      const link = await api.downloadLink(repo, '/big.bin');
      // bash's `times` after curl: the CPU curl used (user and system, its second line)
      const r = await run(
        'bash',
        ['-c', 'curl -sS --fail -o /dev/null -w "%{size_download}\\n" "$1"; times', 'curl', link],
        { timeoutMs: ctx.timeoutMs },
      );
      const ms = now() - t0;
      const [size, , children] = r.stdout.trim().split('\n');
      if (Number(size) !== c.bigBytes) throw new Error(`downloaded ${size} bytes, want ${c.bigBytes}`);
      out[`read_${phase}`] = mbps(c.bigBytes, ms);
      const cpu = childCpu(children);
      if (phase === 'cold' && cpu != null) out.cpu_read = cpu / (c.bigBytes / 2 ** 30);
    }
  } else if (job === 'write') {
    const name = `w-${runId}.bin`;
    await run('cat', [fixtures.src], { keepStdout: false });
    try {
      const t0 = now();
      const link = await api.uploadLink(repo, '/w');
      await run(
        'curl',
        [
          '-sS',
          '--fail',
          '-o',
          '/dev/null',
          '-F',
          `file=@${fixtures.src};filename=${name}`,
          '-F',
          'parent_dir=/w',
          '-F',
          'replace=1',
          link,
        ],
        { timeoutMs: ctx.timeoutMs },
      );
      const ms = now() - t0;
      const size = await api.fileSize(repo, `/w/${name}`);
      if (size !== c.bigBytes) throw new Error(`server has ${size} bytes, want ${c.bigBytes}`);
      out.write = mbps(c.bigBytes, ms);
    } finally {
      await api.deletePath(repo, `/w/${name}`);
    }
  } else if (job === 'tar') {
    // Files batched per folder, 25 per multipart request, 8 requests in flight: the best a client can do.
    const dir = `/x/h-${runId}`;
    try {
      const t0 = now();
      const folders = [...new Set(fixtures.small.map((f) => f.folder))];
      const links = new Map();
      await pool(folders, 8, async (f) => {
        await api.mkdir(repo, `${dir}/${f}`);
        links.set(f, await api.uploadLink(repo, `${dir}/${f}`));
      });
      const batches = [];
      fixtures.small.forEach((f, i) => {
        const last = batches[batches.length - 1];
        const item = { name: f.name, data: fixtures.smallData(i) };
        if (last && last.folder === f.folder && last.files.length < 25) last.files.push(item);
        else batches.push({ folder: f.folder, files: [item] });
      });
      await pool(batches, 8, (b) => api.upload(links.get(b.folder), `${dir}/${b.folder}`, b.files));
      out.tar = (now() - t0) / 1000;
      const n = await api.countFiles(repo, dir);
      if (n !== c.smallFiles) throw new Error(`server lists ${n} files, want ${c.smallFiles}`);
    } finally {
      await api.deletePath(repo, dir);
    }
  } else if (job === 'ls' || job === 'find') {
    // Listing every folder, 8 at a time; sizes come with the listing, so ls and find cost the same.
    dropCaches();
    const t0 = now();
    const { files } = await api.walk(repo, '/tree', 8);
    const ms = now() - t0;
    const n = job === 'ls' ? files.length : files.filter((f) => Math.ceil(f.size / 1024) > fixtures.findKiB).length;
    const want = job === 'ls' ? c.treeFiles : fixtures.findCount;
    if (n !== want) throw new Error(`listed ${n} files, want ${want}`);
    out[`${job}_cold`] = ms / 1000;
  } else if (job === 'randread') {
    primeServerDisk(server.dataDir);
    dropCaches();
    const link = await api.downloadLink(repo, '/big.bin', true);
    const offsets = randomOffsets(c.bigBytes, c.randomReads, 4096, 3);
    const got = [];
    const t0 = now();
    for (const off of offsets) {
      const res = await request(link, { headers: { range: `bytes=${off}-${off + 4095}` }, dispatcher: agent });
      const buf = Buffer.from(await res.body.arrayBuffer());
      if (res.statusCode !== 206 || buf.length !== 4096)
        throw new Error(`range at ${off}: ${res.statusCode}, ${buf.length} bytes`);
      got.push(buf);
    }
    const ms = now() - t0;
    const fd = openSync(fixtures.src, 'r');
    const want = Buffer.alloc(4096);
    try {
      offsets.forEach((off, i) => {
        readSync(fd, want, 0, 4096, off);
        if (!want.equals(got[i])) throw new Error(`wrong data at offset ${off}`);
      });
    } finally {
      closeSync(fd);
    }
    out.randread = offsets.length / (ms / 1000);
  }
  return out;
}

export const httpContender = { name: 'http', http: true };
