// Changes pushed by the server (src/vfs/live-changes.ts) over a FakeApi whose
// change feed the test drives: listings that would live an hour show a file
// added elsewhere once a repo-update is told, and a lock once
// file-lock-changed is; a folder this mount has just changed is not listed
// again for its own commit; a break in the feed revalidates everything; pins
// look again; a library made read-only refuses writes after
// folder-perm-changed.
import { describe, expect, it } from 'vitest';
import type { ChangeFeedHooks, ChangeMode, ServerChange } from '../../../src/client/types.js';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, makeVfs, sleep, writeWhole } from '../../helpers/fake-api.js';

const HOUR = 3_600_000;

async function setup(cleanups: ReturnType<typeof cleanupAfterEach>) {
  const api = new FakeApi();
  const repo = api.addLibrary('lib');
  let hooks: ChangeFeedHooks | null = null;
  let mode: ChangeMode = 'polling';
  const followed: string[][] = [];
  Object.assign(api, {
    watchChanges: (repos: string[], h: ChangeFeedHooks) => {
      followed.push(repos);
      hooks = h;
      return {
        get mode() {
          return mode;
        },
        close() {},
      };
    },
  });
  const m = await makeVfs(api, {
    library: 'lib',
    dirCacheTimeMs: HOUR,
    liveChanges: { coalesceMs: 10, ownChangeMs: 2000 },
    writeBack: { retryBaseMs: 10, newFileDelayMs: 0 },
  });
  cleanups.push(m.cleanup);
  const feed = {
    connect() {
      mode = 'notification';
      hooks!.onMode('notification');
    },
    drop() {
      mode = 'polling';
      hooks!.onMode('polling');
    },
    tell(c: Omit<ServerChange, 'repo'>) {
      hooks!.onChange({ repo, ...c });
    },
    resubscribed() {
      hooks!.onResubscribed();
    },
  };
  return { api, repo, vfs: m.vfs, feed, followed };
}

describe('changes pushed by the server', () => {
  const cleanups = cleanupAfterEach();

  it('follows the mounted library; a repo-update shows what changed elsewhere at once', async () => {
    const { api, repo, vfs, feed, followed } = await setup(cleanups);
    expect(followed).toEqual([[repo]]);
    feed.connect();
    await vfs.mkdir('/d', 0o755);
    expect(await vfs.drain()).toEqual([]);
    await sleep(2100); // past the time a folder changed here is spared
    expect(await vfs.readdir('/d')).toEqual([]);
    api.putFile(repo, '/d/elsewhere.txt', 'made by another client');
    // the listing would live an hour
    expect(await vfs.readdir('/d')).toEqual([]);
    feed.tell({ kind: 'repo-update', commitId: 'c1' });
    await sleep(100);
    const lists = api.calls.listDir ?? 0;
    expect(await vfs.readdir('/d')).toEqual(['elsewhere.txt']);
    // revalidated when told, not when looked at
    expect(api.calls.listDir ?? 0).toBe(lists);
    expect(vfs.status().changes).toEqual({ mode: 'notification', events: 1 });
  });

  it("a folder this mount just changed is not listed again for its own commit; others' are", async () => {
    const { api, repo, vfs, feed } = await setup(cleanups);
    feed.connect();
    await vfs.mkdir('/mine', 0o755);
    await vfs.mkdir('/theirs', 0o755);
    expect(await vfs.drain()).toEqual([]);
    await sleep(2100);
    await vfs.readdir('/theirs');
    await writeWhole(vfs, '/mine/new.txt', 'ours');
    expect(await vfs.drain()).toEqual([]);
    await vfs.readdir('/mine');
    api.putFile(repo, '/theirs/t.txt', 'theirs');
    const before = api.calls.listDir ?? 0;
    feed.tell({ kind: 'repo-update', commitId: 'c2' });
    await sleep(100);
    expect(await vfs.readdir('/theirs')).toEqual(['t.txt']);
    expect(await vfs.readdir('/mine')).toEqual(['new.txt']);
    // the root and /theirs were asked again; /mine (changed here a moment ago) was not
    expect((api.calls.listDir ?? 0) - before).toBe(2);
  });

  it('a change made elsewhere in a folder this mount had just changed shows once the mount left it alone', async () => {
    const { api, repo, vfs, feed } = await setup(cleanups);
    feed.connect();
    await vfs.mkdir('/shared', 0o755);
    expect(await vfs.drain()).toEqual([]);
    await writeWhole(vfs, '/shared/ours.txt', 'ours');
    expect(await vfs.drain()).toEqual([]);
    expect(await vfs.readdir('/shared')).toEqual(['ours.txt']);
    // someone else writes into the same folder in the same moment; its event looks like our own commit's
    api.putFile(repo, '/shared/theirs.txt', 'theirs');
    feed.tell({ kind: 'repo-update', commitId: 'c3' });
    await sleep(100);
    expect(await vfs.readdir('/shared')).toEqual(['ours.txt']); // spared: most likely our own commit
    // looked at again once the mount has left the folder alone for the spared time (2 s here), not after an hour
    await sleep(2200);
    expect((await vfs.readdir('/shared')).sort()).toEqual(['ours.txt', 'theirs.txt']);
  });

  it('a lock taken elsewhere shows at file-lock-changed (the folder id does not change with it)', async () => {
    const { api, repo, vfs, feed } = await setup(cleanups);
    feed.connect();
    api.putFile(repo, '/doc.txt', 'x');
    const lockedBy = async () => (await vfs.xattrs.get('/doc.txt', 'user.seafile.locked_by')).toString();
    expect(await lockedBy()).toBe('');
    api.setLockOwner(repo, '/doc.txt', 'colleague@example.com');
    expect(await lockedBy()).toBe('');
    feed.tell({
      kind: 'file-lock-changed',
      path: '/doc.txt',
      changeEvent: 'locked',
      lockUser: 'colleague@example.com',
    });
    // a value read is answered unchanged for a second (getfattr asks for its size, then for it)
    await sleep(1100);
    expect(await lockedBy()).toBe('colleague@example.com');
  });

  it('after a break every listing is revalidated, changes made here meanwhile included', async () => {
    const { api, repo, vfs, feed } = await setup(cleanups);
    feed.connect();
    await writeWhole(vfs, '/here.txt', 'ours');
    expect(await vfs.drain()).toEqual([]);
    expect(await vfs.readdir('/')).toEqual(['here.txt']);
    feed.drop();
    api.putFile(repo, '/missed.txt', 'told to no one');
    feed.connect();
    feed.resubscribed();
    await sleep(100);
    expect((await vfs.readdir('/')).sort()).toEqual(['here.txt', 'missed.txt']);
  });

  it('a library made read-only elsewhere refuses writes after folder-perm-changed', async () => {
    const { api, repo, vfs, feed } = await setup(cleanups);
    feed.connect();
    await writeWhole(vfs, '/before.txt', 'writable');
    api.repos.get(repo)!.lib.permission = 'r';
    feed.tell({ kind: 'folder-perm-changed', path: '/' });
    await sleep(100);
    await expect(vfs.create('/after.txt', 0o644)).rejects.toMatchObject({ code: 'EROFS' });
  });
});
