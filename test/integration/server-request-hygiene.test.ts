// `seafs serve` and what a request may carry into it: a value that names a
// store object must be one (the trash's scan_stat), and the tokens in URLs
// never reach the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, startServerWithUsers, newLibrary, BOB, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;

beforeAll(async () => {
  ({
    server,
    admin,
    users: [bob],
  } = await startServerWithUsers([BOB], { extraArgs: ['--verbose'] }));
});

afterAll(async () => {
  await server?.stop();
});

/** The server's log once it shows `want` (stderr arrives a little after the answer), or as it is after 5 s. */
async function logShowing(want: string): Promise<string> {
  for (let i = 0; i < 50 && !server.log().includes(want); i++) await new Promise((r) => setTimeout(r, 100));
  return server.log();
}

describe("the trash's scan_stat", () => {
  it('pages as before with the value a page handed out, and anything but a commit of the library is 400, never a stack', async () => {
    const repo = await newLibrary(admin, 'trash-scan', { 'a.txt': 'a', 'b.txt': 'b' });
    for (const f of ['a.txt', 'b.txt'])
      expect((await admin('DELETE', `/api2/repos/${repo}/file/`, { query: { p: `/${f}` } })).status).toBe(200);
    const trash = `/api/v2.1/repos/${repo}/trash/`;
    const first = await admin('GET', trash, { query: { per_page: '1' } });
    expect(first.status).toBe(200);
    expect(first.json.more).toBe(true);
    const second = await admin('GET', trash, { query: { per_page: '1', scan_stat: first.json.scan_stat } });
    expect(second.status).toBe(200);
    expect([...first.json.data, ...second.json.data].map((e: { obj_name: string }) => e.obj_name).sort()).toEqual([
      'a.txt',
      'b.txt',
    ]);

    // a commit of another library, the root folder's id, a missing id, paths out of the store
    const other = await newLibrary(bob, 'trash-scan-other', { 'x.txt': 'x' });
    const otherHead = (await bob('GET', `/api/v2.1/repos/${other}/history/`)).json.data[0].commit_id as string;
    const rootId = (await admin('GET', `/api2/repos/${repo}/`)).json.root as string;
    const bad = [otherHead, rootId, '0'.repeat(40), 'f'.repeat(40), '../db.json', '../../../../etc/passwd', 'x'];
    for (const scan of bad) {
      for (const res of [
        await admin('GET', trash, { query: { scan_stat: scan } }),
        await admin('POST', trash, { json: { path: '/', scan_stat: scan } }),
      ]) {
        expect({ scan, status: res.status, body: res.json }).toEqual({
          scan,
          status: 400,
          body: { error_msg: 'scan_stat invalid.' },
        });
      }
    }
    const log = await logShowing(`GET /api/v2.1/repos/${repo}/trash/?scan_stat=x 400`);
    expect(log).toContain(`GET /api/v2.1/repos/${repo}/trash/?scan_stat=x 400`);
    expect(log).not.toMatch(/^error:/m);
    expect(log).not.toMatch(/\n\s+at /);
  });
});

describe('tokens in the log', () => {
  it("a library's share and upload links, named in the URL, and a zip download's token are not logged", async () => {
    const repo = await newLibrary(admin, 'log-links', { 'f.txt': 'f' });
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/d' }, form: { operation: 'mkdir' } });
    const share = (await admin('POST', '/api/v2.1/share-links/', { json: { repo_id: repo, path: '/f.txt' } })).json
      .token as string;
    const upload = (await admin('POST', '/api/v2.1/upload-links/', { json: { repo_id: repo, path: '/d' } })).json
      .token as string;
    for (const [kind, token] of [
      ['share-links', share],
      ['upload-links', upload],
    ])
      expect((await admin('DELETE', `/api/v2.1/repos/${repo}/${kind}/${token}/`)).status).toBe(200);

    const task = await admin('GET', `/api/v2.1/repos/${repo}/zip-task/`, {
      query: { parent_dir: '/', dirents: 'd' },
    });
    expect(task.status).toBe(200);
    const zipToken = task.json.zip_token as string;
    const zip = await fetch(`${server.url}/seafhttp/zip/${zipToken}`);
    expect(zip.status).toBe(200);
    await zip.arrayBuffer();

    const log = await logShowing('GET /seafhttp/zip/<token>');
    expect(log).toContain(`DELETE /api/v2.1/repos/${repo}/share-links/<token>/ 200`);
    expect(log).toContain(`DELETE /api/v2.1/repos/${repo}/upload-links/<token>/ 200`);
    expect(log).toContain('GET /seafhttp/zip/<token> 200');
    for (const t of [share, upload, zipToken]) expect(log).not.toContain(t);
  });
});
