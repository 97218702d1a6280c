// The read path under faults: every byte RemoteReader returns must be the
// file's, whatever the server does (see reader-stress.ts). The suite runs a
// few seeds; SEAFS_STRESS_SEEDS=N (and SEAFS_STRESS_FROM=S) runs many more,
// SEAFS_STRESS_SCALE=k makes each run longer, SEAFS_STRESS_LOG=file appends
// each run's summary to a file as it ends.
import { appendFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runStress } from './reader-stress.js';

const from = Number(process.env.SEAFS_STRESS_FROM ?? 1);
const count = Number(process.env.SEAFS_STRESS_SEEDS ?? 6);
const scale = Number(process.env.SEAFS_STRESS_SCALE ?? 0.5);

describe('reader stress: exact bytes under stalls, drops, expired links, eviction', () => {
  for (let seed = from; seed < from + count; seed++) {
    it(`seed ${seed}`, async () => {
      const r = await runStress(seed, { scale });
      const summary = `seed ${seed} ${r.config}\n${r.reads} reads, ${r.bytes} bytes in ${r.ms} ms; server ${JSON.stringify(r.server)}; reader ${JSON.stringify(r.reader)}`;
      const log = process.env.SEAFS_STRESS_LOG;
      if (log)
        appendFileSync(
          log,
          `${summary}\nwrong ${r.wrong.length}: ${r.wrong.slice(0, 5).join('; ')}\nfailed ${r.failed.length}: ${r.failed.slice(0, 5).join('; ')}\n\n`,
        );
      expect(r.wrong, summary).toEqual([]);
      expect(r.failed, summary).toEqual([]);
      expect(r.reads).toBeGreaterThan(0);
    }, 120_000);
  }
});
