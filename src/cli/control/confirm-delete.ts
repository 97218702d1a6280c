// `seafs confirm-delete MOUNTPOINT [--cancel]`: the answer to the mass-delete
// guard (src/vfs/remove/mass-delete-guard.ts) of a running mount. Without --cancel the
// held deletes may go on (run the rm again); with it the hold ends and the
// refused files stay.
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { exitAfterOutput } from '../log.js';
import { queryControl } from './control-socket.js';

interface ConfirmArgv {
  mountpoint: string;
  cancel: boolean;
}

/** A mount point as a shell word, for the commands the mount tells the user to run. */
export function shellWord(s: string): string {
  return /^[\w./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export const confirmDeleteCommand: CommandModule<object, ConfirmArgv> = {
  command: 'confirm-delete <mountpoint>',
  describe: 'Let the deletes a mount holds after a mass delete go on (--cancel: keep the files, stop holding)',
  builder: (y) =>
    y.positional('mountpoint', { type: 'string', demandOption: true }).option('cancel', {
      type: 'boolean',
      default: false,
      describe: 'keep the files whose delete was refused; counting starts again',
    }) as never,
  handler: async (argv) => {
    const mnt = resolve(argv.mountpoint);
    const answer = await queryControl(mnt, `delete-guard ${argv.cancel ? 'cancel' : 'confirm'}`);
    let held: boolean | null = null;
    try {
      held = answer ? (JSON.parse(answer) as { held: boolean }).held : null;
    } catch {
      held = null;
    }
    if (typeof held !== 'boolean') {
      process.stderr.write(`seafs: no seafs mount answers at ${mnt}${answer ? ` (${answer})` : ''}\n`);
      return exitAfterOutput(1);
    }
    const what = argv.cancel
      ? held
        ? 'the held deletes are cancelled; the files stay'
        : 'no deletes were held'
      : held
        ? 'deletes go on: run the delete again'
        : 'no deletes were held; the next mass delete (within 60 s) is let through';
    process.stdout.write(`${mnt}: ${what}\n`);
    return exitAfterOutput(0);
  },
};
