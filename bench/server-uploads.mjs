// Small-file uploads straight to `seafs serve` (no mount): 2,000 files of 1-65 KiB in 100 multipart posts of 20,
// two at a time. Prints wall time and the server's CPU (from /proc) to compare two builds of the server.
//   node bench/server-uploads.mjs [PATH/TO/cli/main.js]     (default: this checkout's dist)
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startServer } from './lib/server.mjs';
import { pool } from './lib/api.mjs';

const cli = resolve(process.argv[2] ?? new URL('../dist/cli/main.js', import.meta.url).pathname);
const root = mkdtempSync(join(tmpdir(), 'seafs-server-uploads-'));
const server = await startServer({ root, cli, latencyMs: 0, log: () => {} });
const cpuSeconds = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks
};
try {
  await server.api.mkdir(server.repo, '/d');
  const link = await server.api.uploadLink(server.repo, '/d');
  const posts = [];
  for (let p = 0, n = 0; p < 100; p++) {
    const files = [];
    for (let i = 0; i < 20; i++, n++) files.push({ name: `f${n}`, data: Buffer.alloc(1024 + ((n * 7919) % 65536), n) });
    posts.push(files);
  }
  const cpu0 = cpuSeconds();
  const t0 = performance.now();
  await pool(posts, 2, (files) => server.api.upload(link, '/d', files));
  const wall = (performance.now() - t0) / 1000;
  const listed = (await server.api.listDir(server.repo, '/d')).length;
  if (listed !== 2000) throw new Error(`the server lists ${listed} files, not 2000`);
  console.log(`server-uploads: ${cli}: wall ${wall.toFixed(2)} s, server CPU ${(cpuSeconds() - cpu0).toFixed(2)} s`);
} finally {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
}
