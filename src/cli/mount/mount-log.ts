// The mount process's log line: at the level its words suggest.
import { guessLevel, logger } from '../log.js';

/** One line in the mount's log (stderr or --log-file), at the level its words suggest; never throws. */
export function log(msg: string): void {
  logger.write(guessLevel(msg), msg);
}
