// `seafs unlock MOUNTPOINT LIBRARY`: hands the password of an encrypted
// library to a running all-libraries mount over its control socket. The
// password comes from SEAFS_LIBRARY_PASSWORD, --library-password-file or a
// prompt, never from argv; the mount keeps it in memory only.
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { printErr, printOut } from '../log.js';
import { requestUnlock } from './control-socket.js';
import { readLibraryPassword } from '../mount/secrets.js';
import { UserError } from '../user-error.js';

interface UnlockArgv {
  mountpoint: string;
  library: string;
  libraryPasswordFile?: string;
}

export const unlockCommand: CommandModule<object, UnlockArgv> = {
  command: 'unlock <mountpoint> <library>',
  describe: 'Give a running all-libraries mount the password of an encrypted library',
  builder: (y) =>
    y
      .positional('mountpoint', { type: 'string', demandOption: true })
      .positional('library', {
        type: 'string',
        demandOption: true,
        describe: 'the library folder name at the root of the mount (or its id)',
      })
      .option('library-password-file', {
        type: 'string',
        describe: 'file whose first line is the password (or set SEAFS_LIBRARY_PASSWORD; default: a prompt)',
      }) as never,
  handler: async (argv) => {
    try {
      const mnt = resolve(argv.mountpoint);
      const password = await readLibraryPassword(argv, argv.library);
      const answer = await requestUnlock(mnt, argv.library, password);
      if (answer === null) throw new UserError(`no seafs mount answers at ${mnt}`);
      if (!answer.startsWith('ok ')) throw new UserError(answer.replace(/^error /, ''));
      printOut(`seafs: unlocked "${answer.slice(3)}" at ${mnt}\n`);
      process.exit(0);
    } catch (e) {
      printErr(`seafs: ${e instanceof UserError ? e.message : ((e as Error)?.stack ?? String(e))}\n`);
      process.exit(1);
    }
  },
};
