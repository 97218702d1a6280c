import { constants as FC } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { ApiError } from '../../../src/client/errors.js';
import { FakeApi, makeVfs, readWhole, vfsOnLibrary, writeWhole } from '../../helpers/fake-api.js';

const CONFLICT = /^conf \(SFConflict me@example\.com \d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\)\.txt$/;

describe('conflicts: nothing the mount did not see is overwritten', () => {
  const cleanups = cleanupAfterEach();

  const setup = (opts = {}) => vfsOnLibrary(cleanups, opts);

  /** open for writing, write, and leave the handle open */
  async function edit(vfs: Awaited<ReturnType<typeof setup>>['vfs'], path: string, text: string) {
    const fh = await vfs.open(path, FC.O_WRONLY | FC.O_TRUNC);
    await vfs.write(path, fh, Buffer.from(text), text.length, 0);
    return fh;
  }

  it('an edit against a remote edit keeps both: the server version keeps the name, ours is a conflict copy', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/conf.txt', 'base\n');
    const fh = await edit(vfs, '/conf.txt', 'local\n');
    api.putFile(repo, '/conf.txt', 'theirs\n');
    await vfs.release('/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/conf.txt')!.toString()).toBe('theirs\n');
    const copies = api.names(repo, '/').filter((n) => CONFLICT.test(n));
    expect(copies).toHaveLength(1);
    expect(api.content(repo, `/${copies[0]}`)!.toString()).toBe('local\n');
    expect(vfs.writeBack.stats.conflicts).toBe(1);
    // the mount shows both, each with its own content
    expect((await vfs.readdir('/')).sort()).toEqual(['conf.txt', copies[0]].sort());
    expect((await readWhole(vfs, '/conf.txt')).toString()).toBe('theirs\n');
    expect((await readWhole(vfs, `/${copies[0]}`)).toString()).toBe('local\n');
  });

  it('an edit against a remote delete saves the local version under its own name', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/conf.txt', 'base\n');
    const fh = await edit(vfs, '/conf.txt', 'local\n');
    await api.deleteFile(repo, '/conf.txt');
    await vfs.release('/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['conf.txt']);
    expect(api.content(repo, '/conf.txt')!.toString()).toBe('local\n');
    expect(vfs.writeBack.stats.conflicts).toBe(0);
  });

  it('an edit against a remote rename keeps the renamed file and the local version', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/conf.txt', 'base\n');
    const fh = await edit(vfs, '/conf.txt', 'local\n');
    await api.renameFile(repo, '/conf.txt', 'moved.txt');
    await vfs.release('/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['conf.txt', 'moved.txt']);
    expect(api.content(repo, '/conf.txt')!.toString()).toBe('local\n');
    expect(api.content(repo, '/moved.txt')!.toString()).toBe('base\n');
  });

  it('an edit whose folder was deleted on the server recreates the folder', async () => {
    const { api, repo, vfs } = await setup();
    api.putDir(repo, '/d/e');
    api.putFile(repo, '/d/e/conf.txt', 'base\n');
    const fh = await edit(vfs, '/d/e/conf.txt', 'local\n');
    await api.deleteDir(repo, '/d');
    await vfs.release('/d/e/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/d/e/conf.txt')!.toString()).toBe('local\n');
    expect((await readWhole(vfs, '/d/e/conf.txt')).toString()).toBe('local\n');
  });

  it('a new file whose name someone else took meanwhile becomes a conflict copy (single and batched uploads)', async () => {
    for (const batch of [false, true]) {
      const { api, repo, vfs } = await setup();
      if (batch) api.offerUploadBatch();
      const fh = await vfs.create('/conf.txt', 0o644);
      await vfs.write('/conf.txt', fh, Buffer.from('mine\n'), 5, 0);
      // a second new file, so that a batch has two to send
      await writeWhole(vfs, '/other.txt', 'other\n');
      api.putFile(repo, '/conf.txt', 'someone else\n');
      await vfs.release('/conf.txt', fh);
      expect(await vfs.drain()).toEqual([]);
      expect(api.content(repo, '/conf.txt')!.toString()).toBe('someone else\n');
      const copies = api.names(repo, '/').filter((n) => CONFLICT.test(n));
      expect(copies, `batch=${batch}`).toHaveLength(1);
      expect(api.content(repo, `/${copies[0]}`)!.toString()).toBe('mine\n');
      expect(api.content(repo, '/other.txt')!.toString()).toBe('other\n');
    }
  });

  it('repeated edits of our own uploads are never conflicts', async () => {
    const { api, repo, vfs } = await setup();
    api.putFile(repo, '/conf.txt', 'v0\n');
    for (let i = 1; i <= 4; i++) {
      const fh = await edit(vfs, '/conf.txt', `v${i}\n`);
      await vfs.release('/conf.txt', fh);
      expect(await vfs.drain()).toEqual([]);
    }
    // a file kept open across uploads (fsync, write, fsync)
    const fh = await vfs.open('/conf.txt', FC.O_WRONLY | FC.O_TRUNC);
    for (let i = 5; i <= 7; i++) {
      await vfs.write('/conf.txt', fh, Buffer.from(`v${i}\n`), 3, 0);
      await vfs.fsync('/conf.txt', fh);
    }
    await vfs.release('/conf.txt', fh);
    expect(await vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['conf.txt']);
    expect(api.content(repo, '/conf.txt')!.toString()).toBe('v7\n');
    expect(vfs.writeBack.stats.conflicts).toBe(0);
  });

  it('two mounts editing the same file: the second to upload keeps its version as a conflict copy', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putFile(repo, '/conf.txt', 'base\n');
    const a = await makeVfs(api, { library: 'lib' });
    const b = await makeVfs(api, { library: 'lib' });
    cleanups.push(a.cleanup, b.cleanup);
    const fa = await edit(a.vfs, '/conf.txt', 'from a\n');
    const fb = await edit(b.vfs, '/conf.txt', 'from b\n');
    await a.vfs.release('/conf.txt', fa);
    expect(await a.vfs.drain()).toEqual([]);
    await b.vfs.release('/conf.txt', fb);
    expect(await b.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/conf.txt')!.toString()).toBe('from a\n');
    const copies = api.names(repo, '/').filter((n) => CONFLICT.test(n));
    expect(copies).toHaveLength(1);
    expect(api.content(repo, `/${copies[0]}`)!.toString()).toBe('from b\n');
    expect(a.vfs.writeBack.stats.conflicts + b.vfs.writeBack.stats.conflicts).toBe(1);
  });
});

