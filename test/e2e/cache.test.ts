// `seafs cache clear`: drops the downloaded data a running mount keeps on
// disk, and never a file waiting for upload.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, waitRemoteFile } from '../helpers/api-check.js';
import { CLI, mountLibrary, q, run, scratchDir, sh } from '../helpers/mount.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Cached']);
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });

describe('seafs cache clear', () => {
  it('drops what the mount downloaded, keeps what waits for upload, and says so', async () => {
    const m = await mountLibrary(ctx.server, { library: 'Cached' });
    const src = path.join(ctx.src, 'one.bin');
    await writeRandom(src, 1024 * 1024);
    await sh(`cp ${q(src)} ${q(m.mnt)}/one.bin`);
    await waitRemoteFile(ctx.api, ctx.repos.Cached, '/one.bin', src);
    // read through the mount with the page cache dropped: the mount downloads it (and keeps it on disk)
    await sh(`sync; echo 3 > /proc/sys/vm/drop_caches; cat ${q(m.mnt)}/one.bin > /dev/null`);
    const r = await run(process.execPath, [CLI, 'cache', 'clear', m.mnt], { env: env(), allowFail: true });
    expect(r.code, r.err).toBe(0);
    const freed = /: ([\d.]+) (B|KiB|MiB) of downloaded data dropped/.exec(r.out);
    expect(freed, r.out).not.toBeNull();
    expect(Number(freed![1])).toBeGreaterThan(0);
    // a file still open for writing is not touched, and still arrives whole
    const big = path.join(ctx.src, 'pending.bin');
    await writeRandom(big, 3 * 1024 * 1024);
    await sh(
      `exec 3>${q(m.mnt)}/pending.bin; cat ${q(big)} >&3; ${q(process.execPath)} ${q(CLI)} cache clear ${q(m.mnt)} >/dev/null; exec 3>&-`,
      { env: env() },
    );
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect((await remoteBytes(ctx.api, ctx.repos.Cached, '/pending.bin')).length).toBe(3 * 1024 * 1024);
    await waitRemoteFile(ctx.api, ctx.repos.Cached, '/pending.bin', big);
    // no mount: one line, exit 1
    const none = await run(process.execPath, [CLI, 'cache', 'clear', m.mnt], { env: env(), allowFail: true });
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/no seafs mount answers at/);
  });
});
