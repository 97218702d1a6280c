// Owners and modes of a mount: --uid/--gid/--umask as `stat` shows them,
// chmod/chown accepted without change, and --allow-other with
// default_permissions: the kernel lets the --uid user write and keeps
// another user to reading. Every file written is checked through the API.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectRemoteFile, remoteExists, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Owned']);

/** `stat -c '%u %g %a'` of each path */
async function statOf(...paths: string[]): Promise<string[]> {
  const r = await run('stat', ['-c', '%u %g %a', ...paths]);
  return r.out.trim().split('\n');
}

describe('owners and modes', () => {
  it('stat shows --uid, --gid and --umask; chmod and chown succeed and change nothing', async () => {
    const m = await mountLibrary(ctx.server, {
      library: 'Owned',
      extraArgs: ['--uid', '1234', '--gid', '2345', '--umask', '027'],
    });
    const f = path.join(ctx.src, 'owned.txt');
    writeFileSync(f, 'owned by 1234\n');
    await sh(`mkdir ${q(m.mnt)}/dir && cp ${q(f)} ${q(m.mnt)}/dir/owned.txt`);
    expect(await statOf(m.mnt, `${m.mnt}/dir`, `${m.mnt}/dir/owned.txt`)).toEqual([
      '1234 2345 750',
      '1234 2345 750',
      '1234 2345 640',
    ]);
    await sh(`chmod 755 ${q(m.mnt)}/dir/owned.txt && chown 0:0 ${q(m.mnt)}/dir/owned.txt`);
    expect(await statOf(`${m.mnt}/dir/owned.txt`)).toEqual(['1234 2345 640']);
    // cp -p keeps the content; the mode it asks for is not kept
    const script = path.join(ctx.src, 'run.sh');
    writeFileSync(script, '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await sh(`cp -p ${q(script)} ${q(m.mnt)}/run.sh`);
    expect(await statOf(`${m.mnt}/run.sh`)).toEqual(['1234 2345 640']);
    expect((await m.unmount()).code).toBe(0);
    await expectRemoteFile(ctx.api, ctx.repos.Owned, '/dir/owned.txt', f);
    await expectRemoteFile(ctx.api, ctx.repos.Owned, '/run.sh', script);
  });

  it('--allow-other mounts with default_permissions: the --uid user writes, another user only reads', async () => {
    const m = await mountLibrary(ctx.server, {
      library: 'Owned',
      attrTimeout: 0,
      extraArgs: ['--allow-other', '--uid', '1234', '--gid', '1234'],
    });
    const opts = (await run('findmnt', ['-n', '-o', 'OPTIONS', m.mnt])).out;
    expect(opts).toMatch(/default_permissions/);
    expect(opts).toMatch(/allow_other/);
    // the mount point's parents must let other users through (the scratch dir is the test's own)
    await sh(`chmod o+x ${q(path.dirname(m.mnt))} ${q(path.dirname(path.dirname(m.mnt)))}`);
    const as = (uid: number, script: string) =>
      run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sh', '-c', script], { allowFail: true });
    const byOwner = await as(1234, `echo 'written by 1234' > ${q(m.mnt)}/by-1234.txt`);
    expect(byOwner.code, byOwner.err).toBe(0);
    const other = await as(4321, `cat ${q(m.mnt)}/by-1234.txt && echo more >> ${q(m.mnt)}/by-1234.txt`);
    expect(other.out).toBe('written by 1234\n');
    expect(other.code).not.toBe(0);
    expect(other.err).toMatch(/Permission denied/);
    const create = await as(4321, `echo x > ${q(m.mnt)}/by-4321.txt`);
    expect(create.code).not.toBe(0);
    expect(create.err).toMatch(/Permission denied/);
    expect((await m.unmount()).code).toBe(0);
    await waitRemoteFile(ctx.api, ctx.repos.Owned, '/by-1234.txt', Buffer.from('written by 1234\n'));
    expect(await remoteExists(ctx.api, ctx.repos.Owned, '/by-4321.txt')).toBe(false);
  });
});
