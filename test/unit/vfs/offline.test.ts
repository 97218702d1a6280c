import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../../helpers/cleanup.js';
import { ApiError } from '../../../src/client/errors.js';
import type { SeafileApi } from '../../../src/client/types.js';
import { Connectivity, unreachable } from '../../../src/vfs/common/connectivity.js';
import { errnoOf } from '../../../src/vfs/errors.js';
import { FakeApi, makeVfs, readWhole, sleep, writeWhole } from '../../helpers/fake-api.js';

describe('offline: the server goes away and comes back', () => {
  const cleanups = cleanupAfterEach();

  it('serves what it knows, fails fast on what it does not, keeps writes and uploads them when the server is back', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    api.putDir(repo, '/dir');
    api.putFile(repo, '/a.txt', 'known content\n');
    api.putFile(repo, '/dir/b.txt', 'never read\n');
    const log: string[] = [];
    const m = await makeVfs(api, {
      library: 'lib',
      dirCacheTimeMs: 50,
      probeMinMs: 50,
      probeMaxMs: 200,
      log: (l) => log.push(l),
    });
    cleanups.push(m.cleanup);
    const { vfs } = m;
    expect((await vfs.readdir('/')).sort()).toEqual(['a.txt', 'dir']);
    expect((await vfs.readdir('/dir')).sort()).toEqual(['b.txt']);
    expect((await readWhole(vfs, '/a.txt')).toString()).toBe('known content\n');

    api.down = true;
    await sleep(100); // past the listing cache time
    // listings it knows: stale, no error
    expect((await vfs.readdir('/')).sort()).toEqual(['a.txt', 'dir']);
    expect(vfs.connectivity.online).toBe(false);
    expect((await vfs.getattr('/dir/b.txt')).size).toBe(11);
    // content it has: read from memory or disk
    expect((await readWhole(vfs, '/a.txt')).toString()).toBe('known content\n');
    // content it does not have: EIO at once
    const t0 = Date.now();
    const err = await readWhole(vfs, '/dir/b.txt').catch((e: unknown) => e);
    expect(errnoOf(err)).toBe('EIO');
    expect(Date.now() - t0).toBeLessThan(2000);
    // writes go to the journal; close reports nothing
    await writeWhole(vfs, '/new.txt', 'written offline\n');
    await writeWhole(vfs, '/dir/b2.txt', 'also offline\n');
    expect((await vfs.readdir('/')).sort()).toEqual(['a.txt', 'dir', 'new.txt']);
    expect(api.content(repo, '/new.txt')).toBeUndefined();

    api.down = false;
    for (let i = 0; i < 100 && !vfs.connectivity.online; i++) await sleep(20);
    expect(vfs.connectivity.online).toBe(true);
    expect(await vfs.drain()).toEqual([]);
    expect(api.content(repo, '/new.txt')!.toString()).toBe('written offline\n');
    expect(api.content(repo, '/dir/b2.txt')!.toString()).toBe('also offline\n');
    // said once each, no line per failed call
    expect(log.filter((l) => l.startsWith('offline:'))).toHaveLength(1);
    expect(log.filter((l) => l.startsWith('online:'))).toHaveLength(1);
    expect(log.filter((l) => l.includes('failed (attempt'))).toEqual([]);
  });
});

describe('what takes the mount offline', () => {
  const reset = () =>
    new ApiError({
      kind: 'network',
      status: 0,
      operation: 'upload',
      serverMessage: 'read ECONNRESET',
      cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    });
  const refused = () =>
    new ApiError({
      kind: 'network',
      status: 0,
      operation: 'mkdir',
      serverMessage: 'connect ECONNREFUSED',
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });

  it('a connection reset after it reached the server (a lost answer) leaves the mount online; a refused connection or a timeout takes it offline', async () => {
    const failures: ApiError[] = [
      reset(),
      new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: 'connection closed' }),
      refused(),
    ];
    const api = {
      mkdir: async () => Promise.reject(failures.shift()),
      accountInfo: async () => Promise.reject(refused()),
    } as unknown as SeafileApi;
    const log: string[] = [];
    const net = new Connectivity(api, { log: (l) => log.push(l), probeMinMs: 60_000 });
    try {
      const wrapped = net.wrap(api);
      await expect(wrapped.mkdir('r', '/a')).rejects.toThrow(/ECONNRESET/);
      expect(net.online).toBe(true);
      await expect(wrapped.mkdir('r', '/a')).rejects.toThrow(/connection closed/);
      expect(net.online).toBe(true);
      expect(log).toEqual([]);
      await expect(wrapped.mkdir('r', '/a')).rejects.toThrow(/ECONNREFUSED/);
      expect(net.online).toBe(false);
      expect(log.filter((l) => l.startsWith('offline:'))).toHaveLength(1);
    } finally {
      net.close();
    }
    expect(unreachable(new ApiError({ kind: 'timeout', status: 0, operation: 'listDir' }))).toBe(true);
    expect(unreachable(new ApiError({ kind: 'server', status: 500, operation: 'listDir' }))).toBe(false);
  });
});

