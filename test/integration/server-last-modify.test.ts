// last_modify on update-api: `seafs serve` stores the client's time, as real
// servers do, also when the content is the same (a time changed alone, as
// `touch -d` on a file already on the server makes the mount send it); the
// same content with no time or the same time commits nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { LocalFiles, adminClient } from '../helpers/client-setup.js';

let server: TestServer;
let c: SeafileClient;
let repo: string;
const files = new LocalFiles();

beforeAll(async () => {
  server = await startTestServer();
  c = await adminClient(server);
  repo = (await c.createLibrary('Times')).repo_id;
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
