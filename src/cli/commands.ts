// seafs command line: yargs wiring only; each command lives in its own module.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { guardStdio, printErr } from './log.js';
import { serveCommand } from './serve.js';
import { mountCommand, demoCommand } from './mount/commands.js';
import { unmountCommand } from './mount/unmount-command.js';
import { statusCommand } from './control/status.js';
import { cacheCommand } from './control/cache-clear.js';
import { unlockCommand } from './control/unlock-library.js';
import { lockFileCommand, unlockFileCommand } from './control/file-lock.js';
import { restoreCommand } from './control/file-restore.js';
import { seafsVersion, wantsVersion } from './version.js';
import { accountsCommand, loginCommand, logoutCommand } from './accounts/commands.js';
import { pinCommand, unpinCommand } from './control/pin.js';
import { confirmDeleteCommand } from './control/confirm-delete.js';
import { bwlimitCommand } from './control/bwlimit.js';

// a closed terminal or a broken pipe must never become an uncaught exception
guardStdio();

if (wantsVersion(hideBin(process.argv))) {
  process.stdout.write(seafsVersion() + '\n');
  process.exit(0);
}

await yargs(hideBin(process.argv))
  .scriptName('seafs')
  .usage('$0 <command> [options]')
  .command(loginCommand)
  .command(mountCommand)
  .command(unmountCommand)
  .command(statusCommand)
  .command(cacheCommand)
  .command(unlockCommand)
  .command(lockFileCommand)
  .command(unlockFileCommand)
  .command(restoreCommand)
  .command(pinCommand)
  .command(unpinCommand)
  .command(confirmDeleteCommand)
  .command(bwlimitCommand)
  .command(demoCommand)
  .command(serveCommand)
  .command(accountsCommand)
  .command(logoutCommand)
  .demandCommand(
    1,
    'Name a command: login, mount, unmount, status, cache, bwlimit, unlock, lock, unlock-file, restore, pin, unpin, demo, serve, accounts or logout.',
  )
  .strict()
  .help()
  .alias('h', 'help')
  // --version is answered above (it names the fuse-native build too)
  .version(false)
  .option('version', { type: 'boolean', describe: 'Show the version and the fuse-native build in use' })
  // `seafs completion` prints the bash (or, with SHELL=zsh, zsh) script; scripts/setup installs both
  .completion('completion', 'Print a shell completion script (bash; zsh when SHELL is zsh)')
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
