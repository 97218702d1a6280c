// last_modify on update-api: `seafs serve` stores the client's time, as real
// servers do, also when the content is the same (a time changed alone, as
// `touch -d` on a file already on the server makes the mount send it); the
// same content with no time or the same time commits nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LocalFiles, adminClient, startWithLibrary } from '../helpers/client-setup.js';

let server: TestServer;
let c: SeafileClient;
let repo: string;
const files = new LocalFiles();

beforeAll(async () => {
  ({ server, client: c, repo } = await startWithLibrary('Times'));
});

afterAll(async () => {
  await c?.close();
  await server?.stop();
  files.cleanup();
});

async function mtimeOf(name: string): Promise<number | undefined> {
  const l = await c.listDir(repo, '/');
  if (l.uptodate) throw new Error('expected a full listing');
  return l.entries.find((e) => e.name === name)?.mtime;
}

describe('update-api with last_modify', () => {
  it('stores the time sent with the same content, and commits nothing for the same content without a new time', async () => {
    const local = files.write('unchanged bytes');
    await c.uploadBatch(await c.uploadLink(repo, '/'), '/', [{ path: local, name: 'f.txt' }], {
      replace: true,
      lastModify: Date.UTC(2001, 0, 1),
    });
    expect(await mtimeOf('f.txt')).toBe(Date.UTC(2001, 0, 1) / 1000);
    const commits = async () => (await c.libraryHistory(repo)).commits.length;
    const before = await commits();

    await c.update(await c.updateLink(repo, '/'), '/f.txt', local, { lastModify: Date.UTC(2012, 5, 6, 7, 8, 9) });
    expect(await mtimeOf('f.txt')).toBe(Date.UTC(2012, 5, 6, 7, 8, 9) / 1000);
    expect(await commits()).toBe(before + 1);

    await c.update(await c.updateLink(repo, '/'), '/f.txt', local, { lastModify: Date.UTC(2012, 5, 6, 7, 8, 9) });
    await c.update(await c.updateLink(repo, '/'), '/f.txt', local);
    expect(await mtimeOf('f.txt')).toBe(Date.UTC(2012, 5, 6, 7, 8, 9) / 1000);
    expect(await commits()).toBe(before + 1);
  });
});

describe('upload-api with replace=1 and last_modify', () => {
  it('gives the same content sent again its new time (a new entry, as real servers put one)', async () => {
    const local = files.write('batch bytes');
    const send = async (t: number) =>
      c.uploadBatch(await c.uploadLink(repo, '/'), '/', [{ path: local, name: 'b.txt' }], {
        replace: true,
        lastModify: t,
      });
    await send(Date.UTC(2003, 0, 1));
    expect(await mtimeOf('b.txt')).toBe(Date.UTC(2003, 0, 1) / 1000);
    await send(Date.UTC(2004, 0, 1));
    expect(await mtimeOf('b.txt')).toBe(Date.UTC(2004, 0, 1) / 1000);
  });
});

describe('seafs serve --server-version', () => {
  let old: TestServer;
  let oc: SeafileClient;
  let orepo: string;

  beforeAll(async () => {
    old = await startTestServer({ extraArgs: ['--server-version', '10.0.1'] });
    oc = await adminClient(old);
    orepo = (await oc.createLibrary('Old')).repo_id;
  });

  afterAll(async () => {
    await oc?.close();
    await old?.stop();
  });

  it('reports the version in server-info; by default 12.0.4, whose uploads keep last_modify', async () => {
    expect((await oc.serverInfo()).version).toBe('10.0.1');
    expect((await c.serverInfo()).version).toBe('12.0.4');
  });

  it('below 12.0.4 ignores last_modify: a file takes its upload time; the same content again is no change', async () => {
    const listed = async (name: string) => {
      const l = await oc.listDir(orepo, '/');
      if (l.uptodate) throw new Error('expected a full listing');
      return l.entries.find((e) => e.name === name)!;
    };
    const local = files.write('old server bytes');
    const before = Math.floor(Date.now() / 1000);
    await oc.uploadBatch(await oc.uploadLink(orepo, '/'), '/', [{ path: local, name: 'g.txt' }], {
      replace: true,
      lastModify: Date.UTC(2001, 0, 1),
    });
    const first = await listed('g.txt');
    expect(first.mtime).toBeGreaterThanOrEqual(before);
    const commits = async () => (await oc.libraryHistory(orepo)).commits.length;
    const n = await commits();
    await oc.update(await oc.updateLink(orepo, '/'), '/g.txt', local, { lastModify: Date.UTC(2012, 5, 6) });
    expect(await listed('g.txt')).toMatchObject({ id: first.id, mtime: first.mtime });
    expect(await commits()).toBe(n);
    const changed = files.write('new bytes');
    await oc.update(await oc.updateLink(orepo, '/'), '/g.txt', changed, { lastModify: Date.UTC(2012, 5, 6) });
    expect((await listed('g.txt')).mtime).toBeGreaterThanOrEqual(before);
  });

  it('refuses a version that is not X.Y.Z, saying so', async () => {
    await expect(startTestServer({ extraArgs: ['--server-version', 'ten'] })).rejects.toThrow(
      /--server-version must look like 12\.0\.4/,
    );
  });
});
