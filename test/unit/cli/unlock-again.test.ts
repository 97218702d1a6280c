// The mount's side of library passwords sent again: the interval switch and
// the log lines (one per unlock the server made necessary, the timed ones at
// debug level, failures as warnings), naming the library, never the password.
import { describe, expect, it } from 'vitest';
import { unlockAgainLog, unlockRefreshMs } from '../../../src/cli/mount/password-resend.js';
import type { Library } from '../../../src/client/types.js';

describe('SEAFS_UNLOCK_REFRESH_SEC', () => {
  it('takes positive seconds, and leaves anything else to the default', () => {
    expect(unlockRefreshMs({ SEAFS_UNLOCK_REFRESH_SEC: '6' })).toBe(6000);
    expect(unlockRefreshMs({ SEAFS_UNLOCK_REFRESH_SEC: '0.5' })).toBe(500);
    for (const v of [undefined, '', '0', '-3', 'soon'])
      expect(unlockRefreshMs({ SEAFS_UNLOCK_REFRESH_SEC: v })).toBe(undefined);
  });
});

describe('unlockAgainLog', () => {
  it('names the library and gives each kind of event its level', async () => {
    const lines: [string, string | undefined][] = [];
    const libs = new Map([['r1', { id: 'r1', name: 'Vault' } as Library]]);
    const tell = unlockAgainLog(
      async (id) => libs.get(id),
      (msg, level) => lines.push([msg, level]),
    );
    tell({ repo: 'r1', reason: 'refused' });
    tell({ repo: 'r1', reason: 'timer' });
    tell({ repo: 'gone', reason: 'timer', error: new Error('unlock library failed (HTTP 400): Incorrect password') });
    await new Promise((r) => setTimeout(r, 10));
    expect(lines).toEqual([
      [
        'library "Vault": the server had forgotten its password (an hour after it was given, or a restart); sent it again',
        undefined,
      ],
      ['library "Vault": its password sent again, before the server forgets it', 'debug'],
      [
        'library "gone": sending its password again failed (unlock library failed (HTTP 400): Incorrect password); its files may answer EACCES until it works',
        'warn',
      ],
    ]);
  });
});
