// What the bench's ls job costs, call by call: the server's requests (its --verbose log) and the calls into
// the mount (`seafs status --json`) of a cold and a warm `ls -lR` of the listing tree, each variant on a
// fresh mount, the variants taken in turn (issue 15's 80 ms row). Timings are printed too, for what they
// are worth on a shared machine. Run from the checkout, after `npm run build`:
//   TRACE_VARIANTS='@/work/main;;--attr-timeout 2' TRACE_ROUNDS=3 node bench/trace-ls.mjs WORKDIR [LATENCY] [FOLDERS] [FILES] [GAP_MS]
// A variant is extra mount options; one starting with @DIR mounts with DIR's build (before and after).
// GAP_MS: a pause between the cold and the warm pass. WORKDIR is left in place (the server's data and log).
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { mountArgs, startServer } from './lib/server.mjs';
import { pool } from './lib/api.mjs';
import { treeLayout, contentFor } from './lib/dataset.mjs';
import { run, sleep, waitFor, isMounted, killPid, findPids } from './lib/proc.mjs';

const [work, latency = '80', folders = '500', files = '10000', gapMs = '0'] = process.argv.slice(2);
const root = resolve(work);
mkdirSync(root, { recursive: true });
const cli = resolve('dist/cli/main.js');
const log = (m) => process.stderr.write(`[trace] ${m}\n`);
const server = await startServer({ root, cli, latencyMs: Number(latency), log, extraArgs: ['--verbose'] });
const serverLog = join(root, `server-${latency}ms.log`);
const logLines = () => readFileSync(serverLog, 'utf8').split('\n').filter(Boolean);
const { api, repo } = server;
const layout = treeLayout(Number(folders), Number(files));
const byFolder = new Map();
layout.forEach((f, i) => {
  if (!byFolder.has(f.folder)) byFolder.set(f.folder, []);
  byFolder.get(f.folder).push({ name: f.name, data: contentFor(i, f.size) });
});
await pool([...byFolder], 8, async ([folder, fs]) => {
  const dir = `/tree/${folder}`;
  await api.mkdir(repo, dir);
  await api.upload(await api.uploadLink(repo, dir), dir, fs);
});
log('seeded');
const env = { ...process.env, SEAFS_PASSWORD: server.user.password, SEAFS_RUNTIME_DIR: join(root, 'run') };
const variants = (process.env.TRACE_VARIANTS ?? '').split(';');
const rounds = Number(process.env.TRACE_ROUNDS ?? 1);
const diff = (a, b) => {
  const o = {};
  for (const k of new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])) {
    const d = (b?.[k] ?? 0) - (a?.[k] ?? 0);
    if (typeof d === 'number' && d) o[k] = d;
  }
  return o;
};
const results = {};
let n = 0;
const mounted = [];
try {
  for (let round = 0; round < rounds; round++)
    for (const variant of variants) {
      const mnt = join(root, `mnt${n++}`);
      mkdirSync(mnt, { recursive: true });
      mounted.push(mnt);
      const words = variant.split(' ').filter(Boolean);
      const vcli = words[0]?.startsWith('@') ? resolve(words.shift().slice(1), 'dist/cli/main.js') : cli;
      const extra = words;
      await run(
        process.execPath,
        mountArgs(vcli, server, mnt, '--daemon', '--cache-dir', join(root, `cache${n}`), ...extra),
        { env, timeoutMs: 60_000 },
      );
      await waitFor(() => isMounted(mnt), { timeoutMs: 30_000, what: 'mount' });
      const status = async () =>
        JSON.parse((await run(process.execPath, [cli, 'status', '--json', mnt], { env })).stdout)[0];
      let s0 = await status();
      for (const phase of ['cold', 'warm']) {
        if (phase !== 'cold' && Number(gapMs)) await sleep(Number(gapMs));
        const before = logLines().length;
        const t0 = Date.now();
        const r = await run('ls', ['-lR', join(mnt, 'tree')], { keepStdout: true, timeoutMs: 600_000 });
        const listed = r.stdout.split('\n').filter((l) => l.startsWith('-')).length;
        if (listed !== Number(files)) throw new Error(`${phase}: ls saw ${listed} files, want ${files}`);
        const ms = Date.now() - t0;
        const s1 = await status();
        const reqs = logLines().slice(before);
        const kinds = {};
        for (const l of reqs) {
          const k = l
            .replace(/\?.*$/, '')
            .replace(/[0-9a-f-]{36}/g, 'R')
            .slice(0, 80);
          kinds[k] = (kinds[k] ?? 0) + 1;
        }
        console.log(
          `[${variant}] ${phase} ${ms} ms ops ${JSON.stringify(diff(s0.ops, s1.ops))} meta ${JSON.stringify(diff(s0.meta, s1.meta))} server ${JSON.stringify(kinds)}`,
        );
        (results[`${variant} ${phase}`] ??= []).push(ms);
        s0 = s1;
      }
      await run(process.execPath, [cli, 'unmount', mnt], { env, timeoutMs: 120_000 }).catch((e) => log(e.message));
    }
  for (const [k, v] of Object.entries(results)) {
    const s = [...v].sort((a, b) => a - b);
    console.log(`median ${k}: ${s[Math.floor(s.length / 2)]} ms of ${v.join(', ')}`);
  }
} finally {
  for (const mnt of mounted) {
    if (isMounted(mnt))
      await run(process.execPath, [cli, 'unmount', mnt], { env, timeoutMs: 120_000 }).catch((e) => log(e.message));
    for (const pid of findPids(mnt)) await killPid(pid);
  }
  await server.stop();
}
