// `seafs lock PATH` and `seafs unlock-file PATH`: lock a file of a mounted
// library on the server (Seafile's file locks: others then see it read-only
// and cannot change it) or unlock it, through the mount that holds PATH.
import { realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import type { CommandModule } from 'yargs';
import { queryControl } from './control-socket.js';
import { seafsMounts } from './status.js';

interface LockArgv {
  path: string;
}

/** The seafs mount holding `file`, and the path inside it ('/a/b'). */
export async function inMount(file: string): Promise<{ mnt: string; inner: string } | null> {
  let abs: string;
  try {
    abs = realpathSync(resolve(file));
  } catch {
    abs = resolve(file);
  }
  const mounts = (await seafsMounts()).sort((a, b) => b.length - a.length);
  for (const mnt of mounts) {
    if (abs === mnt || abs.startsWith(mnt.endsWith(sep) ? mnt : mnt + sep)) {
      return { mnt, inner: '/' + relative(mnt, abs).split(sep).join('/') };
    }
  }
  return null;
}

function lockCommand(name: string, on: boolean, describe: string): CommandModule<object, LockArgv> {
  return {
    command: `${name} <path>`,
    describe,
    builder: (y) =>
      y.positional('path', { type: 'string', demandOption: true, describe: 'a file on a seafs mount' }) as never,
    handler: async (argv) => {
      const where = await inMount(argv.path);
      if (!where) {
        process.stderr.write(`seafs: ${argv.path} is not on a seafs mount\n`);
        process.exit(1);
      }
      const answer = await queryControl(where.mnt, `file-lock ${JSON.stringify({ path: where.inner, on })}`, 60_000);
      if (answer === 'ok') {
        process.stdout.write(`${argv.path}: ${on ? 'locked' : 'unlocked'}\n`);
        process.exit(0);
      }
      // a server without locks (Community Edition): one line naming the file, no errno
      const unsupported = answer && /^error ENOTSUP: (.*)$/.exec(answer);
      process.stderr.write(
        unsupported
          ? `seafs: ${argv.path}: ${unsupported[1]}\n`
          : `seafs: ${answer ? answer.replace(/^error /, '') : `no seafs mount answers at ${where.mnt}`}\n`,
      );
      process.exit(1);
    },
  };
}

export const lockFileCommand = lockCommand(
  'lock',
  true,
  'Lock a file of a mounted library on the server (others see it read-only)',
);
export const unlockFileCommand = lockCommand('unlock-file', false, 'Unlock a file locked with seafs lock');
