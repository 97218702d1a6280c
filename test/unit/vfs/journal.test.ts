import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { Journal } from '../../../src/vfs/write/journal.js';
import { FakeApi, makeVfs, writeWhole } from '../../helpers/fake-api.js';

describe('vfs journal', () => {
  const cleanups = cleanupAfterEach();

  it('a file whose close() returned is uploaded by the next mount after a crash', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'seafs-journal-'));
    cleanups.push(() => rm(cacheDir, { recursive: true, force: true }));
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/d');
    // the first mount never gets its uploads through (as if killed before they ran)
    api.uploadGate = () => new Promise<void>(() => {});
    const first = await makeVfs(api, { library: 'lib', cacheDir });
    await writeWhole(first.vfs, '/d/a.txt', 'alpha');
    await writeWhole(first.vfs, '/d/b.bin', Buffer.alloc(200_000, 3));
    // open for writing, written, never closed: not promised, but journaled early and kept too
    const fh = await first.vfs.create('/d/open.txt', 0o644);
    await first.vfs.write('/d/open.txt', fh, Buffer.from('x'), 1, 0);
    await first.vfs.flush('/d/open.txt', fh);
    const entries = await new Journal(join(cacheDir, 'journal')).entries();
    expect(entries.map((e) => e.path).sort()).toEqual(['/d/a.txt', '/d/b.bin', '/d/open.txt']);
    first.vfs.close();

    // "restart": a fresh vfs over the same cache dir, and a server that accepts uploads
    api.uploadGate = null;
    const second = await makeVfs(api, { library: 'lib', cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.content(repo, '/d/a.txt')!.toString()).toBe('alpha');
    expect(api.content(repo, '/d/b.bin')!.equals(Buffer.alloc(200_000, 3))).toBe(true);
    expect(api.names(repo, '/d')).toEqual(['a.txt', 'b.bin', 'open.txt']);
    expect(api.content(repo, '/d/open.txt')!.toString()).toBe('x');
    expect(await readdir(join(cacheDir, 'journal'))).toEqual([]);
    second.vfs.close();
  });

  it('a recovered file follows the rename recorded before the crash', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    let gated = 0;
    api.uploadGate = () => {
      gated++;
      return new Promise<void>(() => {});
    };
    const first = await makeVfs(api, { library: 'lib', writeBack: { concurrency: 1, retryBaseMs: 10 } });
    cleanups.push(first.cleanup);
    await writeWhole(first.vfs, '/blocker', 'b'); // holds the only upload slot forever
    // (once its upload has reached the server: lifting the gate later must not let it through)
    await vi.waitFor(() => expect(gated).toBe(1));
    await writeWhole(first.vfs, '/old.txt', 'payload');
    await first.vfs.rename('/old.txt', '/new.txt');
    first.vfs.close();
    api.uploadGate = null;
    const second = await makeVfs(api, { library: 'lib', cacheDir: first.cacheDir });
    expect(await second.vfs.drain()).toEqual([]);
    expect(api.names(repo, '/')).toEqual(['blocker', 'new.txt']);
    expect(api.content(repo, '/new.txt')!.toString()).toBe('payload');
    second.vfs.close();
  });
});
