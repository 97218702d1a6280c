import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { FakeApi, gate, makeVfs, readWhole, sleep, writeWhole } from '../../helpers/fake-api.js';

describe('vfs rename and unlink', () => {
  const cleanups = cleanupAfterEach();

  // these tests change the server behind the vfs' back: no listing cache time
  async function setup(concurrency = 6) {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', dirCacheTimeMs: 0, writeBack: { concurrency, retryBaseMs: 10 } });
    cleanups.push(m.cleanup);
    return { api, repo, ...m };
  }

  it('renames in place, moves between folders, and renames while moving', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/a');
    api.putDir(repo, '/b');
    api.putFile(repo, '/a/one.txt', '1');
    await vfs.rename('/a/one.txt', '/a/two.txt');
    expect(api.names(repo, '/a')).toEqual(['two.txt']);
    await vfs.rename('/a/two.txt', '/b/two.txt');
    expect(api.names(repo, '/b')).toEqual(['two.txt']);
    await vfs.rename('/b/two.txt', '/a/three.txt');
    expect(api.names(repo, '/a')).toEqual(['three.txt']);
    expect(api.names(repo, '/b')).toEqual([]);
    expect(await vfs.readdir('/a')).toEqual(['three.txt']);
    expect((await readWhole(vfs, '/a/three.txt')).toString()).toBe('1');
  });

  it('replaces an existing target and never leaves "name (1)" behind', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/doc.txt', 'old');
    api.putFile(repo, '/.doc.txt.swp', 'new');
    await vfs.rename('/.doc.txt.swp', '/doc.txt');
    expect(api.names(repo, '/')).toEqual(['doc.txt']);
    expect(api.content(repo, '/doc.txt')!.toString()).toBe('new');
    // across folders onto an existing file, when the old name is also taken in the target folder
    api.putDir(repo, '/d');
    api.putFile(repo, '/d/doc.txt', 'other');
    api.putFile(repo, '/d/x', 'target');
    await vfs.rename('/doc.txt', '/d/x');
    expect(api.names(repo, '/d')).toEqual(['doc.txt', 'x']);
    expect(api.content(repo, '/d/x')!.toString()).toBe('new');
    expect(api.content(repo, '/d/doc.txt')!.toString()).toBe('other');
  });

  it('moves a folder with content and refuses to replace a non-empty folder', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/src/sub');
    api.putFile(repo, '/src/sub/f', 'f');
    api.putDir(repo, '/full');
    api.putFile(repo, '/full/x', 'x');
    await expect(vfs.rename('/src', '/full')).rejects.toMatchObject({ code: 'ENOTEMPTY' });
    api.putDir(repo, '/dst');
    await vfs.rename('/src', '/dst/moved');
    expect(api.content(repo, '/dst/moved/sub/f')!.toString()).toBe('f');
    expect(await vfs.readdir('/dst/moved/sub')).toEqual(['f']);
    await expect(vfs.getattr('/src')).rejects.toMatchObject({ code: 'ENOENT' });
    api.putDir(repo, '/empty');
    await vfs.rename('/dst/moved', '/empty');
    expect(api.content(repo, '/empty/sub/f')!.toString()).toBe('f');
    await expect(vfs.rename('/empty', '/full/x')).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(vfs.rename('/full/x', '/empty')).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it("moves files and folders whose names hold '\"' or '\\' between folders (seafile-server 10 cannot move such a name)", async () => {
    const { api, repo, vfs } = await setup();
    api.unescapedMoveNames = true;
    api.putDir(repo, '/dst');
    api.putDir(repo, '/q"x');
    api.putFile(repo, '/q"x/in.txt', 'in');
    api.putFile(repo, '/f"y.txt', 'f');
    api.putFile(repo, '/plain.txt', 'p');
    // made by another client: the mount takes no '\\' in new names, but moves what is there
    api.putFile(repo, '/b\\s.txt', 'b');
    await vfs.rename('/q"x', '/dst/q"x');
    await vfs.rename('/f"y.txt', '/dst/f"z.txt');
    await vfs.rename('/plain.txt', '/dst/now"quoted.txt');
    await vfs.rename('/b\\s.txt', '/dst/b.txt');
    expect(api.names(repo, '/')).toEqual(['dst']);
    expect(api.names(repo, '/dst')).toEqual(['b.txt', 'f"z.txt', 'now"quoted.txt', 'q"x']);
    expect(api.content(repo, '/dst/q"x/in.txt')!.toString()).toBe('in');
    expect(api.content(repo, '/dst/f"z.txt')!.toString()).toBe('f');
    expect(api.content(repo, '/dst/b.txt')!.toString()).toBe('b');
    expect(api.content(repo, '/dst/now"quoted.txt')!.toString()).toBe('p');
    // a plain name still moves in one call
    api.putFile(repo, '/one.txt', '1');
    const before = api.calls.renameFile ?? 0;
    await vfs.rename('/one.txt', '/dst/one.txt');
    expect(api.calls.renameFile ?? 0).toBe(before);
  });

  it('unlink of a dirty file cancels its pending upload', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/gone.txt', 'never');
    await writeWhole(vfs, '/queued.txt', 'queued');
    await sleep(10); // both uploads are waiting at the gate (or queued)
    const del = vfs.unlink('/gone.txt');
    await sleep(10);
    g.open();
    await del;
    await vfs.drain();
    await sleep(10);
    expect(api.names(repo, '/')).toEqual(['queued.txt']);
    await expect(vfs.getattr('/gone.txt')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('rename of a dirty file during its upload lands only at the new path', async () => {
    const { api, repo, vfs } = await setup();
    const g = gate();
    api.uploadGate = g.wait;
    api.putDir(repo, '/to');
    await writeWhole(vfs, '/from.txt', 'moving');
    await sleep(10);
    const mv = vfs.rename('/from.txt', '/to/final.txt');
    await sleep(10);
    g.open();
    await mv;
    await vfs.drain();
    expect(api.names(repo, '/')).toEqual(['to']);
    expect(api.names(repo, '/to')).toEqual(['final.txt']);
    expect(api.content(repo, '/to/final.txt')!.toString()).toBe('moving');
    // the state cleaned up after the upload must not linger at the new path
    expect((await readWhole(vfs, '/to/final.txt')).toString()).toBe('moving');
  });

  it('a file renamed in its folder while its upload runs is listed under the new name', async () => {
    // with the listing cache on: the answer must come from the cache, kept right locally
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib' });
    cleanups.push(m.cleanup);
    const vfs = m.vfs;
    expect(await vfs.readdir('/')).toEqual([]);
    const g = gate();
    api.uploadGate = g.wait;
    await writeWhole(vfs, '/blob.bin', 'blob');
    await sleep(10);
    const mv = vfs.rename('/blob.bin', '/blob-renamed.bin');
    await sleep(10);
    g.open();
    await mv;
    await vfs.drain();
    await sleep(10);
    expect(await vfs.readdir('/')).toEqual(['blob-renamed.bin']);
    expect((await vfs.getattr('/blob-renamed.bin')).size).toBe(4);
    expect((await readWhole(vfs, '/blob-renamed.bin')).toString()).toBe('blob');
    expect(api.names(repo, '/')).toEqual(['blob-renamed.bin']);
  });

  it('rename of a dirty file not yet uploaded just retargets it; a folder rename carries dirty files along', async () => {
    const { api, repo, vfs } = await setup(1);
    const g = gate();
    api.uploadGate = g.wait;
    api.putDir(repo, '/dir');
    // occupy the only upload slot so the next file stays queued
    await writeWhole(vfs, '/blocker', 'b');
    await vfs.mkdir('/dir/sub', 0o755);
    await writeWhole(vfs, '/dir/sub/a.txt', 'A');
    await vfs.rename('/dir/sub/a.txt', '/dir/sub/b.txt');
    await vfs.rename('/dir', '/renamed');
    expect(await vfs.readdir('/renamed/sub')).toEqual(['b.txt']);
    g.open();
    await vfs.drain();
    expect(api.names(repo, '/')).toEqual(['blocker', 'renamed']);
    expect(api.names(repo, '/renamed/sub')).toEqual(['b.txt']);
    expect(api.content(repo, '/renamed/sub/b.txt')!.toString()).toBe('A');
  });

  it('an editor safe save: write temp, fsync, rename over the original', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/notes.md', 'v1');
    const fh = await vfs.create('/.notes.md.tmp', 0o644);
    await vfs.write('/.notes.md.tmp', fh, Buffer.from('v2'), 2, 0);
    await vfs.fsync('/.notes.md.tmp', fh);
    await vfs.release('/.notes.md.tmp', fh);
    await vfs.rename('/.notes.md.tmp', '/notes.md');
    await vfs.drain();
    expect(api.names(repo, '/')).toEqual(['notes.md']);
    expect(api.content(repo, '/notes.md')!.toString()).toBe('v2');
  });
});

