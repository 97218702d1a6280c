// `seafs status [MOUNTPOINT]`: what each running mount (or the one named) still
// has to upload, from its control socket's `status` answer. Mounts are found in
// /proc/mounts (type fuse.seafs); --json prints the answers for scripts,
// --watch refreshes.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { exitAfterOutput } from '../log.js';
import { queryStatus } from './control-socket.js';
import { formatStatus, progressBytes, type MountStatus } from './status-format.js';

interface StatusArgv {
  mountpoint?: string;
  json: boolean;
  watch: boolean;
  interval: number;
}

/** Mount points of every seafs mount this process can see: an ordinary user's own only (user_id=). */
export async function seafsMounts(uid = process.getuid?.() ?? 0): Promise<string[]> {
  const text = await readFile('/proc/mounts', 'utf8').catch(() => '');
  return text
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2] === 'fuse.seafs' && (uid === 0 || (f[3] ?? '').split(',').includes(`user_id=${uid}`)))
    .map((f) => f[1].replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

/** Bytes a folder's files take on disk (the block cache's files are sparse). */
async function diskUsage(dir: string): Promise<number | undefined> {
  try {
    let total = 0;
    for (const n of await readdir(dir)) {
      const st = await stat(join(dir, n)).catch(() => null);
      if (st?.isFile()) total += st.blocks * 512;
    }
    return total;
  } catch {
    return undefined;
  }
}

type Sample = { mountpoint: string; status: MountStatus | null; at: number };

async function sample(mountpoints: string[]): Promise<Sample[]> {
  return Promise.all(
    mountpoints.map(async (mountpoint) => {
      const text = await queryStatus(mountpoint);
      let status: MountStatus | null = null;
      try {
        status = text ? (JSON.parse(text) as MountStatus) : null;
      } catch {
        status = null;
      }
      if (status) {
        status.mountpoint ??= mountpoint;
        if (status.cacheDir && status.cacheMaxBytes)
          status.cacheUsedBytes = await diskUsage(join(status.cacheDir, 'blocks'));
      }
      return { mountpoint, status, at: Date.now() };
    }),
  );
}

function render(now: Sample[], before: Sample[] | null): string {
  return now
    .map((s) => {
      if (!s.status)
        return `${s.mountpoint}: mounted, but no seafs process answers (another user's mount, or its process is gone: seafs unmount ${s.mountpoint})`;
      const prev = before?.find((b) => b.mountpoint === s.mountpoint)?.status;
      const dt = (s.at - (before?.find((b) => b.mountpoint === s.mountpoint)?.at ?? s.at)) / 1000;
      // a stream that ended between the samples leaves the count until its upload is acknowledged: no rate then
      const delta = prev ? progressBytes(s.status) - progressBytes(prev) : -1;
      const rate = dt > 0 && delta >= 0 ? delta / dt : undefined;
      return formatStatus(s.status, { rate });
    })
    .join('\n\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const statusCommand: CommandModule<object, StatusArgv> = {
  command: 'status [mountpoint]',
  describe: 'Show what each running mount (or the one named) is uploading, waiting to upload or failed to upload',
  builder: (y) =>
    y
      .positional('mountpoint', { type: 'string', describe: 'a mount point (default: every seafs mount)' })
      .option('json', { type: 'boolean', default: false, describe: "print each mount's status as JSON (an array)" })
      .option('watch', { type: 'boolean', default: false, describe: 'refresh until interrupted' })
      .option('interval', { type: 'number', default: 2, describe: 'seconds between refreshes with --watch' }) as never,
  handler: async (argv) => {
    const targets = argv.mountpoint ? [resolve(argv.mountpoint)] : await seafsMounts();
    if (targets.length === 0) {
      process.stderr.write('seafs: no seafs mount is running\n');
      process.exit(1);
    }
    let prev: Sample[] | null = null;
    let now = await sample(targets);
    if (argv.mountpoint && !now[0].status) {
      process.stderr.write(`seafs: no seafs mount answers at ${targets[0]}\n`);
      process.exit(1);
    }
    if (argv.json) {
      process.stdout.write(
        JSON.stringify(
          now.filter((s) => s.status).map((s) => s.status),
          null,
          2,
        ) + '\n',
      );
      return exitAfterOutput(0);
    }
    // with uploads in flight, a second sample a second later gives the rate
    if (!argv.watch && now.some((s) => s.status?.queue?.length)) {
      await sleep(1000);
      prev = now;
      now = await sample(targets);
    }
    if (!argv.watch) {
      process.stdout.write(render(now, prev) + '\n');
      return exitAfterOutput(0);
    }
    for (;;) {
      process.stdout.write(
        `\x1b[H\x1b[2J${new Date().toLocaleTimeString()}  (every ${argv.interval} s, Ctrl-C ends)\n\n${render(now, prev)}\n`,
      );
      await sleep(Math.max(0.2, argv.interval) * 1000);
      prev = now;
      now = await sample(argv.mountpoint ? targets : await seafsMounts());
    }
  },
};
