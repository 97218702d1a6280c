// Upload names real servers refuse, and the library download info, in `seafs serve`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, apiAs, startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let repo: string;

beforeAll(async () => {
  server = await startTestServer();
  admin = apiAs(server.url, await adminToken(server));
  repo = (await admin('POST', '/api2/repos/', { form: { name: 'names' } })).json.repo_id;
});

afterAll(async () => {
  await server?.stop();
});

describe('upload names', () => {
  it('a file name that is not valid UTF-8 is refused with 440, and nothing is stored', async () => {
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json as string;
    const b = 'utf8boundary';
    const body = Buffer.concat([
      Buffer.from(`--${b}\r\nContent-Disposition: form-data; name="parent_dir"\r\n\r\n/\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="bad`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`.txt"\r\n\r\ncontent\r\n--${b}--\r\n`),
    ]);
    const res = await fetch(link, { method: 'POST', headers: { 'Content-Type': `multipart/form-data; boundary=${b}` }, body });
    expect(res.status).toBe(440);
    expect((await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json).toEqual([]);
  });
});

describe('library download info', () => {
  it('names the library, its encryption and the file server root', async () => {
    const info = await admin('GET', `/api2/repos/${repo}/download-info/`);
    expect(info.status).toBe(200);
    expect(info.json).toMatchObject({ repo_id: repo, repo_name: 'names', encrypted: '', applet_root: `${server.url}/seafhttp` });
    expect((await admin('GET', '/api2/repos/00000000-0000-0000-0000-000000000000/download-info/')).status).toBe(404);
  });
});
