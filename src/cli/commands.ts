// seafs command line: yargs wiring only; each command lives in its own module.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { guardStdio, printErr } from './log.js';
import { serveCommand } from './serve.js';
import { mountCommand, unmountCommand, demoCommand } from './mount.js';
import { statusCommand } from './status.js';
import { cacheCommand } from './cache.js';
import { unlockCommand } from './unlock.js';
import { lockFileCommand, unlockFileCommand } from './file-lock.js';
import { restoreCommand } from './file-restore.js';
import { confirmDeleteCommand } from './confirm-delete.js';

// a closed terminal or a broken pipe must never become an uncaught exception
guardStdio();

await yargs(hideBin(process.argv))
  .scriptName('seafs')
  .usage('$0 <command> [options]')
  .command(mountCommand)
  .command(unmountCommand)
  .command(statusCommand)
  .command(cacheCommand)
  .command(unlockCommand)
  .command(lockFileCommand)
  .command(unlockFileCommand)
  .command(restoreCommand)
  .command(confirmDeleteCommand)
  .command(demoCommand)
  .command(serveCommand)
  .demandCommand(1, 'Name a command: mount, unmount, status, cache, unlock, lock, unlock-file, restore, demo or serve.')
  .strict()
  .help()
  .alias('h', 'help')
  .version()
  .wrap(Math.min(100, process.stdout.columns || 100))
  .fail((msg, err) => {
    if (err) {
      printErr(`seafs: ${err.message}\n`);
    } else {
      printErr(`seafs: ${msg}\nRun 'seafs --help' for usage.\n`);
    }
    process.exit(2);
  })
  .parseAsync();
