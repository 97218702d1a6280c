// `seafs bwlimit MOUNTPOINT [RATE]`: the bandwidth limit of a running mount's
// file transfers, changed at once (RATE as --bwlimit takes it: 10M, UP:DOWN,
// off) or, without RATE, shown. Transfers under way keep to the new limit
// from their next chunk.
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import type { RateLimits } from '../../client/bandwidth.js';
import { exitAfterOutput } from '../log.js';
import { fmtBandwidth, parseBwLimit } from '../size-units.js';
import { UserError } from '../user-error.js';
import { queryControl } from './control-socket.js';

interface BwlimitArgv {
  mountpoint: string;
  rate?: string;
}

export const bwlimitCommand: CommandModule<object, BwlimitArgv> = {
  command: 'bwlimit <mountpoint> [rate]',
  describe: 'Change (or show) the bandwidth limit of a running mount: 10M, UP:DOWN (1M:off) or off',
  builder: (y) =>
    y.positional('mountpoint', { type: 'string', demandOption: true }).positional('rate', {
      type: 'string',
      describe: 'bytes per second as --bwlimit takes them (a plain number is KiB/s); none: show the limit',
    }) as never,
  handler: async (argv) => {
    const mnt = resolve(argv.mountpoint);
    const rate = argv.rate === undefined ? '' : String(argv.rate);
    if (rate) {
      try {
        parseBwLimit(rate, 'seafs bwlimit');
      } catch (e) {
        process.stderr.write(`seafs: ${(e as UserError).message}\n`);
        return exitAfterOutput(2);
      }
    }
    const answer = await queryControl(mnt, rate ? `bwlimit ${rate}` : 'bwlimit');
    let limits: RateLimits | null = null;
    try {
      limits = answer && !answer.startsWith('error ') ? (JSON.parse(answer) as RateLimits) : null;
    } catch {
      limits = null;
    }
    if (!limits) {
      const why = answer?.startsWith('error ') ? answer.slice(6) : `no seafs mount answers at ${mnt}`;
      process.stderr.write(`seafs: ${why}\n`);
      return exitAfterOutput(1);
    }
    process.stdout.write(`${mnt}: bandwidth: ${fmtBandwidth(limits)}\n`);
    return exitAfterOutput(0);
  },
};
