// Bandwidth limits and sizes with units through real mounts: `--bwlimit UP:DOWN`
// holds a write's upload and a read's download to their limits (durations
// asserted from below only: N bytes at R bytes/s take at least about N/R),
// `seafs bwlimit` changes them on the running mount and `seafs status` shows
// them, `off` throttles nothing, and `--cache-max-size 10G` (and the same as
// -o options) is accepted and shown. Everything written is read back through
// the API.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256, waitRemoteFile } from '../helpers/api-check.js';
import { CLI, mountLibrary, q, run, scratchDir, sh } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Limited']);
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });
const seafs = (args: string[]) => run(process.execPath, [CLI, ...args], { env: env(), allowFail: true });
const KiB = 1024;
const MiB = 1024 * KiB;
/**
 * The timed transfers: 1 MiB at 512 KiB/s, 2 s, asserted from below at 0.6 of it: the bucket's burst (0.1 s) and
 * the last chunk of each GET (the reader may run up to 4 per file) go unwaited. Unlimited, the read took 0.09 s
 * here and the write 0.58 s (the mount's 0.3 s wait before a new file's upload, and the API's polling).
 */
const SIZE = MiB;
const RATE = 512 * KiB;
const AT_LEAST_MS = 0.6 * (SIZE / RATE) * 1000;

async function seed(files: Record<string, Buffer>): Promise<void> {
  const r = await uploadTo(await ctx.api.uploadLink(ctx.repos.Limited, '/'), '/', files, { replace: true });
  expect(r.status, r.text).toBe(200);
}

/** reads a file of the mount whole (never read before: it comes from the server) and returns its sha256 and the time */
async function timedRead(file: string): Promise<{ sha: string; ms: number }> {
  const t0 = performance.now();
  const r = await sh(`sha256sum ${q(file)}`);
  return { sha: r.out.split(' ')[0], ms: performance.now() - t0 };
}

describe('bandwidth limits of a mount', () => {
  it('--bwlimit UP:DOWN holds uploads; seafs bwlimit changes the limits live and seafs status shows them', async () => {
    const one = randomBytes(SIZE);
    const two = randomBytes(SIZE);
    await seed({ 'one.bin': one, 'two.bin': two });
    const m = await mountLibrary(ctx.server, {
      library: 'Limited',
      extraArgs: ['--bwlimit', `${RATE / KiB}k:off`, '--cache-max-size', '10G'],
    });
    let st = await seafs(['status', m.mnt]);
    expect(st.code, st.err).toBe(0);
    expect(st.out).toContain('  bandwidth: up 512 KiB/s, down off');
    expect(st.out).toMatch(/ {2}cache: .*10\.00 GiB in /);
    const json = JSON.parse((await seafs(['status', m.mnt, '--json'])).out) as {
      bandwidth: unknown;
      cacheMaxBytes: number;
    }[];
    expect(json[0].bandwidth).toEqual({ up: RATE, down: null });
    expect(json[0].cacheMaxBytes).toBe(10 * 1024 * MiB);

    // a write: from the copy to the server holding it takes at least about N/R
    const src = path.join(ctx.src, 'up.bin');
    const up = randomBytes(SIZE);
    writeFileSync(src, up);
    const t0 = performance.now();
    await sh(`cp ${q(src)} ${q(m.mnt)}/up.bin`);
    await waitRemoteFile(ctx.api, ctx.repos.Limited, '/up.bin', up);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(AT_LEAST_MS);

    // downloads are off: the read completes (no timing)
    expect((await timedRead(path.join(m.mnt, 'one.bin'))).sha).toBe(sha256(one));

    // now downloads are limited and uploads are not
    const set = await seafs(['bwlimit', m.mnt, `off:${RATE / KiB}k`]);
    expect(set.code, set.err).toBe(0);
    expect(set.out.trim()).toBe(`${m.mnt}: bandwidth: up off, down 512 KiB/s`);
    st = await seafs(['status', m.mnt]);
    expect(st.out).toContain('  bandwidth: up off, down 512 KiB/s');
    const read = await timedRead(path.join(m.mnt, 'two.bin'));
    expect(read.sha).toBe(sha256(two));
    expect(read.ms).toBeGreaterThanOrEqual(AT_LEAST_MS);

    // uploads are off: a write arrives (no timing)
    const free = randomBytes(SIZE);
    writeFileSync(src, free);
    await sh(`cp ${q(src)} ${q(m.mnt)}/free.bin`);
    await waitRemoteFile(ctx.api, ctx.repos.Limited, '/free.bin', free);

    // without a rate: the limits as they are; a bad rate: one line, exit 2, nothing changed
    expect((await seafs(['bwlimit', m.mnt])).out.trim()).toBe(`${m.mnt}: bandwidth: up off, down 512 KiB/s`);
    const bad = await seafs(['bwlimit', m.mnt, '5 apples']);
    expect(bad.code).toBe(2);
    expect(bad.err.trim()).toBe(
      'seafs: seafs bwlimit takes off, a rate in bytes per second for both directions (10M, 512k, 1.5M; a plain number is KiB/s), or UP:DOWN (1M:off, 512k:4M) (got "5 apples")',
    );
    expect((await seafs(['bwlimit', m.mnt, 'off'])).out.trim()).toBe(`${m.mnt}: bandwidth: up off, down off`);
    expect(m.output()).toContain('bandwidth limit: up 512 KiB/s, down off');
    expect(m.output()).toContain('bandwidth limit now up off, down 512 KiB/s (seafs bwlimit)');

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    // no mount any more: one line, exit 1
    const gone = await seafs(['bwlimit', m.mnt, '1M']);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain(`no seafs mount answers at ${m.mnt}`);
  }, 90_000);

  it('-o bwlimit= and cache_max_size= with units, as fstab gives them', async () => {
    const m = await mountLibrary(ctx.server, {
      library: 'Limited',
      extraArgs: ['-o', 'bwlimit=1M,cache_max_size=512M'],
    });
    const st = await seafs(['status', m.mnt]);
    expect(st.out).toContain('  bandwidth: up 1 MiB/s, down 1 MiB/s');
    expect(st.out).toMatch(/ {2}cache: .*512\.0 MiB in /);
    expect((await m.unmount()).code).toBe(0);
  });
});
