// Names through a real mount of `seafs serve`, which stores them as a real CE
// 10.0 does (NFC-normalised; upload names cut at the last backslash; upload
// names over 249 bytes refused with 500): NFD names written by cp, touch,
// mkdir and rsync land once under their NFC name and are found by either
// spelling; a second rsync -a sends nothing; a file named with a backslash and
// a 252-byte name are stored under their own name; backslash folders and names
// whose bytes are not UTF-8 are refused with EINVAL and a log line. Every file
// is read back through the API.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { remoteNames, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, type Mount } from '../helpers/mount.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Names']);
const NFD = 'e\u0301';
const NFC = '\u00e9';
const hex = (s: string) => Buffer.from(s).toString('hex');

describe('names through a mount', () => {
  let m: Mount;
  let repo: string;
  beforeAll(async () => {
    repo = ctx.repos.Names;
    // a folder named with a backslash, as the web interface can make one (before the mount lists the root);
    // nothing can be put inside it through the web API: the server would put it in /s/f
    await ctx.api.mkdir(repo, '/s\\f');
    m = await mountLibrary(ctx.server, { library: 'Names' });
  });
  const M = (p = '') => path.join(m.mnt, p);

  it('cp, touch and mkdir of NFD names: one NFC entry each, found by either spelling, one copy on the server', async () => {
    const local = path.join(ctx.src, `caf${NFD}.txt`);
    writeFileSync(local, 'coffee\n');
    await sh(`mkdir ${q(M())}/tools && cp ${q(local)} ${q(M('tools'))}/ && touch ${q(M(`tools/t${NFD}`))}`);
    await sh(`mkdir ${q(M(`tools/d${NFD}`))} && cp ${q(local)} ${q(M(`tools/d${NFD}`))}/`);
    // ls shows the NFC bytes, once each
    const ls = (await sh(`ls -1 ${q(M('tools'))}`)).out.split('\n').filter(Boolean);
    expect(ls.map(hex).sort()).toEqual([`caf${NFC}.txt`, `d${NFC}`, `t${NFC}`].map(hex).sort());
    for (const name of [`caf${NFD}.txt`, `caf${NFC}.txt`, `d${NFD}/caf${NFD}.txt`, `d${NFC}/caf${NFC}.txt`]) {
      expect((await sh(`stat -c %s ${q(M(`tools/${name}`))}`)).out.trim(), name).toBe('7');
    }
    expect((await sh(`stat -c %F ${q(M(`tools/d${NFD}`))}`)).out.trim()).toBe('directory');
    await waitRemoteFile(ctx.api, repo, `/tools/caf${NFC}.txt`, local);
    await waitRemoteFile(ctx.api, repo, `/tools/d${NFC}/caf${NFC}.txt`, local);
    await waitRemoteFile(ctx.api, repo, `/tools/t${NFC}`, Buffer.alloc(0));
    expect((await remoteNames(ctx.api, repo, '/tools'))!.map(hex).sort()).toEqual(
      [`caf${NFC}.txt`, `d${NFC}`, `t${NFC}`].map(hex).sort(),
    );
    expect((await remoteNames(ctx.api, repo, `/tools/d${NFC}`))!.map(hex)).toEqual([hex(`caf${NFC}.txt`)]);
    // the mount said nothing about names landing elsewhere
    expect(m.output()).not.toMatch(/landed as|conflict/);
  });

  it('rsync -a of an NFD tree twice: the second run transfers nothing, the server holds one copy of each', async () => {
    const tree = path.join(ctx.src, 'nfd-tree');
    mkdirSync(path.join(tree, `sub${NFD}`), { recursive: true });
    writeFileSync(path.join(tree, `r${NFD}sum${NFD}.txt`), 'resume\n');
    writeFileSync(path.join(tree, `sub${NFD}`, `n${NFD}e`), 'inner\n');
    await run('rsync', ['-a', `${tree}/`, `${M('synced')}/`]);
    const second = await run('rsync', ['-ai', '--stats', `${tree}/`, `${M('synced')}/`]);
    expect(second.out).toMatch(/Number of regular files transferred: 0\n/);
    expect(second.out.split('\n').filter((l) => /^[<>ch.][fd]/.test(l) && !/^\.d\.\.t/.test(l))).toEqual([]);
    await waitRemoteFile(ctx.api, repo, `/synced/r${NFC}sum${NFC}.txt`, Buffer.from('resume\n'));
    await waitRemoteFile(ctx.api, repo, `/synced/sub${NFC}/n${NFC}e`, Buffer.from('inner\n'));
    expect((await remoteNames(ctx.api, repo, '/synced'))!.map(hex).sort()).toEqual(
      [`r${NFC}sum${NFC}.txt`, `sub${NFC}`].map(hex).sort(),
    );
    expect((await remoteNames(ctx.api, repo, `/synced/sub${NFC}`))!.map(hex)).toEqual([hex(`n${NFC}e`)]);
  });

  it('a file named with a backslash and a 252-byte name are stored under their own name', async () => {
    const long = 'L'.repeat(248) + '.txt';
    await sh(`mkdir ${q(M('odd'))} && printf back > ${q(M('odd/a\\b.txt'))} && printf long > ${q(M(`odd/${long}`))}`);
    await waitRemoteFile(ctx.api, repo, '/odd/a\\b.txt', Buffer.from('back'));
    await waitRemoteFile(ctx.api, repo, `/odd/${long}`, Buffer.from('long'));
    expect((await remoteNames(ctx.api, repo, '/odd'))!.sort()).toEqual([long, 'a\\b.txt'].sort());
    // written again, each is updated in place
    await sh(`printf again > ${q(M(`odd/${long}`))} && printf again > ${q(M('odd/a\\b.txt'))}`);
    await waitRemoteFile(ctx.api, repo, `/odd/${long}`, Buffer.from('again'));
    await waitRemoteFile(ctx.api, repo, '/odd/a\\b.txt', Buffer.from('again'));
    expect((await remoteNames(ctx.api, repo, '/odd'))!.sort()).toEqual([long, 'a\\b.txt'].sort());
  });

  it('no folder gets a backslash name, and nothing changes inside one the server holds: EINVAL', async () => {
    const fails = async (script: string) => {
      const r = await sh(script, { allowFail: true });
      expect(r.code, script).not.toBe(0);
      expect(r.err, script).toMatch(/Invalid argument/);
    };
    await fails(`mkdir ${q(M('x\\y'))}`);
    await fails(`printf x > ${q(M('s\\f/new.txt'))}`);
    await fails(`mkdir ${q(M('s\\f/sub'))}`);
    expect((await sh(`ls -A ${q(M('s\\f'))}`)).out).toBe('');
    expect((await remoteNames(ctx.api, repo, '/s\\f'))!).toEqual([]);
    expect((await remoteNames(ctx.api, repo, '/'))!.filter((n) => n.includes('\\') || n === 's')).toEqual(['s\\f']);
  });

  it('a name whose bytes are not UTF-8 is refused with EINVAL and one log line; nothing is stored', async () => {
    const before = m.output();
    const r = await sh(`touch ${q(M())}/$'bad\\xff.txt'`, { allowFail: true });
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/Invalid argument/);
    const r2 = await sh(`mkdir ${q(M())}/$'bad\\xfe'`, { allowFail: true });
    expect(r2.err).toMatch(/Invalid argument/);
    const added = m.output().slice(before.length);
    expect(added.split('\n').filter((l) => /not valid UTF-8/.test(l))).toHaveLength(2);
    expect((await remoteNames(ctx.api, repo, '/'))!.filter((n) => n.startsWith('bad'))).toEqual([]);
  });
});
