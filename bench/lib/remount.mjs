// The remount job (issue 15, target 1): read the big file through a fresh mount, unmount, drop the page cache,
// mount again on the same cache dir and read it again. The mounts talk to the server through a proxy that counts
// the file server's bytes, so "downloaded on the second read" is counted outside the mount. memfs has nothing to
// remount: its figure is a cold read after a drop, the bar the issue sets. Also reported (JSON diagnostics): the
// first read's rate and the mount process' CPU seconds per GiB on both reads (utime + stime from /proc). seafs
// mounts with --cache-streams: by default it keeps streamed files only up to 256 MiB, and the file here is larger.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { dropCaches, primeServerDisk, run } from './proc.mjs';

const now = () => Number(process.hrtime.bigint()) / 1e6;
const mbps = (bytes, ms) => bytes / 1e6 / (ms / 1000);
const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100;

async function ddRead(file, expected, timeoutMs) {
  const t0 = now();
  const r = await run('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M'], { timeoutMs });
  const bytes = Number(/^(\d+) bytes/m.exec(r.stderr)?.[1]);
  if (bytes !== expected) throw new Error(`read ${bytes} bytes, want ${expected}`);
  return now() - t0;
}

/** utime + stime of a process, seconds (null when it cannot be read) */
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return null;
  }
}

/**
 * A forwarding proxy that counts the body bytes of the file server's answers
 * (/seafhttp/). `uploadRate` (bytes/s, all connections together) holds
 * request bodies to that rate: a slow uplink.
 */
export function countingProxy(target, { uploadRate = 0 } = {}) {
  const t = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const counts = { downloadBytes: 0 };
  let budgetAt = Date.now(); // when the body bytes taken so far may have gone at uploadRate
  const server = http.createServer((req, res) => {
    const up = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers, agent },
      (ans) => {
        res.writeHead(ans.statusCode ?? 502, ans.headers);
        if (req.url?.startsWith('/seafhttp/')) ans.on('data', (d) => (counts.downloadBytes += d.length));
        ans.pipe(res);
        ans.on('error', () => res.destroy());
      },
    );
    up.on('error', () => res.destroy());
    if (uploadRate <= 0) {
      req.pipe(up);
      return;
    }
    req.on('data', (d) => {
      budgetAt = Math.max(budgetAt, Date.now()) + (d.length / uploadRate) * 1000;
      if (!up.write(d) || budgetAt - Date.now() > 5) {
        req.pause();
        const go = () => setTimeout(() => req.resume(), Math.max(0, budgetAt - Date.now()));
        if (up.writableNeedDrain) up.once('drain', go);
        else go();
      }
    });
    req.on('end', () => up.end());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        counts,
        close: () => {
          server.closeAllConnections();
          agent.destroy();
          return new Promise((r) => server.close(r));
        },
      }),
    ),
  );
}

/** seafs' own counters: MiB its disk cache wrote and skipped (the disk fell behind), MiB it downloaded, GETs */
async function seafsDisk(ctx, mnt) {
  try {
    const r = await run(process.execPath, [ctx.cli, 'status', mnt, '--json'], {
      env: { SEAFS_RUNTIME_DIR: join(ctx.work, 'run') },
      timeoutMs: 10_000,
    });
    const { disk, reader } = JSON.parse(r.stdout)[0];
    return {
      written: disk.writtenBytes / 2 ** 20,
      skipped: disk.skippedBytes / 2 ** 20,
      fetched: reader.bytesFetched / 2 ** 20,
      streams: reader.streams,
      ranges: reader.rangeRequests,
    };
  } catch {
    return {};
  }
}

export async function remountJob(contender, ctx) {
  const { config: c, server, fixtures } = ctx;
  const big = (h) => join(h.path, 'big.bin');
  const perGiB = (a, b) => (a === null || b === null ? undefined : (b - a) / (c.bigBytes / 2 ** 30));
  if (contender.memfs) {
    const h = await contender.mount(ctx, 'read');
    try {
      dropCaches();
      return { read_remount: mbps(c.bigBytes, await ddRead(big(h), c.bigBytes, ctx.timeoutMs)) };
    } finally {
      await h.close();
    }
  }
  const proxy = await countingProxy(server.url);
  mkdirSync(join(ctx.work, 'cache'), { recursive: true });
  const cacheDir = mkdtempSync(join(ctx.work, 'cache', `remount-${contender.name}-`));
  const via = { ...ctx, server: { ...server, url: proxy.url } };
  const out = {};
  try {
    primeServerDisk(server.dataDir);
    dropCaches();
    let h = await contender.mount(via, 'read', { cacheDir, seafsArgs: ['--cache-streams'] });
    try {
      const cpu0 = cpuSeconds(h.pid);
      out.x_remount_first_mbps = mbps(c.bigBytes, await ddRead(big(h), c.bigBytes, ctx.timeoutMs));
      const cpu = perGiB(cpu0, cpuSeconds(h.pid));
      if (cpu !== undefined) out.x_remount_first_cpu_s_per_gib = cpu;
      if (contender.name === 'seafs') {
        const d = await seafsDisk(ctx, h.path);
        out.x_cache_written_mib = d.written;
        out.x_cache_skipped_mib = d.skipped;
      }
    } finally {
      await h.close();
    }
    const first = proxy.counts.downloadBytes;
    dropCaches();
    h = await contender.mount(via, 'read', { cacheDir, seafsArgs: ['--cache-streams'] });
    try {
      const cpu0 = cpuSeconds(h.pid);
      out.read_remount = mbps(c.bigBytes, await ddRead(big(h), c.bigBytes, ctx.timeoutMs));
      const cpu = perGiB(cpu0, cpuSeconds(h.pid));
      if (cpu !== undefined) out.x_remount_cpu_s_per_gib = cpu;
      out.remount_mib = (proxy.counts.downloadBytes - first) / 2 ** 20;
      if (contender.name === 'seafs') {
        const d = await seafsDisk(ctx, h.path);
        out.x_remount_fetched_by_mount_mib = d.fetched;
        out.x_remount_streams = d.streams;
        out.x_remount_ranges = d.ranges;
      }
      if (ctx.verify) await run('cmp', [big(h), fixtures.src], { timeoutMs: ctx.timeoutMs });
    } finally {
      await h.close();
    }
  } finally {
    await proxy.close();
    rmSync(cacheDir, { recursive: true, force: true });
  }
  return out;
}