describe('conflicts: an upload whose answer was lost', () => {
  it('is recognised as ours on the retry: no conflict copy, no duplicate', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib' });
    try {
      const real = api.uploadMany;
      let lost = 0;
      api.uploadMany = async (...args) => {
        const res = await real(...args);
        if (lost++ === 0)
          throw new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: 'socket hang up' });
        return res;
      };
      api.uploadBatch = api.uploadMany;
      await writeWhole(m.vfs, '/conf.txt', 'mine\n');
      expect(await m.vfs.drain()).toEqual([]);
      expect(lost).toBe(2);
      expect(api.names(repo, '/')).toEqual(['conf.txt']);
      expect(api.content(repo, '/conf.txt')!.toString()).toBe('mine\n');
      expect(m.vfs.writeBack.stats.conflicts).toBe(0);
    } finally {
      await m.cleanup();
    }
  });
});

describe('conflicts: a batch upload whose answer was lost', () => {
  it('retries its files one by one without conflict copies or duplicates', async () => {
    const api = new FakeApi().offerUploadBatch();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 50 } });
    try {
      const real = api.uploadMany;
      let lost = 0;
      api.uploadBatch = async (...args) => {
        const res = await real(...args);
        if (args[2].length > 1 && lost++ === 0)
          throw new ApiError({ kind: 'server', status: 502, operation: 'upload', serverMessage: 'Bad Gateway' });
        return res;
      };
      for (let i = 0; i < 5; i++) await writeWhole(m.vfs, `/f${i}.txt`, `file ${i}\n`);
      expect(await m.vfs.drain()).toEqual([]);
      expect(lost).toBe(1);
      expect(api.names(repo, '/')).toEqual(['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt']);
      for (let i = 0; i < 5; i++) expect(api.content(repo, `/f${i}.txt`)!.toString()).toBe(`file ${i}\n`);
      expect(m.vfs.writeBack.stats.conflicts).toBe(0);
    } finally {
      await m.cleanup();
    }
  });
});

/**
 * The first upload (batch or single) of `api` waits for `open()`, then stores the file and loses its
 * answer (a reset); later ones go through. `started()` resolves once that first upload is held.
 */
