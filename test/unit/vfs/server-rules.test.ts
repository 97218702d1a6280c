// The mount's adaptation to the server's version and account (src/vfs/common/server-rules.ts):
// Seafile 13 names refused at once with EINVAL, the virtual account id of 11+ used where
// users are compared (quota of the libraries the account owns), and the status line.
import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { apiError, expectErrno, FakeApi, makeVfs, readWhole, writeWhole } from '../../helpers/fake-api.js';
import { serverRulesLine } from '../../../src/cli/control/status-format.js';
import { strictNameProblem } from '../../../src/vfs/common/server-rules.js';

const VIRTUAL = '0123456789abcdef0123456789abcdef@auth.local';
const REFUSED = ['a..b.txt', 'back\\slash.txt', 'smile \u{1F600}.txt', `${'é'.repeat(127)}x.txt`];

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}

describe('names Seafile 13 refuses', () => {
  const cleanups = cleanupAfterEach();

  it('knows each rule', () => {
    for (const n of REFUSED) expect(strictNameProblem(n), n).not.toBeNull();
    for (const n of ['a.b.txt', '.hidden', 'é.txt', 'x'.repeat(255)]) expect(strictNameProblem(n), n).toBeNull();
  });

  it('answers EINVAL at once in create, mkdir and rename on 13.0, with no call to the server and a reason', async () => {
    const api = new FakeApi();
    api.serverVersion = '13.0.25';
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/ok.txt', 'x');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    await until(() => vfs.status().serverRules.version === '13.0.25');
    const before = { ...api.calls };
    for (const name of REFUSED) {
      if (Buffer.byteLength(name) > 255) continue; // ENAMETOOLONG already, on every server
      await expectErrno(vfs.create(`/${name}`, 0o644), 'EINVAL');
      await expectErrno(vfs.mkdir(`/${name}`, 0o755), 'EINVAL');
      await expectErrno(vfs.rename('/ok.txt', `/${name}`), 'EINVAL');
    }
    await expect(vfs.create('/a..b.txt', 0o644)).rejects.toThrow(/refused by Seafile 13\.0\.25 \(it holds "\.\."\)/);
    const changes = Object.keys(api.calls).filter((k) => (api.calls[k] ?? 0) !== (before[k] ?? 0));
    expect(changes.filter((k) => !/^(listDir|serverInfo|accountInfo|getLibrary|listLibraries)$/.test(k))).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['ok.txt']);
  });

  it('a mkdir of such a name before the version is known goes to the server at once: its refusal is EINVAL, not retried', async () => {
    const api = new FakeApi();
    api.refuseMkdirNames = /\.\./;
    api.failNext.set('serverInfo', [apiError('network', 0, 'server info')]);
    api.addLibrary('lib');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    expect(vfs.status().serverRules.version).toBeNull();
    await expectErrno(vfs.mkdir('/a..b', 0o755), 'EINVAL');
    await new Promise((r) => setTimeout(r, 300));
    expect(api.calls.mkdir).toBe(1);
  });

  it('takes them on 12.0', async () => {
    const api = new FakeApi();
    api.serverVersion = '12.0.14';
    const repo = api.addLibrary('lib');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    await until(() => vfs.status().serverRules.version === '12.0.14');
    await writeWhole(vfs, '/a..b.txt', 'two dots');
    await until(() => api.names(repo, '/').includes('a..b.txt'));
  });
});

