// A mount of a server answering as Seafile Community Edition 10
// (`seafs serve --edition community`): a folder whose name holds ':' moves
// and is renamed into another folder (the old fileops move split its name
// in two), as do names holding '"' (which the server itself cannot move
// between folders), and file locks, which CE lacks, fail with one clear message:
// `seafs lock` names the file and the reason, setfattr/getfattr of the lock
// attribute get ENOTSUP ("Operation not supported"), and the lock request
// that CE answers with a 500 page is never sent.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, remoteNames } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, q, run, scratchDir, sh } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['CE'], { extraArgs: ['--edition', 'community', '--verbose'] });
const env = () => ({ ...process.env, SEAFS_RUNTIME_DIR: path.join(scratchDir(), 'run') });
const lockRequests = () =>
  ctx.server
    .log()
    .split('\n')
    .filter((l) => /^PUT \/api2\/repos\/[^/]+\/file\//.test(l));

describe('a Community Edition server through the mount', () => {
  it('a folder "a:b" with files moves into another folder, then is renamed into a third one', async () => {
    const repo = ctx.repos.CE;
    const m = await mountLibrary(ctx.server, { library: 'CE' });
    const M = (p: string) => path.join(m.mnt, p);
    await sh(`mkdir -p ${q(M('a:b/in:ner'))} ${q(M('dst'))} ${q(M('other'))}`);
    await sh(`printf 'one' > ${q(M('a:b/one.txt'))} && printf 'deep' > ${q(M('a:b/in:ner/two:2.txt'))}`);
    await sh(`mv ${q(M('a:b'))} ${q(M('dst'))}/`);
    expect((await sh(`ls ${q(M(''))} ${q(M('dst'))}`)).out).toBe(`${M('')}:\ndst\nother\n\n${M('dst')}:\na:b\n`);
    await sh(`mv ${q(M('dst/a:b'))} ${q(M('other/c:d'))}`);
    expect((await sh(`cat ${q(M('other/c:d/one.txt'))} ${q(M('other/c:d/in:ner/two:2.txt'))}`)).out).toBe('onedeep');
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
    // the server has it all under the new name, and nothing under the old ones
    expect(await remoteNames(ctx.api, repo, '/')).toEqual(['dst', 'other']);
    expect(await remoteNames(ctx.api, repo, '/dst')).toEqual([]);
    expect(await remoteNames(ctx.api, repo, '/other')).toEqual(['c:d']);
    expect(await remoteNames(ctx.api, repo, '/other/c:d')).toEqual(['in:ner', 'one.txt']);
    expect((await remoteBytes(ctx.api, repo, '/other/c:d/one.txt')).toString()).toBe('one');
    expect((await remoteBytes(ctx.api, repo, '/other/c:d/in:ner/two:2.txt')).toString()).toBe('deep');
  });

  it("a folder and a file whose names hold '\"' move to another folder (the server cannot move such a name itself)", async () => {
    const repo = ctx.repos.CE;
    const m = await mountLibrary(ctx.server, { library: 'CE' });
    const M = (p: string) => path.join(m.mnt, 'quotes', p);
    await sh(`mkdir -p ${q(M('q"x'))} ${q(M('to'))}`);
    await sh(`printf 'in' > ${q(M('q"x/in.txt'))} && printf 'f' > ${q(M('f"y.txt'))}`);
    await sh(`mv ${q(M('q"x'))} ${q(M('to'))}/ && mv ${q(M('f"y.txt'))} ${q(M('to/g"h.txt'))}`);
    expect((await sh(`ls ${q(M(''))} ${q(M('to'))}`)).out).toBe(`${M('')}:\nto\n\n${M('to')}:\ng"h.txt\nq"x\n`);
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
    expect(await remoteNames(ctx.api, repo, '/quotes')).toEqual(['to']);
    expect(await remoteNames(ctx.api, repo, '/quotes/to')).toEqual(['g"h.txt', 'q"x']);
    expect((await remoteBytes(ctx.api, repo, '/quotes/to/q"x/in.txt')).toString()).toBe('in');
    expect((await remoteBytes(ctx.api, repo, '/quotes/to/g"h.txt')).toString()).toBe('f');
  });

  it('seafs lock, unlock-file and the lock attribute say the server has no file locks, and send no lock', async () => {
    const repo = ctx.repos.CE;
    await ctx.api.mkdir(repo, '/locks');
    expect((await uploadTo(await ctx.api.uploadLink(repo, '/locks'), '/locks', { 'plan.txt': 'plan' })).status).toBe(
      200,
    );
    const m = await mountLibrary(ctx.server, { library: 'CE' });
    const file = path.join(m.mnt, 'locks/plan.txt');
    for (const cmd of ['lock', 'unlock-file']) {
      const r = await run(process.execPath, [CLI, cmd, file], { env: env(), allowFail: true });
      expect(r.code).toBe(1);
      expect(r.err.trim()).toBe(`seafs: ${file}: this server does not support file locks`);
    }
    const set = await run('setfattr', ['-n', 'user.seafile.lock', '-v', '1', file], { allowFail: true });
    expect(set.code).not.toBe(0);
    expect(set.err).toMatch(/Operation not supported/);
    const get = await run('getfattr', ['--only-values', '-n', 'user.seafile.lock', file], { allowFail: true });
    expect(get.code).not.toBe(0);
    expect(get.err).toMatch(/Operation not supported/);
    // every other attribute still reads (getfattr -d reads all it lists)
    const dump = await run('getfattr', ['-d', '--absolute-names', file]);
    expect(dump.out).toContain('user.seafile.status="synced"');
    expect(dump.out).not.toContain('locked_by');
    // the request log is there (server-info was asked: the lock support, the times' mode), and holds no lock request
    expect(ctx.server.log().match(/^GET \/api2\/server-info\/ 200/gm)?.length).toBeGreaterThanOrEqual(1);
    expect(lockRequests()).toEqual([]);
    // the file is untouched
    expect((await remoteBytes(ctx.api, repo, '/locks/plan.txt')).toString()).toBe('plan');
    const r = await m.unmount();
    expect(r.code, r.err).toBe(0);
  });
});