/** `thenDown`: the server stays unreachable after the lost answer (until the test brings it back) */
function holdFirstUploadAndLoseItsAnswer(api: FakeApi, batch: boolean, thenDown = false) {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let lost = 0;
  const wrap =
    <A extends unknown[], R>(real: (...a: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (lost++ > 0) return real(...args);
      await gate;
      await real(...args);
      if (thenDown) api.down = true;
      throw new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: 'socket hang up' });
    };
  if (batch) api.uploadBatch = wrap(api.uploadMany);
  else api.upload = wrap(api.upload.bind(api));
  const started = async () => {
    for (let i = 0; i < 100 && lost === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(lost, 'the first upload started').toBe(1);
  };
  return { open, started };
}

describe('conflicts: an upload whose answer was lost while the file was written again', () => {
  it('the retry takes the stored earlier version for ours and replaces it (no conflict copy)', async () => {
    // seen with scripts/soak-faults (seed 20): tar x made a file, cp overwrote it while its
    // upload was on its way, the answer was lost; the retry met the earlier version (another
    // size) and saved the new one as a conflict copy
    for (const batch of [true, false]) {
      const api = batch ? new FakeApi().offerUploadBatch() : new FakeApi();
      const repo = api.addLibrary('lib');
      const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 0 } });
      try {
        const { open, started } = holdFirstUploadAndLoseItsAnswer(api, batch);
        await writeWhole(m.vfs, '/f.txt', 'first version\n');
        await started();
        await writeWhole(m.vfs, '/f.txt', 'the second version, longer than the first\n');
        open();
        expect(await m.vfs.drain()).toEqual([]);
        expect(api.names(repo, '/')).toEqual(['f.txt']);
        expect(api.content(repo, '/f.txt')!.toString()).toBe('the second version, longer than the first\n');
        expect(m.vfs.writeBack.stats.conflicts).toBe(0);
      } finally {
        await m.cleanup();
      }
    }
  });
});

describe('a file deleted or renamed while its upload was on its way, whose answer was lost', () => {
  // seen in CI (faults e2e, seed 1717): rm of a file whose upload had landed unbeknown to the mount left
  // the file on the server
  for (const batch of [true, false])
    for (const op of ['unlink', 'rename'] as const)
      it(`${op} (${batch ? 'batch' : 'single'} upload): the copy the upload stored goes too, nothing stays behind`, async () => {
        const api = batch ? new FakeApi().offerUploadBatch() : new FakeApi();
        const repo = api.addLibrary('lib');
        const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 0 } });
        try {
          const { open, started } = holdFirstUploadAndLoseItsAnswer(api, batch);
          await writeWhole(m.vfs, '/f.txt', 'stored, answer lost\n');
          await started();
          // the delete or rename waits for the upload in flight, which stores the file and loses the answer
          const done = op === 'unlink' ? m.vfs.unlink('/f.txt') : m.vfs.rename('/f.txt', '/g.txt');
          await new Promise((r) => setTimeout(r, 20));
          open();
          await done;
          expect(await m.vfs.drain()).toEqual([]);
          if (op === 'unlink') {
            expect(api.names(repo, '/')).toEqual([]);
          } else {
            expect(api.names(repo, '/')).toEqual(['g.txt']);
            expect(api.content(repo, '/g.txt')!.toString()).toBe('stored, answer lost\n');
          }
          expect(m.vfs.writeBack.stats.conflicts).toBe(0);
        } finally {
          await m.cleanup();
        }
      });
});

describe('a file made again where a deleted one left a copy in doubt', () => {
  it('its upload takes the copy for ours and replaces it (no conflict copy)', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, { library: 'lib', writeBack: { retryBaseMs: 10, newFileDelayMs: 0 } });
    try {
      // the server stays away after the lost answer (else a call made offline finds it back at once)
      const { open, started } = holdFirstUploadAndLoseItsAnswer(api, false, true);
      await writeWhole(m.vfs, '/f.txt', 'first\n');
      await started();
      const del = m.vfs.unlink('/f.txt');
      await new Promise((r) => setTimeout(r, 20));
      open();
      await del;
      // the lost answer took the mount offline: the copy is still in doubt, and the file is made again
      expect(m.vfs.writeBack.landed.size).toBe(1);
      expect(api.names(repo, '/')).toEqual(['f.txt']);
      await writeWhole(m.vfs, '/f.txt', 'second, made again\n');
      expect(m.vfs.writeBack.landed.size).toBe(0);
      api.down = false;
      expect(await m.vfs.drain()).toEqual([]);
      expect(api.names(repo, '/')).toEqual(['f.txt']);
      expect(api.content(repo, '/f.txt')!.toString()).toBe('second, made again\n');
      expect(m.vfs.writeBack.stats.conflicts).toBe(0);
    } finally {
      await m.cleanup();
    }
  });
});
