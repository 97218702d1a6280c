// The log options of mount and demo (--log-level, --log-file, -v), and the
// setup of the logger from them.
import { resolve } from 'node:path';
import type { Options } from 'yargs';
import { LOG_LEVELS, logger, type LogLevel } from '../log.js';
import { UserError } from '../user-error.js';

/** The log options of mount and demo. */
export interface LogArgv {
  logLevel?: LogLevel;
  logFile?: string;
  verbose?: boolean;
}

export const LOG_OPTIONS = {
  'log-level': { choices: LOG_LEVELS, describe: 'least important messages logged (default info)' },
  'log-file': {
    type: 'string',
    describe: 'append timestamped log lines to this file instead of stderr (kept under 10 MiB, then F.1)',
  },
  verbose: { alias: 'v', type: 'boolean', describe: 'the same as --log-level debug' },
} satisfies Record<string, Options>;

/** Sends the log where the options say; a log file that cannot be opened is a clear error. */
export function setupLog(argv: LogArgv): void {
  const file = argv.logFile ? resolve(argv.logFile) : undefined;
  try {
    logger.configure({ level: argv.logLevel ?? (argv.verbose ? 'debug' : 'info'), file });
  } catch (e) {
    throw new UserError(
      `cannot open the log file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}
