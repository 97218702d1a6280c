// Starts one `seafs serve` with a fresh data dir, creates the benchmark user and library, and seeds the data
// every contender reads: the big file and the listing tree (uploaded through the API, never through a mount).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Api, pool } from './api.mjs';
import { run, startProcess, killPid } from './proc.mjs';
import { treeLayout, contentFor } from './dataset.mjs';

export const ADMIN = { email: 'admin@bench.local', password: 'bench-admin-pw' };
export const USER = { email: 'bench@bench.local', password: 'bench-user-pw' };
export const LIBRARY = 'Bench';

export async function startServer({ root, cli, latencyMs, log, onDeath = () => {}, extraArgs = [] }) {
  const data = join(root, `server-${latencyMs}ms`);
  mkdirSync(data, { recursive: true });
  // BENCH_SERVER_CPU_PROF=DIR: the server runs under node --cpu-prof (its profile lands in DIR when it stops)
  const prof = process.env.BENCH_SERVER_CPU_PROF;
  const args = [
    ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []),
    cli,
    'serve',
    '--data',
    data,
    '--port',
    '0',
    '--admin-email',
    ADMIN.email,
  ];
  if (latencyMs) args.push('--latency-ms', String(latencyMs));
  args.push(...extraArgs);
  const { child, value } = await startProcess(process.execPath, args, {
    env: { SEAFS_ADMIN_PASSWORD: ADMIN.password }, // kept out of argv
    ready: (out) => /listening on (http:\/\/\S+)/.exec(out)?.[1],
    logFile: join(root, `server-${latencyMs}ms.log`),
  });
  const url = value.replace(/\/+$/, '');
  log(`server (${latencyMs} ms) pid ${child.pid} at ${url}`);
  // A server that dies mid-run would leave mounts retrying for the whole timeout: say so at once.
  const state = { stopping: false, dead: null };
  child.on('exit', (code, signal) => {
    if (state.stopping) return;
    state.dead = `seafs serve (pid ${child.pid}) died unexpectedly (${signal ?? `exit ${code}`})`;
    log(state.dead);
    onDeath(state.dead);
  });

  const admin = new Api(url);
  await admin.login(ADMIN.email, ADMIN.password);
  let user = USER;
  try {
    await admin.createUser(USER.email, USER.password);
  } catch (err) {
    log(`cannot create a user (${err.message}); benchmarking as the admin`);
    user = ADMIN;
  }
  const api = new Api(url);
  await api.login(user.email, user.password);
  const repo = await api.createRepo(LIBRARY);
  return {
    url,
    pid: child.pid,
    dataDir: data,
    latencyMs,
    api,
    repo,
    user,
    library: LIBRARY,
    get dead() {
      return state.dead;
    },
    stop: () => {
      state.stopping = true;
      return killPid(child.pid);
    },
  };
}

/** Upload the local file `src` as `/big.bin`, then the listing tree under `/tree`, and check both. */
export async function seed(server, { src, bigBytes, treeFolders, treeFiles, log }) {
  const { api, repo } = server;
  const t0 = Date.now();
  const link = await api.uploadLink(repo, '/');
  await run(
    'curl',
    ['-sS', '--fail-with-body', '-F', `file=@${src};filename=big.bin`, '-F', 'parent_dir=/', '-F', 'replace=1', link],
    {
      timeoutMs: 900_000,
    },
  );
  const size = await api.fileSize(repo, '/big.bin');
  if (size !== bigBytes) throw new Error(`seeding /big.bin: server has ${size} bytes, want ${bigBytes}`);

  const layout = treeLayout(treeFolders, treeFiles);
  const byFolder = new Map();
  layout.forEach((f, i) => {
    if (!byFolder.has(f.folder)) byFolder.set(f.folder, []);
    byFolder.get(f.folder).push({ name: f.name, data: contentFor(i, f.size) });
  });
  await pool([...byFolder], 8, async ([folder, files]) => {
    const dir = `/tree/${folder}`;
    await api.mkdir(repo, dir);
    const l = await api.uploadLink(repo, dir);
    await api.upload(l, dir, files);
  });
  const { files } = await api.walk(repo, '/tree', 16);
  if (files.length !== treeFiles)
    throw new Error(`seeding /tree: server lists ${files.length} files, want ${treeFiles}`);
  await api.mkdir(repo, '/w');
  await api.mkdir(repo, '/x');
  log(
    `seeded ${bigBytes >> 20} MiB file and ${treeFiles} files in ${treeFolders} folders in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  return layout;
}

/** node arguments of `seafs mount` for the benchmark server's library and user, then `rest` (options) */
export function mountArgs(cli, server, mnt, ...rest) {
  return [cli, 'mount', server.url, mnt, '--library', server.library, '--user', server.user.email, ...rest];
}
