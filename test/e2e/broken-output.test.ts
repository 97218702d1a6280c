// A mount whose output goes nowhere: stdout and stderr into pipes whose reader
// is gone (`seafs demo | tee log`, then Ctrl-C kills tee), and a foreground
// mount whose terminal is closed (SIGHUP, then EIO on every write). The mount
// must keep answering (or, after SIGHUP, upload and unmount), never spin and
// never hang; its CPU time is read from /proc/PID/stat.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { controlPaths } from '../../src/cli/control/control-socket.js';
import { SeafileClient } from '../../src/client/client.js';
import { expectRemoteFile, remoteBytes, waitRemoteFile } from '../helpers/api-check.js';
import {
  CLI,
  isMountpoint,
  mountLibrary,
  q,
  run,
  scratchDir,
  sh,
  sleep,
  startDemo,
  testEnv,
  trackMountProcess,
} from '../helpers/mount.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

// latency: an upload started by a close is still pending when the terminal closes
const ctx = setupE2E(['Pipe', 'Tty', 'Logged'], { latencyMs: 100 });

/** The paths a running mount has yet to upload, from its control socket. */
function pendingUploads(mnt: string): Promise<string[]> {
  process.env.SEAFS_RUNTIME_DIR = testEnv().SEAFS_RUNTIME_DIR; // where the mounts of these tests listen
  return new Promise((resolve, reject) => {
    const c = net.connect(controlPaths(mnt).socket);
    let buf = '';
    c.setEncoding('utf8');
    c.on('connect', () => c.write('status\n'));
    c.on('data', (d: string) => (buf += d));
    c.on('end', () => resolve((JSON.parse(buf) as { pending: { path: string }[] }).pending.map((p) => p.path)));
    c.on('error', reject);
  });
}

/** CPU seconds (user + system) the process has used so far. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime: fields 14 and 15
  const hz = Number((await run('getconf', ['CLK_TCK'])).out.trim()) || 100;
  return ticks / hz;
}

/** CPU seconds the process uses over `ms` of wall time in which nobody touches the mount. */
async function idleCpu(pid: number, ms = 3000): Promise<number> {
  const before = await cpuSeconds(pid);
  await sleep(ms);
  return (await cpuSeconds(pid)) - before;
}

/** False once the process is gone or a zombie (an orphan may wait for a reaper that never comes). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text ? text.split(/\s+/).map(Number) : [];
}

/** Closes our (the only) reading end of the child's stdout and stderr pipes, as a dying `tee` does. */
function dropReader(child: ChildProcess): void {
  child.stdout!.destroy();
  child.stderr!.destroy();
}

/** The file operations every case performs: a streamed 12 MiB file, a small one, a listing, both read back. */
async function fileOps(mnt: string, dir: string, big: string): Promise<Buffer> {
  const small = Buffer.from(`written after the output went away (${dir})\n`);
  await sh(`mkdir -p ${q(mnt)}/${dir} && cp ${q(big)} ${q(mnt)}/${dir}/big.bin`, { timeoutMs: 60_000 });
  await sh(`cat > ${q(mnt)}/${dir}/note.txt`, { input: small.toString(), timeoutMs: 30_000 });
  expect((await sh(`ls ${q(mnt)}/${dir}`, { timeoutMs: 30_000 })).out).toBe('big.bin\nnote.txt\n');
  expect((await sh(`cat ${q(mnt)}/${dir}/note.txt`, { timeoutMs: 30_000 })).out).toBe(small.toString());
  await sh(`cmp ${q(big)} ${q(mnt)}/${dir}/big.bin`, { timeoutMs: 60_000 });
  return small;
}

