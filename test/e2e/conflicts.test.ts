// Conflicts through a real mount: a file edited through the drive while
// someone else changes, deletes or renames it (or its folder) on the server,
// and two mounts editing one file. Nothing is overwritten that the mount did
// not see: the server's version keeps the name, the local one is saved as
// `name (SFConflict user time).ext`, and both are checked through the API.
import { open } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes, remoteNames, waitRemoteExists } from '../helpers/api-check.js';
import { mountLibrary, q, sh, type Mount } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Team']);
const CONFLICT = (stem: string, ext: string) =>
  new RegExp(`^${stem} \\(SFConflict admin@seafs\\.test \\d{4}(-\\d\\d){5}\\)\\${ext}$`);

/** Replaces (or creates) a file on the server, as a colleague's client would. */
async function remoteWrite(dir: string, name: string, text: string): Promise<void> {
  const link = await ctx.api.uploadLink(ctx.repos.Team, dir);
  const r = await uploadTo(link, dir, { [name]: text }, { replace: true });
  expect(r.status).toBe(200);
}

/** Opens `file` on the mount, writes `text` over it and leaves it open. */
async function editAndHold(file: string, text: string) {
  const fh = await open(file, 'r+');
  await fh.truncate(0);
  await fh.write(text, 0);
  return fh;
}

async function unmounted(m: Mount): Promise<void> {
  const r = await m.unmount();
  expect(r.code, r.out + r.err).toBe(0);
}

describe('conflicts through the mount', () => {
  it('edit vs remote edit, delete, rename and folder delete: nothing is lost', async () => {
    const repo = ctx.repos.Team;
    await ctx.api.mkdir(repo, '/e');
    await ctx.api.mkdir(repo, '/gone/deep', { createParents: true });
    for (const [dir, name] of [
      ['/e', 'edited.txt'],
      ['/e', 'deleted.txt'],
      ['/e', 'renamed.txt'],
      ['/gone/deep', 'kept.txt'],
    ]) {
      await remoteWrite(dir, name, 'base\n');
    }
    const m = await mountLibrary(ctx.server, { library: 'Team', dirCacheTime: 1, attrTimeout: 1 });
    const M = (p: string) => path.join(m.mnt, p);
    // the admin's server is the account of the mount, so conflict copies carry its e-mail
    const handles = [
      await editAndHold(M('e/edited.txt'), 'local edit\n'),
      await editAndHold(M('e/deleted.txt'), 'local after delete\n'),
      await editAndHold(M('e/renamed.txt'), 'local after rename\n'),
      await editAndHold(M('gone/deep/kept.txt'), 'local in a deleted folder\n'),
    ];
    await remoteWrite('/e', 'edited.txt', 'their edit\n');
    await ctx.api.deleteFile(repo, '/e/deleted.txt');
    await ctx.api.renameFile(repo, '/e/renamed.txt', 'renamed-by-them.txt');
    await ctx.api.deleteDir(repo, '/gone');
    for (const fh of handles) await fh.close();
    await unmounted(m);

    expect((await remoteBytes(ctx.api, repo, '/e/edited.txt')).toString()).toBe('their edit\n');
    const names = (await remoteNames(ctx.api, repo, '/e'))!;
    const copies = names.filter((n) => CONFLICT('edited', '.txt').test(n));
    expect(copies, names.join(', ')).toHaveLength(1);
    expect((await remoteBytes(ctx.api, repo, `/e/${copies[0]}`)).toString()).toBe('local edit\n');
    expect((await remoteBytes(ctx.api, repo, '/e/deleted.txt')).toString()).toBe('local after delete\n');
    expect((await remoteBytes(ctx.api, repo, '/e/renamed.txt')).toString()).toBe('local after rename\n');
    expect((await remoteBytes(ctx.api, repo, '/e/renamed-by-them.txt')).toString()).toBe('base\n');
    expect((await remoteBytes(ctx.api, repo, '/gone/deep/kept.txt')).toString()).toBe('local in a deleted folder\n');
    expect(names.sort()).toEqual(['deleted.txt', 'edited.txt', copies[0], 'renamed-by-them.txt', 'renamed.txt'].sort());
    // one log line for the conflict, naming both
    expect(m.output()).toMatch(/conflict: \/e\/edited\.txt: .*saved as edited \(SFConflict/);
  });

  it('two mounts editing the same file: the later upload becomes the conflict copy', async () => {
    const repo = ctx.repos.Team;
    await remoteWrite('/', 'shared.md', 'base\n');
    const a = await mountLibrary(ctx.server, { library: 'Team' });
    const b = await mountLibrary(ctx.server, { library: 'Team' });
    const fa = await editAndHold(path.join(a.mnt, 'shared.md'), 'from A\n');
    const fb = await editAndHold(path.join(b.mnt, 'shared.md'), 'from B\n');
    await fa.close();
    await unmounted(a);
    expect((await remoteBytes(ctx.api, repo, '/shared.md')).toString()).toBe('from A\n');
    await fb.close();
    await unmounted(b);
    expect((await remoteBytes(ctx.api, repo, '/shared.md')).toString()).toBe('from A\n');
    const copies = (await remoteNames(ctx.api, repo, '/'))!.filter((n) => CONFLICT('shared', '.md').test(n));
    expect(copies).toHaveLength(1);
    expect((await remoteBytes(ctx.api, repo, `/${copies[0]}`)).toString()).toBe('from B\n');
  });

  it('the mount shows the server version under the name and the copy beside it', async () => {
    const repo = ctx.repos.Team;
    await remoteWrite('/', 'view.txt', 'base\n');
    const m = await mountLibrary(ctx.server, { library: 'Team', dirCacheTime: 1, attrTimeout: 1 });
    const fh = await editAndHold(path.join(m.mnt, 'view.txt'), 'mine\n');
    await remoteWrite('/', 'view.txt', 'theirs\n');
    await fh.close();
    // the conflict copy lands in the background; then the folder is listed afresh
    let copy = '';
    for (let i = 0; i < 100 && !copy; i++) {
      copy = (await remoteNames(ctx.api, repo, '/'))!.find((n) => CONFLICT('view', '.txt').test(n)) ?? '';
      if (!copy) await new Promise((r) => setTimeout(r, 100));
    }
    expect(copy).not.toBe('');
    await waitRemoteExists(ctx.api, repo, `/${copy}`, true);
    await new Promise((r) => setTimeout(r, 1500)); // past the attribute and listing cache times
    expect((await sh(`cat ${q(path.join(m.mnt, 'view.txt'))}`)).out).toBe('theirs\n');
    expect((await sh(`cat ${q(path.join(m.mnt, copy))}`)).out).toBe('mine\n');
    await unmounted(m);
  });
});
