// A real Seafile CE server (seaf-server with its C fileserver, seahub) for
// e2e tests, behind the same TestServer interface as `seafs serve`, so one
// suite runs against either (startServerOfKind). The build is made once per
// machine by scripts/real-seafile (scripts/test runs it first; the helper
// runs it too, which is instant once built); each server gets its own
// instance folder (links to the build's src/ and inst/, its own data/) and two
// free ports, and is stopped by the `run` script, which ends only the pids it
// started; stop() then ends, by pid, anything still naming the instance folder.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';
import { startTestServer, type TestServer } from './server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHIPPED = process.env.SEAFS_REAL_SEAFILE ?? path.resolve(ROOT, '../shared/real-seafile');
const RUN = path.join(SHIPPED, 'run');

export type ServerKind = 'serve' | 'real';

const ADMIN_EMAIL = 'admin@seafs.test';
const ADMIN_PASSWORD = 'admin-secret-pw';

/** SEAFS_SKIP_REAL_SERVER=1 leaves the real server out (loudly); nothing else does. */
export function realServerSkipped(): boolean {
  const skip = process.env.SEAFS_SKIP_REAL_SERVER === '1';
  if (skip) console.warn('seafs test: SEAFS_SKIP_REAL_SERVER=1: the tests against the real Seafile server are SKIPPED');
  return skip;
}

function exec(file: string, args: string[], timeoutMs: number): Promise<{ out: string; err: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (e, out, err) => {
      if (e) reject(new Error(`${path.basename(file)} ${args.join(' ')} failed: ${e.message}\n${err}\n${out}`));
      else resolve({ out, err });
    });
  });
}

let buildDir: Promise<string> | null = null;

/** The real server's build folder (built on first use; about 2 minutes on a new machine). */
export function realServerBuild(): Promise<string> {
  buildDir ??= (async () => {
    if (!existsSync(RUN))
      throw new Error(`the real Seafile server's sources are missing: no ${RUN} (set SEAFS_REAL_SEAFILE)`);
    const { out } = await exec('bash', [path.join(ROOT, 'scripts/real-seafile'), 'build'], 15 * 60_000).catch(
      (e: Error) => {
        throw new Error(`could not build the real Seafile server (scripts/real-seafile build):\n${e.message}`);
      },
    );
    return out.trim().split('\n').pop()!;
  })();
  return buildDir;
}

function readPid(dir: string, name: string): number {
  try {
    return Number(readFileSync(path.join(dir, 'data/run', `${name}.pid`), 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

/** Whether `pid` runs with the instance folder in its command line (`DIR/`: the `run` script's test for "ours"). */
function names(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(`${dir}/`);
  } catch {
    return false; // gone
  }
}

/**
 * Ends, by pid, what is left of an instance after `run stop`: every process whose command line names its folder
 * (seaf-server, seahub, and the Go fileserver, notification server and MariaDB that scripts/real-go-fileserver and
 * real-notification-server start there). On a busy machine `run start` can take a daemon it is still exec'ing for
 * gone (its pid's command line is still the script's) and stop without it: the daemon then lives on without a
 * pid file, holding the port the next start wants.
 */
async function endLeftovers(dir: string): Promise<void> {
  const left = readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((pid) => pid !== process.pid && names(pid, dir));
  if (left.length === 0) return;
  console.warn(
    `real server: ${left.length} process(es) of ${dir} outlived 'run stop' (pids ${left.join(', ')}): ended`,
  );
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of left)
      try {
        if (names(pid, dir)) process.kill(pid, sig);
      } catch {
        // gone meanwhile
      }
  };
  signal('SIGTERM');
  for (let i = 0; i < 100 && left.some((pid) => names(pid, dir)); i++) await sleep(100);
  signal('SIGKILL');
}

/**
 * Starts a fresh real Seafile server on two free ports (API and fileserver).
 * `pid` is seaf-server's (the fileserver: SIGSTOP freezes transfers); restart()
 * keeps the ports, since the server hands out fileserver URLs with its port.
 */
export async function startRealServer(): Promise<TestServer> {
  const build = await realServerBuild();
  // `run` refuses folders with spaces or quotes; tmpdir has none here
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-real-'));
  symlinkSync(path.join(build, 'src'), path.join(dir, 'src'));
  symlinkSync(path.join(build, 'inst'), path.join(dir, 'inst'));
  mkdirSync(path.join(dir, 'data'));
  const portApi = await freePort();
  let portFiles = await freePort();
  while (portFiles === portApi) portFiles = await freePort();
  const start = () =>
    exec(
      RUN,
      [
        'start',
        dir,
        '--port-api',
        String(portApi),
        '--port-files',
        String(portFiles),
        '--admin',
        ADMIN_EMAIL,
        '--password',
        ADMIN_PASSWORD,
      ],
      180_000,
    );
  const runStop = () => exec(RUN, ['stop', dir], 60_000);
  // for good: `run stop`, then whatever else names the folder
  const stop = async () => {
    try {
      await runStop();
    } finally {
      await endLeftovers(dir);
    }
  };
  try {
    await start().catch(async () => {
      // under load `run start` can take a daemon for gone while it is still being exec'd (the pid file is
      // written before the exec, the liveness check reads the command line; nothing logged yet), and leave it
      // running without a pid file: everything ended (endLeftovers), once more
      await stop().catch(() => {});
      await start();
    });
  } catch (e) {
    await stop().catch(() => {});
    const logs = tailLogs(dir);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the real Seafile server did not start:\n${(e as Error).message}\n${logs}`);
  }
  const server: TestServer = {
    url: `http://127.0.0.1:${portApi}`,
    adminEmail: ADMIN_EMAIL,
    adminPassword: ADMIN_PASSWORD,
    dataDir: dir,
    pid: readPid(dir, 'seaf-server'),
    log: () => tailLogs(dir),
    async stop() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async halt() {
      await runStop();
    },
    async restart() {
      await runStop();
      await start();
      server.pid = readPid(dir, 'seaf-server');
    },
  };
  return server;
}

function tailLogs(dir: string): string {
  const out: string[] = [];
  for (const f of ['seafile.log', 'seahub.log', 'seaf-server.out', 'seahub.out']) {
    try {
      out.push(
        `--- ${f}\n${readFileSync(path.join(dir, 'data/logs', f), 'utf8')
          .split('\n')
          .slice(-40)
          .join('\n')}`,
      );
    } catch {
      // not written (yet)
    }
  }
  return out.join('\n');
}

/** Either server behind one interface: the suites that compare them start them here. */
export function startServerOfKind(kind: ServerKind): Promise<TestServer> {
  return kind === 'real' ? startRealServer() : startTestServer();
}