// processes started through `script` are not our children: killed by PID if a test fails
const orphans = new Set<number>();
afterAll(() => {
  for (const pid of orphans) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

describe('a mount whose output goes nowhere', () => {
  it('seafs mount with stdout and stderr into pipes whose reader exited keeps answering, stays idle, and unmounts with every file on the server', async () => {
    const repo = ctx.repos.Pipe;
    const m = await mountLibrary(ctx.server, { library: 'Pipe' });
    dropReader(m.child);
    const big = path.join(ctx.src, 'pipe-big.bin');
    await writeRandom(big, 12 * 1024 * 1024); // above the streaming threshold: its upload writes a log line
    const small = await fileOps(m.mnt, 'p', big);
    await waitRemoteFile(ctx.api, repo, '/p/big.bin', big);
    await waitRemoteFile(ctx.api, repo, '/p/note.txt', small);

    const cpu = await idleCpu(m.pid);
    console.log(`broken pipe: the mount used ${cpu.toFixed(2)} s of CPU over 3 s idle`);
    expect(cpu, 'CPU seconds of the idle mount over 3 s').toBeLessThan(0.5);
    expect((await sh(`ls ${q(m.mnt)}/p`, { timeoutMs: 10_000, allowFail: true })).out, 'the mount still answers').toBe(
      'big.bin\nnote.txt\n',
    );

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect(un.out).toContain('every upload is on the server');
    expect(await m.exited).toBe(0);
    expect(await isMountpoint(m.mnt)).toBe(false);
    await expectRemoteFile(ctx.api, repo, '/p/big.bin', big);
    expect((await remoteBytes(ctx.api, repo, '/p/note.txt')).equals(small)).toBe(true);
  });

  it('seafs demo with stdout and stderr into pipes whose reader exited keeps answering, stays idle, and exits 0 on Ctrl-C', async () => {
    const mnt = path.join(scratchDir(), 'demo-pipe');
    const { child, exited, url, user, password } = await startDemo(mnt);
    dropReader(child);

    const big = path.join(ctx.src, 'demo-big.bin');
    await writeRandom(big, 12 * 1024 * 1024);
    const small = await fileOps(mnt, 'Documents/piped', big);
    const { client } = await SeafileClient.login({ baseUrl: url }, user, password);
    try {
      const repo = (await client.listLibraries()).find((l) => l.name === 'Demo')!.id;
      await waitRemoteFile(client, repo, '/Documents/piped/big.bin', big);
      await waitRemoteFile(client, repo, '/Documents/piped/note.txt', small);
    } finally {
      await client.close();
    }

    const cpu = await idleCpu(child.pid!);
    console.log(`broken pipe: seafs demo used ${cpu.toFixed(2)} s of CPU over 3 s idle`);
    expect(cpu, 'CPU seconds of the idle demo over 3 s').toBeLessThan(0.5);
    expect((await sh(`ls ${q(mnt)}`, { timeoutMs: 10_000, allowFail: true })).out, 'the mount still answers').toBe(
      'Data\nDocuments\nPictures\nREADME.txt\n',
    );

    child.kill('SIGINT');
    const code = await Promise.race([exited, sleep(60_000).then(() => 'still running 60 s after SIGINT')]);
    expect(code).toBe(0);
    expect(await isMountpoint(mnt)).toBe(false);
  });

  it('a foreground mount whose terminal is closed (SIGHUP, then EIO on every write) uploads what is pending, unmounts and exits without spinning', async () => {
    const repo = ctx.repos.Tty;
    const mnt = mkdtempSync(path.join(scratchDir(), 'tty-mnt-'));
    const cacheDir = mkdtempSync(path.join(scratchDir(), 'tty-cache-'));
    const cmd = [
      process.execPath,
      CLI,
      'mount',
      ctx.server.url,
      mnt,
      '--library',
      'Tty',
      '--user',
      ctx.server.adminEmail,
      '--cache-dir',
      cacheDir,
    ];
    // `script` runs the mount on a pseudo-terminal of its own, as the session leader (what an
    // interactive shell does on hangup, resend SIGHUP to its foreground job, the kernel does here);
    // killing `script` closes the terminal: SIGHUP, and every later write to the terminal is EIO
    const term = spawn('script', ['-q', '-e', '-c', `exec ${cmd.map(q).join(' ')}`, '/dev/null'], {
      env: testEnv({ SEAFS_PASSWORD: ctx.server.adminPassword, SHELL: '/bin/bash' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    trackMountProcess(term, mnt);
    let out = '';
    term.stdout!.on('data', (d) => (out += d));
    term.stderr!.on('data', (d) => (out += d));
    const t0 = Date.now();
    while (!out.includes('seafs: mounted') || !(await isMountpoint(mnt))) {
      if (term.exitCode !== null || Date.now() - t0 > 60_000)
        throw new Error(`the mount on a terminal was not ready: ${out}`);
      await sleep(100);
    }
    const mountPids = childrenOf(term.pid!);
    expect(mountPids.length, `children of script: ${mountPids}`).toBe(1);
    const pid = mountPids[0];
    orphans.add(pid);
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toContain('mount');

    const big = path.join(ctx.src, 'tty-big.bin');
    await writeRandom(big, 12 * 1024 * 1024);
    const small = await fileOps(mnt, 't', big);
    const cpu = await idleCpu(pid, 1000);
    expect(cpu, 'CPU seconds of the mount over 1 s before the terminal closes').toBeLessThan(0.5);
    // more to upload when the terminal goes: a file closed just before
    const late = path.join(ctx.src, 'tty-late.bin');
    await writeRandom(late, 3 * 1024 * 1024);
    await sh(`cp ${q(late)} ${q(mnt)}/t/late.bin`, { timeoutMs: 60_000 });
    expect(
      await pendingUploads(mnt),
      'an upload pending when the terminal closes (else the test proves less)',
    ).toContain('/t/late.bin');

    term.kill('SIGKILL');
    const t1 = Date.now();
    while (alive(pid)) {
      if (Date.now() - t1 > 90_000) {
        const cpuNow = await cpuSeconds(pid).catch(() => -1);
        throw new Error(`the mount was still running 90 s after its terminal closed (CPU so far ${cpuNow} s)`);
      }
      await sleep(200);
    }
    console.log(`closed terminal: the mount uploaded, unmounted and exited ${Date.now() - t1} ms after the hangup`);
    expect(await isMountpoint(mnt)).toBe(false);
    // no waiting: everything must be on the server once the process is gone
    await expectRemoteFile(ctx.api, repo, '/t/big.bin', big);
    await expectRemoteFile(ctx.api, repo, '/t/late.bin', late);
    expect((await remoteBytes(ctx.api, repo, '/t/note.txt')).equals(small)).toBe(true);
  });

  it('seafs mount --daemon --log-file F: the background mount writes timestamped lines to F (mode 0600, no password), runs with two malloc arenas and its V8 flags, and seafs unmount ends it with the file on the server', async () => {
    const repo = ctx.repos.Logged;
    const mnt = mkdtempSync(path.join(scratchDir(), 'logged-mnt-'));
    const cacheDir = mkdtempSync(path.join(scratchDir(), 'logged-cache-'));
    const logFile = path.join(scratchDir(), 'logged.log');
    const r = await run(
      process.execPath,
      [
        CLI,
        'mount',
        ctx.server.url,
        mnt,
        '--library',
        'Logged',
        '--user',
        ctx.server.adminEmail,
        '--cache-dir',
        cacheDir,
        '--daemon',
        '--log-file',
        logFile,
      ],
      { env: testEnv({ SEAFS_PASSWORD: ctx.server.adminPassword }), timeoutMs: 120_000 },
    );
    const pid = Number(/\(pid (\d+), log ([^)]+)\)/.exec(r.out)?.[1]);
    expect(r.out, r.err).toContain(`seafs: mounted Logged at ${mnt} (pid ${pid}, log ${logFile})`);
    orphans.add(pid);
    const big = path.join(ctx.src, 'logged-big.bin');
    await writeRandom(big, 12 * 1024 * 1024);
    const small = await fileOps(mnt, 'l', big);
    // the background process runs with the mount's memory settings (src/cli/mount/v8-tuning.ts)
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')).toContain('MALLOC_ARENA_MAX=2');
    const st = await run(process.execPath, [CLI, 'status', '--json', mnt], { env: testEnv() });
    const v8Flags = (JSON.parse(st.out) as { v8Flags?: string[] }[])[0].v8Flags;
    expect(v8Flags).toContain('--semi-space-growth-factor=1');
    const un = await run(process.execPath, [CLI, 'unmount', mnt], { env: testEnv(), timeoutMs: 120_000 });
    expect(un.out).toContain('every upload is on the server');
    const t0 = Date.now();
    while (alive(pid) && Date.now() - t0 < 30_000) await sleep(100);
    expect(alive(pid), 'the daemon exits after seafs unmount').toBe(false);
    await expectRemoteFile(ctx.api, repo, '/l/big.bin', big);
    expect((await remoteBytes(ctx.api, repo, '/l/note.txt')).equals(small)).toBe(true);

    const log = readFileSync(logFile, 'utf8');
    const esc = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const stamp = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
    expect(log).toMatch(new RegExp(`^${stamp} INFO  mounted Logged at ${esc(mnt)} \\(pid ${pid}\\)$`, 'm'));
    expect(log).toMatch(new RegExp(`^${stamp} INFO  /l/big\\.bin: uploaded (while it was written|by blocks)`, 'm'));
    expect(log).toMatch(new RegExp(`^${stamp} INFO  unmounted ${esc(mnt)}; every upload is on the server$`, 'm'));
    expect(log).not.toContain(ctx.server.adminPassword);
    expect(statSync(logFile).mode & 0o777).toBe(0o600);
  });
});
