// An upload that fails because the file changed under it (a truncate shrank
// the temp file while it was being sent) is no failure to report: close()
// succeeds and the new version is uploaded.
import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, gate, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

describe('upload interrupted by a change of the file', () => {
  const cleanups = cleanupAfterEach();

  it('ftruncate during the upload: close() does not fail, the truncated file is uploaded', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    // a long retry pause: a failure recorded by the first attempt would still be there at close
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 30_000 } });
    cleanups.push(m.cleanup);
    const { vfs } = m;
    const g = gate();
    let first = true;
    api.uploadGate = async () => {
      if (!first) return;
      first = false;
      await g.wait();
      throw new Error('/tmp/x shrank during upload'); // what the real upload says when the temp file shrinks
    };
    const data = Buffer.alloc(2_000_000, 9);
    await writeWhole(vfs, '/t.bin', data);
    await sleep(20); // the upload of the written version is waiting in the gate
    expect(api.calls.upload).toBe(1);
    const fh = await vfs.open('/t.bin', FC.O_WRONLY);
    await vfs.ftruncate('/t.bin', fh, 1000);
    g.open();
    const s = vfs.writeBack.get(repo, '/t.bin')!;
    for (let i = 0; i < 200 && s.running && !s.lastError; i++) await sleep(5);
    expect(s.lastError).toBeNull();
    expect(s.running).toBeNull();
    await vfs.flush('/t.bin', fh); // threw EIO ("earlier upload failed") before
    await vfs.release('/t.bin', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/t.bin')!.equals(data.subarray(0, 1000))).toBe(true);
  });
});
