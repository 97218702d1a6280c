// The mass-delete guard through a mount (issue 31): with --delete-guard 12,
// `rm -rf` of a tree of 30 files stops with EPERM after 12 deletes and the
// other 18 stay on the server (checked through the API); `seafs status` says
// how to go on; `seafs confirm-delete --cancel` keeps them (the next rm is
// held again after 12); `seafs confirm-delete` lets the rm finish, and the
// library's trash holds all 30.
import { describe, expect, it } from 'vitest';
import { remoteTree } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { CLI, mountLibrary, q, run, sh, testEnv } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';

const ctx = setupE2E(['Guard']);

/** the files under /big on the server */
async function remoteFiles(repo: string): Promise<string[]> {
  const t = await remoteTree(ctx.api, repo, '/').catch(() => new Map());
  return [...t.entries()].filter(([k, v]) => k.startsWith('big/') && v !== 'dir').map(([k]) => k);
}

describe('mass-delete guard', () => {
  it('rm -rf is held after N files, confirm-delete --cancel keeps the rest, confirm-delete lets it finish', async () => {
    const repo = ctx.repos.Guard;
    for (const d of ['d0', 'd1', 'd2']) {
      await ctx.api.mkdir(repo, `/big/${d}`, { createParents: true });
      const files: Record<string, string> = {};
      for (let i = 0; i < 10; i++) files[`f${i}.txt`] = `${d} ${i}\n`;
      const r = await uploadTo(await ctx.api.uploadLink(repo, `/big/${d}`), `/big/${d}`, files);
      expect(r.status, r.text).toBe(200);
    }
    expect(await remoteFiles(repo)).toHaveLength(30);
    const m = await mountLibrary(ctx.server, { library: 'Guard', extraArgs: ['--delete-guard', '12'] });
    const big = q(`${m.mnt}/big`);
    const status = async () =>
      (await run(process.execPath, [CLI, 'status', m.mnt], { env: testEnv(), timeoutMs: 10_000 })).out;
    const confirm = (...extra: string[]) =>
      run(process.execPath, [CLI, 'confirm-delete', m.mnt, ...extra], { env: testEnv(), timeoutMs: 10_000 });

    const first = await sh(`rm -rf ${big}`, { allowFail: true });
    expect(first.code).not.toBe(0);
    expect(first.err).toMatch(/Operation not permitted/);
    expect(await remoteFiles(repo)).toHaveLength(18);
    expect(m.output().match(/mass delete: 12 file\(s\) deleted within 60 s/g)).toHaveLength(1);
    expect(await status()).toMatch(/DELETES HELD .*12 file\(s\) deleted within 60 s.*seafs confirm-delete \S+/);

    const cancelled = await confirm('--cancel');
    expect(cancelled.out).toMatch(/the held deletes are cancelled; the files stay/);
    expect(await status()).not.toMatch(/DELETES HELD/);
    expect(await remoteFiles(repo)).toHaveLength(18);
    // counting starts again: 12 more go, then it holds
    const second = await sh(`rm -rf ${big}`, { allowFail: true });
    expect(second.code).not.toBe(0);
    expect(await remoteFiles(repo)).toHaveLength(6);

    const ok = await confirm();
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/deletes go on/);
    await sh(`rm -rf ${big}`);
    expect(await sh(`ls -A ${q(m.mnt)}`).then((r) => r.out.trim())).toBe('');
    expect(await remoteFiles(repo)).toEqual([]);
    expect(await ctx.api.listDir(repo, '/', {})).toMatchObject({ entries: [] });
    // what was deleted is in the library's trash
    const trash = await ctx.api.libraryTrash(repo, { perPage: 100 });
    const trashed = trash.data.filter((e) => !e.is_dir).map((e) => `${e.parent_dir}${e.obj_name}`);
    expect(trashed.sort()).toEqual(
      ['d0', 'd1', 'd2'].flatMap((d) => [...Array(10).keys()].map((i) => `/big/${d}/f${i}.txt`)).sort(),
    );
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
  }, 60_000);
});
