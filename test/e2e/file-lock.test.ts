// `seafs lock PATH` / `seafs unlock-file PATH`: Seafile file locks from the
// drive, seen through the API; a file locked by this account stays writable.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { pollUntil } from '../helpers/poll.js';
import { CLI, mountLibrary, q, run, scratchDir, sh } from '../helpers/mount.js';

const ctx = setupE2E(['Locks']);
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });

async function lockState(name: string) {
  const l = await ctx.api.listDir(ctx.repos.Locks, '/');
  if (l.uptodate) throw new Error('unexpected uptodate');
  return l.entries.find((e) => e.name === name);
}

describe('file locks from the drive', () => {
  it('seafs lock and seafs unlock-file set the lock on the server; the locker keeps writing', async () => {
    const m = await mountLibrary(ctx.server, { library: 'Locks', attrTimeout: 1, dirCacheTime: 1 });
    const file = path.join(m.mnt, 'plan.txt');
    await sh(`printf 'v1' > ${q(file)}`);
    await m.unmount().then((r) => expect(r.code, r.err).toBe(0));
    const m2 = await mountLibrary(ctx.server, { library: 'Locks', attrTimeout: 1, dirCacheTime: 1 });
    const f2 = path.join(m2.mnt, 'plan.txt');
    const locked = await run(process.execPath, [CLI, 'lock', f2], { env: env(), allowFail: true });
    expect(locked.code, locked.err).toBe(0);
    expect(locked.out.trim()).toBe(`${f2}: locked`);
    expect(await lockState('plan.txt')).toMatchObject({ is_locked: true, locked_by_me: true });
    // the locker still writes
    await sh(`sleep 1.2; printf 'v2' > ${q(f2)}`);
    const un = await run(process.execPath, [CLI, 'unlock-file', f2], { env: env(), allowFail: true });
    expect(un.code, un.err).toBe(0);
    expect((await lockState('plan.txt'))?.is_locked).toBeFalsy();
    const r = await m2.unmount();
    expect(r.code, r.err).toBe(0);
    expect((await remoteBytes(ctx.api, ctx.repos.Locks, '/plan.txt')).toString()).toBe('v2');
    // a path on no seafs mount: one line, exit 1
    const off = await run(process.execPath, [CLI, 'lock', '/etc/hostname'], { env: env(), allowFail: true });
    expect(off.code).toBe(1);
    expect(off.err.trim()).toBe('seafs: /etc/hostname is not on a seafs mount');
  });

  it("an Office program's lock file locks its document on the server until it is deleted", async () => {
    const m = await mountLibrary(ctx.server, { library: 'Locks', attrTimeout: 1, dirCacheTime: 1 });
    await sh(`printf 'doc' > ${q(m.mnt)}/minutes.odt && printf 'word' > ${q(m.mnt)}/Document.docx`);
    await waitFor(async () => (await lockState('Document.docx')) !== undefined);
    // as LibreOffice and Word make them: created, one line written
    await sh(`printf 'me,host\n' > ${q(m.mnt)}/'.~lock.minutes.odt#' && printf 'me' > ${q(m.mnt)}/'~$cument.docx'`);
    await waitFor(async () => (await lockState('minutes.odt'))?.is_locked === true);
    await waitFor(async () => (await lockState('Document.docx'))?.is_locked === true);
    expect(await lockState('minutes.odt')).toMatchObject({ is_locked: true, locked_by_me: true });
    await sh(`rm ${q(m.mnt)}/'.~lock.minutes.odt#' ${q(m.mnt)}/'~$cument.docx'`);
    await waitFor(async () => !(await lockState('minutes.odt'))?.is_locked);
    await waitFor(async () => !(await lockState('Document.docx'))?.is_locked);
    expect((await m.unmount()).code).toBe(0);
  });
});

/** polls `ok` every 200 ms for up to 20 s; fails with the last state */
async function waitFor(ok: () => Promise<boolean>): Promise<void> {
  if ((await pollUntil(ok, 20_000, 200)) === null) expect(await ok(), 'the state waited for').toBe(true);
}
