// `seafs unmount`: asks the mount process to unmount once every upload is on
// the server; --force detaches at once; a stale mount (its process gone) is cleared.
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { requestUnmount } from '../control/control-socket.js';
import { printOut } from '../log.js';
import { UserError } from '../user-error.js';
import { fail } from './command-exit.js';

export const unmountCommand: CommandModule<object, { mountpoint: string; force?: boolean }> = {
  command: 'unmount <mountpoint>',
  describe: 'Unmount, after every pending upload is on the server',
  builder: (y) =>
    y.positional('mountpoint', { type: 'string', demandOption: true }).option('force', {
      type: 'boolean',
      describe:
        'detach at once (lazily), without asking the mount process: for a stale mount left by a crash or a mount whose process hangs',
    }) as never,
  handler: async (argv) => {
    const mnt = resolve(argv.mountpoint);
    if (argv.force) {
      const { forceUnmount } = await import('./unmount-force.js');
      await forceUnmount(mnt).then((line) => printOut(`seafs: ${line}\n`), fail);
      process.exit(0);
    }
    const r = await requestUnmount(mnt, (l) => printOut(`${l.startsWith('seafs:') ? '' : 'seafs: '}${l}\n`));
    if (r === true) process.exit(0);
    if (r === false)
      fail(
        new UserError(`unmounting ${mnt} did not complete: some files are not on the server (kept for the next mount)`),
      );
    const { clearStaleMount, isMounted } = await import('../../fuse/mount.js');
    if (await isMounted(mnt)) {
      // another user's mount: its socket is not in this user's runtime dir, and it is not stale
      const { foreignMountProblem, readProcMounts, staleProblem } = await import('./preflight.js');
      const foreign = foreignMountProblem(mnt, process.getuid?.() ?? 0, readProcMounts());
      if (foreign) fail(new UserError(foreign));
      await clearStaleMount(mnt).catch((e: unknown) =>
        fail(new UserError(staleProblem(mnt, `clearing it failed: ${(e as Error).message}`))),
      );
      printOut(`seafs: cleared a stale mount at ${mnt} (its process was gone)\n`);
      process.exit(0);
    }
    fail(new UserError(`nothing is mounted at ${mnt}`));
  },
};