describe('the account id of Seafile 11+', () => {
  const cleanups = cleanupAfterEach();

  it('charges the quota of a library whose owner is the virtual id, names conflict copies after it, says so in status', async () => {
    const api = new FakeApi();
    api.serverVersion = '11.0.13';
    api.accountEmail = VIRTUAL;
    const repo = api.addLibrary('lib', { owner: VIRTUAL });
    api.putFile(repo, '/big', Buffer.alloc(900));
    api.quotaTotal = 1000;
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib' });
    cleanups.push(cleanup);
    const s = await vfs.statfs('/');
    expect(s.bfree).toBe(0); // 100 bytes left: less than one 1 MiB block, counted as this account's
    expect(s.blocks).toBe(0);
    await until(() => vfs.status().serverRules.virtualIds);
    // a conflict copy is named after the account's id too
    api.putFile(repo, '/conf.txt', 'base\n');
    const fh = await vfs.open('/conf.txt', FC.O_WRONLY | FC.O_TRUNC);
    await vfs.write('/conf.txt', fh, Buffer.from('local\n'), 6, 0);
    api.putFile(repo, '/conf.txt', 'theirs\n');
    await vfs.release('/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    const copy = new RegExp(`^conf \\(SFConflict ${VIRTUAL.replace(/\./g, '\\.')} \\d{4}(-\\d\\d){5}\\)\\.txt$`);
    expect(api.names(repo, '/').filter((n) => copy.test(n))).toHaveLength(1);
    expect(serverRulesLine(vfs.status().serverRules)).toBe(
      'server: Seafile 11.0.13; users compared by the virtual account id (11.0+)',
    );
  });
});

describe('the direct download of Seafile 12+', () => {
  const cleanups = cleanupAfterEach();

  async function setup(version: string) {
    const api = new FakeApi();
    api.serverVersion = version;
    api.directDownloads = true;
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/first.txt', 'the first file');
    api.putFile(repo, '/a.txt', 'version one');
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', diskCacheBytes: 0 });
    cleanups.push(cleanup);
    await until(() => vfs.status().serverRules.version === version);
    // the file server's address comes with the first download link
    expect((await readWhole(vfs, '/first.txt')).toString()).toBe('the first file');
    return { api, repo, vfs };
  }

  it('reads files through the direct URL, with no download link, from 12.0', async () => {
    const { api, vfs } = await setup('12.0.14');
    const links = api.calls.downloadLink ?? 0;
    expect((await readWhole(vfs, '/a.txt')).toString()).toBe('version one');
    expect(api.calls.downloadLink ?? 0).toBe(links);
    expect(api.calls.directDownload ?? 0).toBeGreaterThan(0);
  });

  it('a direct answer of another version than the listing said is read through a link instead: one version, never mixed', async () => {
    const { api, repo, vfs } = await setup('12.0.14');
    expect((await vfs.readdir('/')).sort()).toEqual(['a.txt', 'first.txt']);
    api.putFile(repo, '/a.txt', 'version two!'); // the listing the mount holds still says version one
    const links = api.calls.downloadLink ?? 0;
    const got = (await readWhole(vfs, '/a.txt')).toString();
    // the new version's bytes, up to the size the listing said (as with a download link alone)
    expect(got).toBe('version two');
    expect(api.calls.downloadLink ?? 0).toBe(links + 1);
  });

  it('a file server that does not route the direct URL (404) turns it off for the mount, with one log line', async () => {
    const logs: string[] = [];
    const api = new FakeApi();
    api.serverVersion = '12.0.14';
    api.directDownloads = true;
    api.directMissing = true;
    const repo = api.addLibrary('lib');
    for (const n of ['first', 'b', 'c']) api.putFile(repo, `/${n}.txt`, `content of ${n}`);
    const { vfs, cleanup } = await makeVfs(api, { library: 'lib', diskCacheBytes: 0, log: (l) => logs.push(l) });
    cleanups.push(cleanup);
    await until(() => vfs.status().serverRules.version === '12.0.14');
    for (const n of ['first', 'b', 'c']) expect((await readWhole(vfs, `/${n}.txt`)).toString()).toBe(`content of ${n}`);
    expect(api.calls.directDownload).toBe(1);
    expect(logs.filter((l) => /does not serve direct downloads/.test(l))).toHaveLength(1);
    expect(vfs.status().serverRules.directDownload).toBe(false);
  });

  it('is not used before 12.0', async () => {
    const { api, vfs } = await setup('11.0.13');
    expect((await readWhole(vfs, '/a.txt')).toString()).toBe('version one');
    expect(api.calls.directDownload ?? 0).toBe(0);
  });
});
