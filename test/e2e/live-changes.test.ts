// Changes pushed by the notification server: two mounts of one library whose
// listings would otherwise live 10 minutes (--dir-cache-time 600), so that
// only a pushed change can show in time. A file written through one mount is
// listed by the other; a lock taken through the API shows in the other's
// user.seafile.locked_by; a change made while the server was restarted (the
// websocket cut) shows once the mount subscribes again; seafs status says
// how changes arrive. Against a server without a notification server, the
// mount says it polls, and its listings follow the cache time as before.
import { describe, expect, it } from 'vitest';
import { expectRemoteFile, waitRemoteExists } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { pollUntil } from '../helpers/poll.js';
import { CLI, mountLibrary, q, run, sh, testEnv, type Mount } from '../helpers/mount.js';
import { startTestServer, uploadTo } from '../helpers/server.js';
import { SeafileClient } from '../../src/client/client.js';

const ctx = setupE2E(['Shared']);
/** long enough that nothing shows by the cache time running out during a test */
const LONG = { library: 'Shared', dirCacheTime: 600, attrTimeout: 0 };

const within = (ms: number, check: () => Promise<boolean>) => pollUntil(check, ms);

const listed = async (m: Mount, dir: string) => (await sh(`ls -A ${q(`${m.mnt}${dir}`)}`)).out.split('\n');

async function put(api: SeafileClient, repo: string, dir: string, name: string, content: string) {
  const r = await uploadTo(await api.uploadLink(repo, dir), dir, { [name]: content });
  expect(r.status).toBe(200);
}

async function status(m: Mount): Promise<string> {
  return (await run(process.execPath, [CLI, 'status', m.mnt], { allowFail: true, env: testEnv() })).out;
}

describe('changes pushed by the notification server', () => {
  it('a file written through one mount is listed by the other; a lock shows; a cut feed loses nothing', async () => {
    await ctx.api.mkdir(ctx.repos.Shared, '/work');
    const a = await mountLibrary(ctx.server, LONG);
    const b = await mountLibrary(ctx.server, LONG);
    // b holds the folder's listing (for 10 minutes without notifications)
    expect(await listed(b, '/work')).toEqual(['']);
    expect(await within(10_000, async () => (await status(b)).includes('pushed by the server'))).not.toBeNull();

    await sh(`echo from-a > ${q(a.mnt)}/work/new.txt`);
    await waitRemoteExists(ctx.api, ctx.repos.Shared, '/work/new.txt', true);
    const seen = await within(10_000, async () => (await listed(b, '/work')).includes('new.txt'));
    expect(seen, 'b lists the file a wrote').not.toBeNull();
    console.log(`live-changes: listed by the second mount ${seen} ms after it was on the server`);
    expect((await sh(`cat ${q(b.mnt)}/work/new.txt`)).out).toBe('from-a\n');
    await expectRemoteFile(ctx.api, ctx.repos.Shared, '/work/new.txt', Buffer.from('from-a\n'));

    // a lock taken elsewhere (the API, as another client would)
    const lockedBy = async () =>
      (
        await run('getfattr', ['--only-values', '-n', 'user.seafile.locked_by', `${b.mnt}/work/new.txt`], {
          allowFail: true,
        })
      ).out;
    expect(await lockedBy()).toBe('');
    await ctx.api.lockFile(ctx.repos.Shared, '/work/new.txt');
    expect(await within(10_000, async () => (await lockedBy()) !== ''), 'locked_by shows the lock').not.toBeNull();
    await ctx.api.unlockFile(ctx.repos.Shared, '/work/new.txt');
    expect(await within(10_000, async () => (await lockedBy()) === ''), 'and its release').not.toBeNull();

    // the websocket cut: the server restarts at the same address; a file added right after is not pushed
    // to anyone (no one is subscribed yet), yet shows once the mount has subscribed again
    await ctx.server.restart({ samePort: true });
    await put(ctx.api, ctx.repos.Shared, '/work', 'while-cut.txt', 'missed?\n');
    const caught = await within(20_000, async () => (await listed(b, '/work')).includes('while-cut.txt'));
    expect(caught, 'the change made while the feed was cut shows after it is back').not.toBeNull();
    expect((await sh(`cat ${q(b.mnt)}/work/while-cut.txt`)).out).toBe('missed?\n');

    for (const m of [a, b]) expect((await m.unmount()).code).toBe(0);
  });

  it('a server without a notification server: the mount says it polls, and listings keep their cache time', async () => {
    const server = await startTestServer({ extraArgs: ['--no-notifications'] });
    try {
      const { client } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword);
      const repo = (await client.createLibrary('Quiet')).repo_id;
      const m = await mountLibrary(server, { library: 'Quiet', dirCacheTime: 2, attrTimeout: 0 });
      expect(await status(m)).toContain('found by revalidating listings');
      expect(await listed(m, '/')).toEqual(['']);
      await put(client, repo, '/', 'later.txt', 'x');
      // shown once the 2 s cache time has run out, as before
      expect(await within(15_000, async () => (await listed(m, '/')).includes('later.txt'))).not.toBeNull();
      expect((await m.unmount()).code).toBe(0);
      await client.close();
    } finally {
      await server.stop();
    }
  });
});
