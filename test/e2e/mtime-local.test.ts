// Modification times on a server that ignores last_modify (seafile-server
// before 12.0.4; `seafs serve --server-version 10.0.1` behaves so): the mount
// keeps the times set through it in its cache dir. rsync -a of a tree with old
// times: stat shows them although the server holds the upload times; after a
// remount with the same cache dir a second rsync -a sends nothing and stat
// still shows them; a new version uploaded through the API shows the server's
// time. Every file is checked through the API.
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectRemoteFile, remoteEntries, waitRemoteFile } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, run, scratchDir, sleep, testEnv } from '../helpers/mount.js';

const ctx = setupE2E(['Times'], { extraArgs: ['--server-version', '10.0.1'] });

const T = Date.UTC(2020, 0, 1) / 1000; // touch -d 2020-01-01 (UTC)
const FILES = ['a.txt', 'b.bin', 'sub/c.txt', 'sub/deeper/d.txt'];

/** the files an rsync run sent (itemized lines of files transferred: `<f` / `>f`) */
const sent = (out: string) => out.split('\n').filter((l) => /^[<>]f/.test(l));
const stamp = async (p: string) => Number((await run('stat', ['-c', '%Y', p])).out.trim());

/** the mtime stat shows for `p`, polled until it is `want` or 10 s pass */
async function stampOnce(p: string, want: number): Promise<number> {
  let got = await stamp(p);
  for (const end = Date.now() + 10_000; got !== want && Date.now() < end; got = await stamp(p)) await sleep(100);
  return got;
}

async function mtimeStatus(mnt: string): Promise<{ json: { mode: string; basis: string }; text: string }> {
  const j = await run(process.execPath, [CLI, 'status', '--json', mnt], { env: testEnv(), timeoutMs: 10_000 });
  const t = await run(process.execPath, [CLI, 'status', mnt], { env: testEnv(), timeoutMs: 10_000 });
  return { json: (JSON.parse(j.out) as { mtimes: { mode: string; basis: string } }[])[0].mtimes, text: t.out };
}

describe('modification times kept by this machine (server < 12.0.4)', () => {
  it('rsync -a keeps its times across a remount: the second run sends nothing; a change made elsewhere wins', async () => {
    expect((await ctx.api.serverInfo()).version).toBe('10.0.1');
    const repo = ctx.repos.Times;
    const tree = path.join(ctx.src, 'tree');
    mkdirSync(path.join(tree, 'sub/deeper'), { recursive: true });
    for (const [i, n] of FILES.entries()) {
      writeFileSync(path.join(tree, n), n.endsWith('.bin') ? Buffer.alloc(300_000, i) : `file ${n}\n`);
      utimesSync(path.join(tree, n), T + i * 3600, T + i * 3600);
    }
    const cacheDir = mkdtempSync(path.join(scratchDir(), 'cache-kept-'));
    // dir-cache-time 0: every stat lists the folder on the server afresh
    const opts = { library: 'Times', attrTimeout: 0, dirCacheTime: 0, cacheDir };

    const m1 = await mountLibrary(ctx.server, opts);
    const first = await run('rsync', ['-a', '--itemize-changes', `${tree}/`, `${m1.mnt}/synced/`]);
    expect(sent(first.out)).toHaveLength(FILES.length);
    for (const [i, n] of FILES.entries()) expect(await stamp(`${m1.mnt}/synced/${n}`), n).toBe(T + i * 3600);
    // on the server: the content, with the upload's time (the server ignored the times sent)
    for (const n of FILES) await waitRemoteFile(ctx.api, repo, `/synced/${n}`, path.join(tree, n));
    for (const [i, n] of FILES.entries()) {
      const e = (await remoteEntries(ctx.api, repo, path.posix.dirname(`/synced/${n}`))).find(
        (x) => x.name === path.posix.basename(n),
      );
      expect(e!.mtime, n).toBeGreaterThan(T + i * 3600 + 86_400);
    }
    // listed afresh, the mount still shows the times set
    for (const [i, n] of FILES.entries()) expect(await stamp(`${m1.mnt}/synced/${n}`), n).toBe(T + i * 3600);
    const st = await mtimeStatus(m1.mnt);
    expect(st.json).toMatchObject({ mode: 'local', basis: 'checked' });
    expect(st.text).toContain(
      'modification times: kept by this machine (the server ignores them: seafile-server < 12.0.4)',
    );
    expect((await m1.unmount()).code).toBe(0);

    const m2 = await mountLibrary(ctx.server, opts);
    for (const [i, n] of FILES.entries()) expect(await stamp(`${m2.mnt}/synced/${n}`), n).toBe(T + i * 3600);
    const second = await run('rsync', ['-a', '--itemize-changes', `${tree}/`, `${m2.mnt}/synced/`]);
    expect(sent(second.out)).toEqual([]);
    for (const [i, n] of FILES.entries()) expect(await stamp(`${m2.mnt}/synced/${n}`), n).toBe(T + i * 3600);

    // a new version of a.txt uploaded through the API: the server's time shows, the others keep theirs
    const changed = path.join(ctx.src, 'a-changed.txt');
    writeFileSync(changed, 'changed through the API\n');
    await ctx.api.update(await ctx.api.updateLink(repo, '/synced'), '/synced/a.txt', changed);
    const serverTime = (await remoteEntries(ctx.api, repo, '/synced')).find((x) => x.name === 'a.txt')!.mtime;
    expect(serverTime).toBeGreaterThan(T + 86_400);
    // (the kernel may answer from its attributes for 0.1 s, the shortest the mount gives it)
    expect(await stampOnce(`${m2.mnt}/synced/a.txt`, serverTime)).toBe(serverTime);
    expect(await stamp(`${m2.mnt}/synced/sub/c.txt`)).toBe(T + 2 * 3600);
    expect((await m2.unmount()).code).toBe(0);

    await expectRemoteFile(ctx.api, repo, '/synced/a.txt', changed);
    for (const n of FILES.slice(1)) await expectRemoteFile(ctx.api, repo, `/synced/${n}`, path.join(tree, n));
  });
});
