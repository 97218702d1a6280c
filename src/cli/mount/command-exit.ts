// How the mount commands end on an error: one line on stderr (and in the log
// file), the waiting --daemon parent told, exit status 1.
import { closeSync, writeSync } from 'node:fs';
import { logger, printErr } from '../log.js';
import { UserError } from '../user-error.js';

export function fail(e: unknown): never {
  const msg = e instanceof UserError ? e.message : ((e as Error)?.stack ?? String(e));
  if (logger.file) logger.error(msg);
  printErr(`seafs: ${msg}\n`);
  notifyReady(`err ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

/** In a --daemon child: tell the waiting parent how the mount went. */
export function notifyReady(line: string): void {
  const fd = Number(process.env.SEAFS_READY_FD);
  if (!fd) return;
  delete process.env.SEAFS_READY_FD;
  try {
    writeSync(fd, line.replace(/\n/g, ' ') + '\n');
    closeSync(fd);
  } catch {
    // the parent is gone
  }
}
