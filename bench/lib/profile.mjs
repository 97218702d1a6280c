// The common part of the profilers (profile-read, profile-tar, memmap): a local
// server seeded with one file, a seafs mount of its library started with node
// flags of the profiler's choice, and its orderly end.
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { mountArgs, startServer, seed } from './server.mjs';
import { randomFile } from './dataset.mjs';
import { isMounted, lazyUnmount, run, spawnBackground, trackMount, waitFor } from './proc.mjs';

/**
 * A server under `out` whose library holds `big.bin` of `mib` MiB (the source stays as out/src.bin),
 * the mount point out/mnt, and the environment a mount of it and `seafs` commands need.
 */
export async function seededServer({ out, cli, mib, latencyMs = 0, log }) {
  const src = join(out, 'src.bin');
  await randomFile(src, mib << 20);
  const server = await startServer({ root: out, cli, latencyMs, log });
  await seed(server, { src, bigBytes: mib << 20, treeFolders: 1, treeFiles: 1, log });
  const mnt = join(out, 'mnt');
  mkdirSync(mnt, { recursive: true });
  trackMount(mnt);
  const env = { SEAFS_PASSWORD: server.user.password, SEAFS_RUNTIME_DIR: join(out, 'run') };
  return { server, src, mnt, env };
}

/** `seafs mount` of the server's library at `mnt` (cache in out/cache), node flags first; resolves once mounted */
export async function startMount({ cli, server, mnt, out, env, node = [], options = [] }) {
  const child = spawnBackground(
    process.execPath,
    [...node, ...mountArgs(cli, server, mnt, '--cache-dir', join(out, 'cache'), ...options)],
    { env, logFile: join(out, 'mount.log') },
  );
  await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'the mount' });
  return child;
}

/** the mount's `seafs status --json` */
export async function mountStatus(cli, mnt, env) {
  return JSON.parse((await run(process.execPath, [cli, 'status', '--json', mnt], { env })).stdout)[0];
}

/** `seafs unmount` (it waits for the uploads), then the mount process's exit */
export async function stopMount({ cli, mnt, env, child, timeoutMs = 600_000 }) {
  await run(process.execPath, [cli, 'unmount', mnt], { env, timeoutMs });
  await waitFor(() => child.exitCode !== null, { timeoutMs: 60_000, what: 'the mount to exit' });
  lazyUnmount(mnt);
}

/**
 * Self time per function (µs) from the newest .cpuprofile in `dir`, counting
 * only the samples taken between w0 and w1 (the profile's µs clock), and
 * their sum. A function is named `name file:line`.
 */
export function selfTimes(dir, w0, w1) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const p = JSON.parse(readFileSync(join(dir, files[files.length - 1]), 'utf8'));
  const dt = new Map();
  let at = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    at += p.timeDeltas[i] ?? 0;
    if (at >= w0 && at <= w1) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const self = new Map();
  let total = 0;
  for (const n of p.nodes) {
    const t = dt.get(n.id) ?? 0;
    total += t;
    const cf = n.callFrame;
    const k = `${cf.functionName || '(anon)'} ${cf.url.replace(/.*\/(node_modules|dist)\//, '$1/')}:${cf.lineNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + t);
  }
  return { self, total, files: files.map((f) => join(dir, f)) };
}
