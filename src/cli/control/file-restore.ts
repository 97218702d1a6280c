// `seafs restore FILE --at TIME`: the version of a file of a mounted library
// that was current at TIME becomes current again, by the server's revert
// (a new version; nothing is downloaded or uploaded), through the mount that
// holds FILE. TIME is anything GNU date reads ("yesterday 17:00", "last
// tuesday", "2026-11-20 10:15") or a version's name in .seafile-history
// ("2026-11-20 10.15.00").
import { execFile, execFileSync } from 'node:child_process';
import type { CommandModule } from 'yargs';
import { inMount } from './file-lock.js';
import { exitAfterOutput } from '../log.js';
import { queryControl } from './control-socket.js';

interface RestoreArgv {
  path: string;
  at: string;
}

/** TIME as epoch ms in the local time zone; null when it cannot be read */
export function parseTime(text: string): number | null {
  // a version's name: dots between the hours, minutes and seconds
  const t = text
    .trim()
    .replace(/(\d{1,2})\.(\d\d)(?:\.(\d\d))?(-\d+)?$/, (_m, h, mi, se) => `${h}:${mi}:${se ?? '00'}`);
  try {
    const out = execFileSync('date', ['-d', t, '+%s'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const sec = Number(out.trim());
    if (Number.isFinite(sec)) return sec * 1000;
  } catch {
    /* not GNU date, or a time it cannot read */
  }
  const ms = Date.parse(t);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * The kernel keeps a file's size and time for the mount's attr-timeout, and
 * libfuse keeps its pages while they look unchanged: a `cat` right after the
 * revert would show the old content. A stat that bypasses the kernel's cache
 * (statx AT_STATX_FORCE_SYNC, GNU stat --cached=never; Node cannot ask for it)
 * makes the kernel take the new attributes, dropping the pages when the size
 * changed, and libfuse then drops them at the next open when the time did.
 * Without such a stat, wait until the kernel asks by itself.
 */
async function refreshKernel(file: string, kernelMs: number): Promise<void> {
  const forced = await new Promise<boolean>((resolve) =>
    execFile('stat', ['--cached=never', '--format=%s', '--', file], { timeout: 30_000 }, (err) => resolve(!err)),
  );
  if (!forced) await new Promise((r) => setTimeout(r, Math.min(kernelMs, 60_000) + 100));
}

export const restoreCommand: CommandModule<object, RestoreArgv> = {
  command: 'restore <path>',
  describe: 'Make the version of a file current at a time (--at) its current version again (server-side revert)',
  builder: (y) =>
    y.positional('path', { type: 'string', demandOption: true, describe: 'a file on a seafs mount' }).option('at', {
      type: 'string',
      demandOption: true,
      describe: 'the time: "yesterday 17:00", "2026-11-20 10:15" or a version name of .seafile-history',
    }) as never,
  handler: async (argv) => {
    const fail = (msg: string) => {
      process.stderr.write(`seafs: ${msg}\n`);
      process.exit(1);
    };
    const at = parseTime(argv.at);
    if (at === null) return fail(`cannot read the time "${argv.at}"`);
    const where = await inMount(argv.path);
    if (!where) return fail(`${argv.path} is not on a seafs mount`);
    const answer = await queryControl(where.mnt, `file-restore ${JSON.stringify({ path: where.inner, at })}`, 60_000);
    if (!answer || answer.startsWith('error ')) {
      return fail(answer ? answer.replace(/^error ([A-Z]+: )?/, '') : `no seafs mount answers at ${where.mnt}`);
    }
    const r = JSON.parse(answer) as { name: string; size: number; current: boolean; kernelMs?: number };
    if (!r.current) await refreshKernel(argv.path, r.kernelMs ?? 0);
    process.stdout.write(
      r.current
        ? `${argv.path}: already the version "${r.name}" (${r.size} bytes); nothing changed\n`
        : `${argv.path}: restored the version "${r.name}" (${r.size} bytes)\n`,
    );
    return exitAfterOutput(0);
  },
};