describe('vfs files unlinked while open', () => {
  it('a .fuse_hidden rename deletes on the server at once and keeps the data for open handles', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/clean.txt', 'clean');
    const m = await makeVfs(api, { library: 'lib' });
    try {
      const { constants: FC } = await import('node:fs');
      const fh = await m.vfs.create('/dirty.txt', 0o644);
      await m.vfs.write('/dirty.txt', fh, Buffer.from('dirty data'), 10, 0);
      // `rm` of the open file: libfuse renames it away, then unlinks the hidden name at the last close
      await m.vfs.rename('/dirty.txt', '/.fuse_hidden0000001a00000001');
      await m.vfs.rename('/clean.txt', '/.fuse_hidden0000001b00000002');
      expect(api.names(repo, '/')).toEqual([]);
      expect((await m.vfs.getattr('/.fuse_hidden0000001a00000001')).size).toBe(10);
      const buf = Buffer.alloc(10);
      expect(await m.vfs.read('/.fuse_hidden0000001a00000001', fh, buf, 10, 0)).toBe(10);
      expect(buf.toString()).toBe('dirty data');
      await m.vfs.write('/.fuse_hidden0000001a00000001', fh, Buffer.from('more'), 4, 10);
      await m.vfs.flush('/.fuse_hidden0000001a00000001', fh);
      await m.vfs.release('/.fuse_hidden0000001a00000001', fh);
      await m.vfs.unlink('/.fuse_hidden0000001a00000001');
      await m.vfs.unlink('/.fuse_hidden0000001b00000002');
      await m.vfs.drain();
      await sleep(400);
      expect(api.names(repo, '/')).toEqual([]);
      expect(await m.vfs.readdir('/')).toEqual([]);
      void FC;
    } finally {
      await m.cleanup();
    }
  });
});
