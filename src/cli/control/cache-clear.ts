// `seafs cache clear [MOUNTPOINT]`: drop the downloaded data a running mount
// (or every running mount) keeps on disk. Files written through the mount and
// not yet on the server live apart from it (the journal and its temp files)
// and are never touched. A mount's block cache starts empty at every mount, so
// only running mounts have one to clear.
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { exitAfterOutput } from '../log.js';
import { queryControl } from './control-socket.js';
import { fmtBytes } from './status-format.js';
import { seafsMounts } from './status.js';

interface CacheArgv {
  action: string;
  mountpoint?: string;
  all: boolean;
}

export const cacheCommand: CommandModule<object, CacheArgv> = {
  command: 'cache <action> [mountpoint]',
  describe:
    'clear: drop the downloaded data a running mount (or every one, --all) keeps on disk; uploads waiting are kept',
  builder: (y) =>
    y
      .positional('action', { type: 'string', choices: ['clear'], describe: 'what to do with the cache' })
      .positional('mountpoint', { type: 'string', describe: 'a mount point (default: every seafs mount)' })
      .option('all', { type: 'boolean', default: false, describe: 'every running seafs mount' }) as never,
  handler: async (argv) => {
    const targets = argv.mountpoint && !argv.all ? [resolve(argv.mountpoint)] : await seafsMounts();
    if (targets.length === 0) {
      process.stderr.write('seafs: no seafs mount is running\n');
      process.exit(1);
    }
    let failed = 0;
    for (const mnt of targets) {
      const answer = await queryControl(mnt, 'cache-clear');
      let freed: number | null = null;
      try {
        freed = answer ? Number(JSON.parse(answer).freed) : null;
      } catch {
        freed = null;
      }
      if (freed === null || Number.isNaN(freed)) {
        process.stderr.write(`seafs: no seafs mount answers at ${mnt}\n`);
        failed++;
      } else {
        process.stdout.write(`${mnt}: ${fmtBytes(freed)} of downloaded data dropped\n`);
      }
    }
    return exitAfterOutput(failed ? 1 : 0);
  },
};
