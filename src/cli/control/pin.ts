// `seafs pin PATH...` and `seafs unpin PATH...`: keep files and folders of a
// mounted library on this machine (downloaded in the background, never
// evicted, refreshed when they change, readable offline), or let them go back
// to ordinary cached data. Each path goes to the mount that holds it through
// its control socket (as `seafs lock` does); the same as
// `setfattr -n user.seafile.pinned -v 1|0 PATH`, with a message instead of an errno.
import type { CommandModule } from 'yargs';
import type { Vfs } from '../../vfs/vfs.js';
import { VfsError } from '../../vfs/errors.js';
import { inMount } from './file-lock.js';
import { exitAfterOutput } from '../log.js';
import { queryControl } from './control-socket.js';
import { fmtBytes } from './status-format.js';

/** The mount's side: `pin {"path":..,"on":true|false}` answered with JSON, or a thrown message. */
export function pinControl(vfs: Vfs): (arg: string) => Promise<string> {
  return async (arg) => {
    const { path, on } = JSON.parse(arg) as { path: string; on: boolean };
    try {
      if (on) return JSON.stringify(await vfs.pin(path));
      return JSON.stringify({ files: await vfs.unpin(path) });
    } catch (e) {
      throw new Error(e instanceof VfsError ? e.message.replace(/^[A-Z]+: /, '') : (e as Error).message);
    }
  };
}

interface PinArgv {
  paths: string[];
}

function command(on: boolean): CommandModule<object, PinArgv> {
  const name = on ? 'pin' : 'unpin';
  return {
    command: `${name} <paths..>`,
    describe: on
      ? 'Keep files or folders of a mount on this machine (downloaded in the background, readable offline)'
      : 'Stop keeping pinned files or folders (they stay in the cache until it needs the room)',
    builder: (y) =>
      y.positional('paths', {
        type: 'string',
        array: true,
        demandOption: true,
        describe: 'files or folders on a seafs mount',
      }) as never,
    handler: async (argv) => {
      let failed = 0;
      for (const p of argv.paths) {
        const where = await inMount(p);
        if (!where) {
          process.stderr.write(`seafs: ${p} is not on a seafs mount\n`);
          failed++;
          continue;
        }
        // a large folder is listed whole before the answer: give it time
        const answer = await queryControl(where.mnt, `pin ${JSON.stringify({ path: where.inner, on })}`, 10 * 60_000);
        type Answer = { files: number; bytes?: number; already?: boolean };
        let r: Answer | null = null;
        try {
          r = answer && !answer.startsWith('error ') ? (JSON.parse(answer) as Answer) : null;
        } catch {
          r = null;
        }
        if (!r) {
          const why = answer ? answer.replace(/^error /, '') : `no seafs mount answers at ${where.mnt}`;
          process.stderr.write(`seafs: cannot ${name} ${p}: ${why}\n`);
          failed++;
        } else if (!on) {
          process.stdout.write(`${p}: unpinned (${r.files} file(s) stay in the cache until it needs the room)\n`);
        } else if (r.already) {
          process.stdout.write(`${p}: already pinned (${r.files} file(s))\n`);
        } else {
          process.stdout.write(
            `${p}: pinned, ${r.files} file(s), ${fmtBytes(r.bytes ?? 0)}; downloading in the background (seafs status ${where.mnt})\n`,
          );
        }
      }
      return exitAfterOutput(failed ? 1 : 0);
    },
  };
}

export const pinCommand = command(true);
export const unpinCommand = command(false);
