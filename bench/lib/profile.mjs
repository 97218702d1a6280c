// The common part of the profilers (profile-read, profile-tar, memmap): a local
// server seeded with one file, a seafs mount of its library started with node
// flags of the profiler's choice, and its orderly end.
import { mkdirSync } from 'node:fs';
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
