// The drive's core workload against `seafs serve` answering as each Seafile
// version people run (10.0, 11.0, 12.0, 13.0) and with the Go file server:
// copy, edit, rename, delete, a lock, a file past the block threshold (sent
// by blocks), a modification time, and on 13.0 a refused name. One mount per
// version, small files; every result is read back through the API.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { expectRemoteFile, remoteEntries, remoteNames } from '../helpers/api-check.js';
import { writeRandom } from '../helpers/e2e-fixture.js';
import { CLI, cleanupMounts, mountLibrary, q, run, scratchDir, sh } from '../helpers/mount.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const MiB = 1024 * 1024;
const T1 = 1_400_000_000; // 2014-05-13

const PROFILES: {
  name: string;
  args: string[];
  keepsTimes: boolean;
  virtualIds: boolean;
  strictNames: boolean;
  directDownload: boolean;
}[] = [
  {
    name: '10.0.1',
    args: ['--server-version', '10.0.1'],
    keepsTimes: false,
    virtualIds: false,
    strictNames: false,
    directDownload: false,
  },
  {
    name: '11.0.13',
    args: ['--server-version', '11.0.13'],
    keepsTimes: false,
    virtualIds: true,
    strictNames: false,
    directDownload: false,
  },
  {
    name: '12.0.14',
    args: ['--server-version', '12.0.14'],
    keepsTimes: true,
    virtualIds: true,
    strictNames: false,
    directDownload: true,
  },
  {
    name: '13.0.25',
    args: ['--server-version', '13.0.25'],
    keepsTimes: true,
    virtualIds: true,
    strictNames: true,
    directDownload: true,
  },
  {
    name: '13.0.25 --fileserver go',
    args: ['--server-version', '13.0.25', '--fileserver', 'go'],
    keepsTimes: true,
    virtualIds: true,
    strictNames: true,
    directDownload: true,
  },
];

async function until<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) {
      expect(ok(v), `${what}: ${JSON.stringify(v)}`).toBe(true);
      return v;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

afterAll(async () => {
  await cleanupMounts();
});

describe.each(PROFILES)('core workload against Seafile $name', (p) => {
  let server: TestServer;
  let api: SeafileClient;
  let repo: string;
  let src: string;

  beforeAll(async () => {
    server = await startTestServer({ extraArgs: [...p.args, '--verbose'] });
    ({ client: api } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword));
    repo = (await api.createLibrary('Core')).repo_id;
    src = path.join(scratchDir(), `src-${p.name.replace(/\W+/g, '-')}`);
    await sh(`mkdir -p ${q(src)}`);
  });

  afterAll(async () => {
    await api?.close().catch(() => {});
    await server?.stop();
  });

  it('copies, edits, renames, deletes, locks, sends blocks and keeps a time; each read back through the API', async () => {
    const me = (await api.accountInfo()).email;
    expect(me.endsWith('@auth.local')).toBe(p.virtualIds);
    const m = await mountLibrary(server, { library: 'Core', attrTimeout: 0, dirCacheTime: 1 });
    const mnt = m.mnt;
    const env = { ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') };

    // copy, then edit
    const small = path.join(src, 'small.txt');
    writeFileSync(small, 'first version\n');
    await sh(`cp ${q(small)} ${q(mnt)}/small.txt && sync ${q(mnt)}/small.txt`);
    await expectRemoteFile(api, repo, '/small.txt', small);
    await sh(`printf 'second line\\n' >> ${q(mnt)}/small.txt && sync ${q(mnt)}/small.txt`);
    await expectRemoteFile(api, repo, '/small.txt', Buffer.from('first version\nsecond line\n'));

    // rename, delete
    await sh(`mv ${q(mnt)}/small.txt ${q(mnt)}/renamed.txt`);
    await until(
      'rename',
      () => remoteNames(api, repo, '/'),
      (n) => !!n?.includes('renamed.txt') && !n.includes('small.txt'),
    );
    await sh(`printf gone > ${q(mnt)}/doomed.txt && sync ${q(mnt)}/doomed.txt && rm ${q(mnt)}/doomed.txt`);
    await until(
      'delete',
      () => remoteNames(api, repo, '/'),
      (n) => !n?.includes('doomed.txt'),
    );

    // a lock: held by this account's own id (virtual from 11.0), and the locker keeps writing
    const lock = await run(process.execPath, [CLI, 'lock', `${mnt}/renamed.txt`], { env, allowFail: true });
    expect(lock.code, lock.err).toBe(0);
    const locked = (await remoteEntries(api, repo, '/')).find((e) => e.name === 'renamed.txt');
    expect(locked).toMatchObject({ is_locked: true, locked_by_me: true, lock_owner: me });
    await sh(`printf 'while locked\\n' > ${q(mnt)}/renamed.txt && sync ${q(mnt)}/renamed.txt`);
    await expectRemoteFile(api, repo, '/renamed.txt', Buffer.from('while locked\n'));
    const unlock = await run(process.execPath, [CLI, 'unlock-file', `${mnt}/renamed.txt`], { env, allowFail: true });
    expect(unlock.code, unlock.err).toBe(0);

    // a file past the block threshold (8 MiB) goes by blocks: raw blocks, then a commit
    const big = path.join(src, 'big.bin');
    await writeRandom(big, 8 * MiB + 4096);
    await sh(`cp ${q(big)} ${q(mnt)}/big.bin && sync ${q(mnt)}/big.bin`);
    await expectRemoteFile(api, repo, '/big.bin', big);
    expect(server.log()).toMatch(/POST \/seafhttp\/upload-raw-blks-api\//);
    expect(server.log()).toMatch(/POST \/seafhttp\/upload-blks-api\//);

    // a time set here: on the server from 12.0.4, kept by this machine before
    await sh(`touch -d @${T1} ${q(mnt)}/renamed.txt`);
    expect(Number((await run('stat', ['-c', '%Y', `${mnt}/renamed.txt`])).out.trim())).toBe(T1);
    if (p.keepsTimes) {
      await until(
        'mtime on the server',
        async () => (await remoteEntries(api, repo, '/')).find((e) => e.name === 'renamed.txt')?.mtime,
        (t) => t === T1,
      );
    }

    // names Seafile 13 refuses: EINVAL at once, nothing sent
    const odd = await sh(`touch ${q(mnt)}/'two..dots.txt'`, { allowFail: true });
    if (p.strictNames) {
      expect(odd.code).not.toBe(0);
      expect(odd.err).toMatch(/Invalid argument/);
      expect(m.output()).toMatch(/refused by Seafile 13\.0\.25 \(it holds "\.\."\)/);
    } else {
      expect(odd.code, odd.err).toBe(0);
      await sh(`sync ${q(mnt)}/'two..dots.txt'`);
      await until(
        'two..dots.txt',
        () => remoteNames(api, repo, '/'),
        (n) => !!n?.includes('two..dots.txt'),
      );
    }

    // reading back through the mount: from 12.0 through the file server's direct URL, no download link
    await sh(`cmp ${q(big)} ${q(mnt)}/big.bin && grep -q 'while locked' ${q(mnt)}/renamed.txt`);
    expect(/GET \/seafhttp\/repos\/[^ ]*\/files\//.test(server.log())).toBe(p.directDownload);

    // status names the server's version
    const st = await run(process.execPath, [CLI, 'status'], { env, allowFail: true });
    expect(st.out).toContain(`server: Seafile ${p.name.split(' ')[0]}`);

    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect((await remoteNames(api, repo, '/'))!.filter((n) => !n.startsWith('two..'))).toEqual([
      'big.bin',
      'renamed.txt',
    ]);
  });
});