/** a connection the server refused (the mount goes offline on it) */
const refusedConnection = () =>
  new ApiError({
    kind: 'network',
    status: 0,
    operation: 'x',
    serverMessage: 'connect ECONNREFUSED',
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });

describe('a call made while offline asks the server first', () => {
  const refused = refusedConnection;

  it('a server back before the next probe serves the call at once; one still gone fails it, asked once a second at most', async () => {
    let down = true;
    let asked = 0;
    const raw = {
      accountInfo: async () => {
        asked++;
        if (down) throw refused();
        return { usage: 0, total: -2, email: 'a@b.c' };
      },
      listLibraries: async () => {
        if (down) throw refused();
        return [];
      },
    } as unknown as SeafileApi;
    const log: string[] = [];
    // the scheduled probe is a minute away: only the recheck can bring the mount back
    const net = new Connectivity(raw, { log: (l) => log.push(l), probeMinMs: 60_000, recheckMs: 200 });
    try {
      const api = net.wrap(raw);
      await expect(api.listLibraries()).rejects.toThrow(/ECONNREFUSED/);
      expect(net.online).toBe(false);
      // still gone: refused, after one probe; a second call within recheckMs does not ask again
      await expect(api.listLibraries()).rejects.toThrow(/offline/);
      const afterFirst = asked;
      expect(afterFirst).toBe(1);
      await expect(api.listLibraries()).rejects.toThrow(/offline/);
      expect(asked).toBe(afterFirst);
      // back: the next call (past recheckMs) asks, finds it, and goes through
      down = false;
      await sleep(250);
      await expect(api.listLibraries()).resolves.toEqual([]);
      expect(net.online).toBe(true);
      expect(log.filter((l) => l.startsWith('online:'))).toHaveLength(1);
    } finally {
      net.close();
    }
  });
});

describe('the quick look of a call made offline', () => {
  it('uses one request without retries where the API offers it, not the slow probe', async () => {
    let quick = 0;
    let slow = 0;
    const refused = refusedConnection();
    const raw = {
      // the client's probe retries a refused connection for its whole budget: never waited for here
      accountInfo: () => {
        slow++;
        return new Promise(() => {});
      },
      reachable: async () => {
        quick++;
        return false;
      },
      listLibraries: async () => {
        throw refused;
      },
    } as unknown as SeafileApi;
    const net = new Connectivity(raw, { log: () => {}, probeMinMs: 60_000, recheckMs: 5_000 });
    try {
      const api = net.wrap(raw);
      await expect(api.listLibraries()).rejects.toThrow(/ECONNREFUSED/);
      const t0 = Date.now();
      await expect(api.listLibraries()).rejects.toThrow(/offline/);
      // refused at once (the quick look said no), not after recheckMs
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(quick).toBe(1);
      expect(slow).toBe(0);
    } finally {
      net.close();
    }
  });
});

describe('an unmount while the server is away', () => {
  const cleanups = cleanupAfterEach();

  it('the drain gives up after the grace, leaves every file in the journal, and a later drain uploads them', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const m = await makeVfs(api, {
      library: 'lib',
      probeMinMs: 50,
      probeMaxMs: 100,
      writeBack: { retryBaseMs: 10, offlineGraceMs: 300 },
    });
    cleanups.push(m.cleanup);
    const { vfs } = m;
    await vfs.readdir('/');
    api.down = true;
    // the first upload finds the server gone; the rest are written offline
    for (let i = 0; i < 20; i++) await writeWhole(vfs, `/f${i}.txt`, `file ${i}\n`);
    for (let i = 0; i < 100 && vfs.connectivity.online; i++) await sleep(20);
    expect(vfs.connectivity.online).toBe(false);
    // before the fix, the drain started every upload again every 100 ms once the grace was over, and never returned
    const left = await vfs.drain();
    expect(left.map((f) => f.path).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `/f${i}.txt`).sort());
    expect(api.content(repo, '/f0.txt')).toBeUndefined();

    api.down = false;
    for (let i = 0; i < 100 && !vfs.connectivity.online; i++) await sleep(20);
    expect(await vfs.drain()).toEqual([]);
    for (let i = 0; i < 20; i++) expect(api.content(repo, `/f${i}.txt`)!.toString()).toBe(`file ${i}\n`);
  });
});
