#!/usr/bin/env node
// Time to first byte of files opened through a mount, with and without the
// file server's direct download: `seafs serve --latency-ms 80` answering as
// 11.0.13 (a download link, then the file server: two round trips) and as
// 12.0.14 (the direct URL: one). Each file is opened once, its listing known
// already, and its first byte read. Prints the figures as JSON and a line each.
//   node bench/ttfb-direct.mjs [FILES=12] [LATENCY_MS=80]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'main.js');
const [files = '12', latency = '80'] = process.argv.slice(2);
const ADMIN = { email: 'admin@bench.local', password: 'bench-ttfb-pw' };

function start(args, env, ready) {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const on = (d) => {
      out += d;
      const v = ready(out);
      if (v) resolve({ child, value: v });
    };
    child.stdout.on('data', on);
    child.stderr.on('data', on);
    child.once('exit', (c) => reject(new Error(`${args[0]} exited ${c}:\n${out}`)));
  });
}

function runCli(args, env) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: 'ignore' });
    c.once('exit', resolve);
  });
}

async function once(version) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'seafs-ttfb-'));
  const runtime = { SEAFS_RUNTIME_DIR: path.join(root, 'run') };
  const { child: server, value: url } = await start(
    [
      'serve',
      '--data',
      path.join(root, 'data'),
      '--port',
      '0',
      '--admin-email',
      ADMIN.email,
      '--latency-ms',
      latency,
      '--server-version',
      version,
    ],
    { SEAFS_ADMIN_PASSWORD: ADMIN.password },
    (out) => /listening on (http:\/\/\S+)/.exec(out)?.[1],
  );
  try {
    const auth = await fetch(`${url}/api2/auth-token/`, {
      method: 'POST',
      body: new URLSearchParams({ username: ADMIN.email, password: ADMIN.password }),
    }).then((r) => r.json());
    const H = { Authorization: `Token ${auth.token}` };
    const repo = (
      await fetch(`${url}/api2/repos/`, {
        method: 'POST',
        headers: H,
        body: new URLSearchParams({ name: 'Bench' }),
      }).then((r) => r.json())
    ).repo_id;
    const link = await fetch(`${url}/api2/repos/${repo}/upload-link/?p=/`, { headers: H }).then((r) => r.json());
    const fd = new FormData();
    fd.append('parent_dir', '/');
    for (let i = 0; i <= Number(files); i++) fd.append('file', new Blob([Buffer.alloc(64 * 1024, i)]), `f${i}.bin`);
    await fetch(link, { method: 'POST', body: fd });
    const mnt = path.join(root, 'mnt');
    await runCli(['--version'], {}); // warms the module cache a little
    const { mkdirSync } = await import('node:fs');
    mkdirSync(mnt);
    const { child: mount } = await start(
      ['mount', url, mnt, '--user', ADMIN.email, '--library', 'Bench', '--cache-dir', path.join(root, 'cache')],
      { SEAFS_PASSWORD: ADMIN.password, ...runtime },
      (out) => out.includes('seafs: mounted'),
    );
    try {
      const { readdir } = await import('node:fs/promises');
      await readdir(mnt); // the listing: known before each open
      const one = Buffer.alloc(1);
      const first = async (name) => {
        const t0 = process.hrtime.bigint();
        const fh = await open(path.join(mnt, name));
        await fh.read(one, 0, 1, 0);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        await fh.close();
        return ms;
      };
      await first('f0.bin'); // the first file tells the mount where the file server is
      const times = [];
      for (let i = 1; i <= Number(files); i++) times.push(await first(`f${i}.bin`));
      times.sort((a, b) => a - b);
      return {
        version,
        files: times.length,
        medianMs: +times[times.length >> 1].toFixed(1),
        minMs: +times[0].toFixed(1),
        maxMs: +times[times.length - 1].toFixed(1),
      };
    } finally {
      await runCli(['unmount', mnt], runtime);
      mount.kill('SIGTERM');
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(root, { recursive: true, force: true });
  }
}

const link = await once('11.0.13');
const direct = await once('12.0.14');
process.stdout.write(JSON.stringify({ latencyMs: Number(latency), link, direct }) + '\n');
process.stdout.write(
  `time to first byte at ${latency} ms latency, median of ${link.files} files: download link ${link.medianMs} ms, direct download ${direct.medianMs} ms\n`,
);
