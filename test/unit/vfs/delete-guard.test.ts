// The mass-delete guard (src/vfs/remove/mass-delete-guard.ts) through the vfs over the
// fake API: past the threshold within the window deletes are refused (EPERM)
// and nothing more reaches the server until a confirm; a cancel keeps the
// files and counts from zero; the window forgets old deletes; 0 turns it off.
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { expectErrno, FakeApi, makeVfs, writeWhole } from '../../helpers/fake-api.js';
import type { DirEntry } from '../../../src/client/types.js';
import { DeleteGuard, knownFilesUnder } from '../../../src/vfs/remove/mass-delete-guard.js';
import type { VfsOptions } from '../../../src/vfs/vfs.js';

describe('mass-delete guard', () => {
  const cleanups = cleanupAfterEach();

  /** a library with /t/f0..f{n-1} on the server and a clock the test moves */
  async function setup(max: number, n = 10, extra: Partial<VfsOptions> = {}) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/t');
    for (let i = 0; i < n; i++) api.putFile(repo, `/t/f${i}`, `file ${i}`);
    const clock = { now: 1_000_000 };
    const logs: string[] = [];
    const m = await makeVfs(api, {
      library: 'lib',
      log: (s) => logs.push(s),
      deleteGuard: { max, windowMs: 60_000, confirmHint: 'seafs confirm-delete /m', now: () => clock.now },
      ...extra,
    });
    cleanups.push(m.cleanup);
    return { api, repo, clock, logs, vfs: m.vfs };
  }

  it('refuses the delete past the threshold and every one after it, with one log line and a status, until confirmed', async () => {
    const { api, repo, logs, vfs } = await setup(4);
    for (let i = 0; i < 4; i++) await vfs.unlink(`/t/f${i}`);
    await expectErrno(vfs.unlink('/t/f4'), 'EPERM');
    await expectErrno(vfs.unlink('/t/f5'), 'EPERM');
    // an empty folder's removal is a delete too: held
    await vfs.mkdir('/empty', 0o755);
    await vfs.drain();
    await expectErrno(vfs.rmdir('/empty'), 'EPERM');
    expect(api.names(repo, '/t')).toEqual(['f4', 'f5', 'f6', 'f7', 'f8', 'f9']);
    expect(api.names(repo, '/')).toContain('empty');
    const said = logs.filter((l) => /mass delete/.test(l));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/4 file\(s\) deleted within 60 s .*seafs confirm-delete \/m/);
    const st = vfs.status().deleteGuard;
    expect(st.held).toMatchObject({ counted: 4, refused: 3 });
    // the deleted files are in the trash
    const trash = await api.libraryTrash(repo, {});
    expect(trash.data.map((e) => e.obj_name).sort()).toEqual(['f0', 'f1', 'f2', 'f3']);

    expect(vfs.deleteGuard.confirm()).toBe(true);
    for (let i = 4; i < 10; i++) await vfs.unlink(`/t/f${i}`);
    await vfs.rmdir('/t');
    await vfs.rmdir('/empty');
    expect(api.names(repo, '/')).toEqual([]);
    expect(vfs.status().deleteGuard.held).toBeNull();
  });

  it('cancel keeps the refused files and counts again from zero', async () => {
    const { api, repo, vfs } = await setup(3);
    for (let i = 0; i < 3; i++) await vfs.unlink(`/t/f${i}`);
    await expectErrno(vfs.unlink('/t/f3'), 'EPERM');
    expect(vfs.deleteGuard.cancel()).toBe(true);
    expect(vfs.status().deleteGuard.held).toBeNull();
    expect(api.names(repo, '/t')).toEqual(['f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'f9']);
    // three more may go, the fourth is held again
    for (let i = 3; i < 6; i++) await vfs.unlink(`/t/f${i}`);
    await expectErrno(vfs.unlink('/t/f6'), 'EPERM');
    expect(api.names(repo, '/t')).toEqual(['f6', 'f7', 'f8', 'f9']);
  });

  it('counts within a sliding window: deletes older than it no longer count', async () => {
    const { api, repo, clock, vfs } = await setup(3);
    await vfs.unlink('/t/f0');
    await vfs.unlink('/t/f1');
    clock.now += 30_000;
    await vfs.unlink('/t/f2');
    clock.now += 30_000; // f0 and f1 are 60 s old now: out of the window
    await vfs.unlink('/t/f3');
    await vfs.unlink('/t/f4');
    expect(vfs.status().deleteGuard.recent).toBe(3);
    await expectErrno(vfs.unlink('/t/f5'), 'EPERM');
    expect(api.names(repo, '/t')).toEqual(['f5', 'f6', 'f7', 'f8', 'f9']);
  });

  it('a confirm lasts for the burst: after a window without deletes the guard counts again', async () => {
    const { api, repo, clock, vfs } = await setup(2);
    vfs.deleteGuard.confirm(); // asked for ahead, nothing held
    for (let i = 0; i < 5; i++) {
      clock.now += 59_000;
      await vfs.unlink(`/t/f${i}`);
    }
    clock.now += 60_000;
    await vfs.unlink('/t/f5');
    await vfs.unlink('/t/f6');
    await expectErrno(vfs.unlink('/t/f7'), 'EPERM');
    expect(api.names(repo, '/t')).toEqual(['f7', 'f8', 'f9']);
  });

  it('files made here and deleted before their upload count nothing', async () => {
    // new files wait a minute before their upload: deleted before it
    const { api, repo, vfs } = await setup(2, 3, { writeBack: { newFileDelayMs: 60_000 } });
    for (let i = 0; i < 10; i++) {
      await writeWhole(vfs, `/t/tmp${i}`, 'scratch');
      await vfs.unlink(`/t/tmp${i}`);
    }
    await vfs.unlink('/t/f0');
    await vfs.unlink('/t/f1');
    await expectErrno(vfs.unlink('/t/f2'), 'EPERM');
    expect(api.names(repo, '/t')).toEqual(['f2']);
  });

  it('0 turns it off', async () => {
    const { api, repo, vfs } = await setup(0);
    for (let i = 0; i < 10; i++) await vfs.unlink(`/t/f${i}`);
    await vfs.rmdir('/t');
    expect(api.names(repo, '/')).toEqual([]);
    expect(vfs.status().deleteGuard.held).toBeNull();
  });

  it('a folder removal counts the files under it the mount knows from its listings', () => {
    const f = (name: string): DirEntry => ({ type: 'file', name, id: 'x', mtime: 0 });
    const d = (name: string): DirEntry => ({ type: 'dir', name, id: 'x', mtime: 0 });
    const listings = new Map<string, DirEntry[]>([
      ['/a', [f('1'), d('b'), d('never-listed'), f('2')]],
      ['/a/b', [f('3'), d('c')]],
      ['/a/b/c', [f('4')]],
      ['/other', [f('5')]],
    ]);
    const meta = {
      peek: (_repo: string, dir: string) => {
        const l = listings.get(dir);
        return l ? { entries: new Map(l.map((e) => [e.name, e])) } : undefined;
      },
    };
    expect(knownFilesUnder(meta, 'r', '/a')).toBe(4);
    const g = new DeleteGuard({ max: 5 });
    g.admit(knownFilesUnder(meta, 'r', '/a'), '/a');
    expect(() => g.admit(knownFilesUnder(meta, 'r', '/other'), '/other')).not.toThrow();
    expect(() => g.admit(knownFilesUnder(meta, 'r', '/a/b'), '/a/b')).toThrow(/held/);
  });
});
