// The real server's stop() (test/helpers/real-server.ts) leaves nothing of its instance running: on a busy
// machine `run start` could take a daemon it was still starting for gone and forget it (no pid file), which
// then held its port past `run stop`. stop() ends, by pid, whatever still names the instance folder.
// SEAFS_SKIP_REAL_SERVER=1 skips it with the real server, loudly.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { realServerSkipped, startRealServer } from '../helpers/real-server.js';

describe.skipIf(realServerSkipped())('the real server helper', () => {
  it('stop() ends a daemon of the instance that no pid file names, then removes the folder', async () => {
    const real = await startRealServer();
    // as a forgotten daemon: its own session, the instance folder in its command line
    const orphan = spawn('python3', ['-c', 'import time; time.sleep(300)', `${real.dataDir}/data/forgotten`], {
      stdio: 'ignore',
      detached: true,
    });
    const exited = new Promise<void>((r) => orphan.once('exit', () => r()));
    try {
      for (let i = 0; i < 100 && orphan.exitCode === null && orphan.pid === undefined; i++) await sleep(50);
      expect(orphan.exitCode).toBeNull();
      await real.stop();
      // ended by stop() (SIGTERM, then SIGKILL after 10 s): it has exited by now
      await Promise.race([exited, sleep(15_000)]);
      expect(orphan.exitCode ?? orphan.signalCode).not.toBeNull();
      expect(existsSync(real.dataDir)).toBe(false);
    } finally {
      if (orphan.exitCode === null && orphan.signalCode === null) orphan.kill('SIGKILL');
    }
  }, 300_000);
});
