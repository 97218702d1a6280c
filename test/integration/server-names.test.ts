// Upload names real servers refuse, the library download info and restoring
// from the trash (real servers' dir/revert and file/revert forms), in `seafs serve`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient, fetchFile } from '../helpers/client-setup.js';
import { adminToken, apiAs, startTestServer, uploadTo, type TestServer } from '../helpers/server.js';

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
      Buffer.from(
        `--${b}\r\nContent-Disposition: form-data; name="parent_dir"\r\n\r\n/\r\n--${b}\r\nContent-Disposition: form-data; name="file"; filename="bad`,
      ),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`.txt"\r\n\r\ncontent\r\n--${b}--\r\n`),
    ]);
    const res = await fetch(link, {
      method: 'POST',
      headers: { 'Content-Type': `multipart/form-data; boundary=${b}` },
      body,
    });
    expect(res.status).toBe(440);
    expect((await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json).toEqual([]);
  });
});

describe('names as real servers store them (checked against a real CE 10.0)', () => {
  const NFD = 'e\u0301';
  const NFC = '\u00e9';
  let lib: string;
  const names = async (p = '/') =>
    ((await admin('GET', `/api2/repos/${lib}/dir/`, { query: { p } })).json as { name: string }[])
      .map((e) => e.name)
      .sort();
  const link = async (p = '/') =>
    (await admin('GET', `/api2/repos/${lib}/upload-link/`, { query: { p } })).json as string;

  beforeAll(async () => {
    lib = (await admin('POST', '/api2/repos/', { form: { name: 'normalise' } })).json.repo_id;
  });

  it('normalises new names to NFC in uploads, mkdir, create and rename; an NFD upload replaces the NFC file', async () => {
    const up = await uploadTo(await link(), '/', { [`${NFD}.txt`]: 'one' }, { replace: true });
    expect(JSON.parse(up.text)).toEqual([expect.objectContaining({ name: `${NFC}.txt`, size: 3 })]);
    const again = await uploadTo(await link(), '/', { [`${NFD}.txt`]: 'two!' }, { replace: true });
    expect(JSON.parse(again.text)).toEqual([expect.objectContaining({ name: `${NFC}.txt`, size: 4 })]);
    expect(await names()).toEqual([`${NFC}.txt`]);
    const mk = await admin('POST', `/api2/repos/${lib}/dir/`, {
      query: { p: `/d${NFD}` },
      form: { operation: 'mkdir' },
    });
    expect(mk.status).toBe(201);
    await admin('POST', `/api2/repos/${lib}/file/`, { query: { p: `/c${NFD}` }, form: { operation: 'create' } });
    const rn = await admin('POST', `/api2/repos/${lib}/file/`, {
      query: { p: `/${NFC}.txt` },
      form: { operation: 'rename', newname: `r${NFD}.txt` },
    });
    expect(rn.status).toBe(301);
    await admin('POST', `/api2/repos/${lib}/dir/`, {
      query: { p: `/d${NFC}` },
      form: { operation: 'rename', newname: `x${NFD}` },
    });
    expect(await names()).toEqual([`c${NFC}`, `r${NFC}.txt`, `x${NFC}`]);
    // parent_dir is normalised too; lookups are not (seahub answers 404 for the NFD path)
    const inner = await uploadTo(await link(`/x${NFC}`), `/x${NFD}`, { [`f${NFD}`]: 'in' });
    expect(inner.status).toBe(200);
    expect(await names(`/x${NFC}`)).toEqual([`f${NFC}`]);
    expect((await admin('GET', `/api2/repos/${lib}/dir/`, { query: { p: `/x${NFD}` } })).status).toBe(404);
  });

  it('keeps a backslash in mkdir and rename, and an upload keeps only what follows the last one (C fileserver)', async () => {
    await admin('POST', `/api2/repos/${lib}/dir/`, { query: { p: '/bs' }, form: { operation: 'mkdir' } });
    expect(
      (await admin('POST', `/api2/repos/${lib}/dir/`, { query: { p: '/bs/a\\b' }, form: { operation: 'mkdir' } }))
        .status,
    ).toBe(201);
    const up = await uploadTo(await link('/bs'), '/bs', { 'p\\q.txt': 'cut' });
    expect(JSON.parse(up.text)).toEqual([expect.objectContaining({ name: 'q.txt' })]);
    const rn = await admin('POST', `/api2/repos/${lib}/file/`, {
      query: { p: '/bs/q.txt' },
      form: { operation: 'rename', newname: 's\\t.txt' },
    });
    expect(rn.status).toBe(301);
    expect(await names('/bs')).toEqual(['a\\b', 's\\t.txt']);
  });

  it('acts on a/b for an upload into, a delete in, or a mkdir with parents of a folder a\\b (C get_canonical_path)', async () => {
    const mk = (p: string, parents = false) =>
      admin('POST', `/api2/repos/${lib}/dir/`, {
        query: { p },
        form: { operation: 'mkdir', ...(parents ? { create_parents: 'true' } : {}) },
      });
    expect((await mk('/cz\\b')).status).toBe(201);
    // no cz/b yet: the upload's folder does not exist
    expect((await uploadTo(await link('/cz\\b'), '/cz\\b', { 'in.txt': 'x' })).status).toBe(400);
    expect((await mk('/cz/b', true)).status).toBe(201);
    const up = await uploadTo(await link('/cz\\b'), '/cz\\b', { 'in.txt': 'x' });
    expect(up.status).toBe(200);
    expect(await names('/cz\\b')).toEqual([]);
    expect(await names('/cz/b')).toEqual(['in.txt']);
    expect((await admin('DELETE', `/api2/repos/${lib}/file/`, { query: { p: '/cz\\b/in.txt' } })).status).toBe(200);
    expect(await names('/cz/b')).toEqual([]);
    expect((await mk('/mp\\q', true)).status).toBe(201);
    expect(await names('/mp')).toEqual(['q']);
  });

  it('answers 500 to an upload or update whose file part is named over 249 bytes (the temporary file name fails)', async () => {
    await admin('POST', `/api2/repos/${lib}/dir/`, { query: { p: '/long' }, form: { operation: 'mkdir' } });
    const l = await link('/long');
    expect((await uploadTo(l, '/long', { ['K'.repeat(249)]: 'fits' })).status).toBe(200);
    expect((await uploadTo(l, '/long', { ['K'.repeat(250)]: 'no' })).status).toBe(500);
    // mkdir, create and rename take names up to 255 bytes
    const long = 'N'.repeat(255);
    expect(
      (
        await admin('POST', `/api2/repos/${lib}/file/`, {
          query: { p: `/long/${long}` },
          form: { operation: 'create' },
        })
      ).status,
    ).toBe(201);
    expect(await names('/long')).toEqual(['K'.repeat(249), long]);
    // the client names the update's part briefly: the name comes from target_file
    const c = await adminClient(server);
    const tmp = join(await mkdtemp(join(tmpdir(), 'seafs-names-')), 'data');
    await writeFile(tmp, 'updated');
    const ul = await c.updateLink(lib, '/long');
    await c.update(ul, `/long/${long}`, tmp);
    expect((await fetchFile(c, lib, `/long/${long}`)).toString()).toBe('updated');
  });
});

describe('library download info', () => {
  it('names the library, its encryption and the file server root', async () => {
    const info = await admin('GET', `/api2/repos/${repo}/download-info/`);
    expect(info.status).toBe(200);
    expect(info.json).toMatchObject({
      repo_id: repo,
      repo_name: 'names',
      encrypted: '',
      applet_root: `${server.url}/seafhttp`,
    });
    expect((await admin('GET', '/api2/repos/00000000-0000-0000-0000-000000000000/download-info/')).status).toBe(404);
  });
});

describe('trash restore', () => {
  it('a deleted folder listed in the trash comes back with dir/revert at its commit, under a new name when another folder holds its name', async () => {
    await admin('POST', `/api2/repos/${repo}/dir/`, {
      query: { p: '/old/deep' },
      form: { operation: 'mkdir', create_parents: 'true' },
    });
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/old/deep' } })).json as string;
    await uploadTo(link, '/old/deep', { 'kept.txt': 'kept content' });
    expect((await admin('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/old' } })).status).toBe(200);
    const trash = (await admin('GET', `/api/v2.1/repos/${repo}/trash/`)).json.data as {
      obj_name: string;
      commit_id: string;
      parent_dir: string;
    }[];
    const item = trash.find((e) => e.obj_name === 'old')!;
    expect(item).toMatchObject({ parent_dir: '/', is_dir: true });
    const back = await admin('PUT', `/api2/repos/${repo}/dir/revert/`, {
      form: { p: '/old', commit_id: item.commit_id },
    });
    expect(back.json).toEqual({ success: true });
    const dl = await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/old/deep/kept.txt' } });
    expect(await (await fetch(dl.json)).text()).toBe('kept content');
    const rootNames = async () =>
      ((await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json as { name: string }[])
        .map((e) => e.name)
        .sort();
    // a second restore while the same folder is back changes nothing (real servers skip it)
    const head = async () => (await admin('GET', `/api2/repos/${repo}/history/`)).json.commits[0].id as string;
    const before = await head();
    await admin('PUT', `/api2/repos/${repo}/dir/revert/`, { form: { p: '/old', commit_id: item.commit_id } });
    expect(await rootNames()).toEqual(['old']);
    expect(await head()).toBe(before);
    // once the folder there differs, the restore lands beside it with " (1)" after the whole name
    await uploadTo(link, '/old/deep', { 'new.txt': 'new' });
    await admin('PUT', `/api2/repos/${repo}/dir/revert/`, { form: { p: '/old', commit_id: item.commit_id } });
    expect(await rootNames()).toEqual(['old', 'old (1)']);
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/v1.0' }, form: { operation: 'mkdir' } });
    await admin('DELETE', `/api2/repos/${repo}/dir/`, { query: { p: '/v1.0' } });
    const dotted = ((await admin('GET', `/api/v2.1/repos/${repo}/trash/`)).json.data as typeof trash).find(
      (e) => e.obj_name === 'v1.0',
    )!;
    await admin('POST', `/api2/repos/${repo}/file/`, { query: { p: '/v1.0' }, form: { operation: 'create' } });
    await admin('PUT', `/api2/repos/${repo}/dir/revert/`, { form: { p: '/v1.0', commit_id: dotted.commit_id } });
    expect(await rootNames()).toEqual(['old', 'old (1)', 'v1.0', 'v1.0 (1)']);
    expect(
      (await admin('PUT', `/api2/repos/${repo}/dir/revert/`, { form: { p: '/nothing', commit_id: item.commit_id } }))
        .status,
    ).toBe(404);
  });
});

describe('--refuse-emoji-names: the newest seahub refuses emoji in mkdir, create, rename and library names', () => {
  let strict: TestServer;
  let call: ReturnType<typeof apiAs>;
  let lib: string;
  const E = 'party \u{1F389}';

  beforeAll(async () => {
    strict = await startTestServer({ extraArgs: ['--refuse-emoji-names'] });
    call = apiAs(strict.url, await adminToken(strict));
    lib = (await call('POST', '/api2/repos/', { form: { name: 'strict' } })).json.repo_id;
  });
  afterAll(async () => {
    await strict?.stop();
  });

  it('answers 400 to each, stores nothing, and still takes the name in an upload', async () => {
    const at = `/api2/repos/${lib}`;
    expect((await call('POST', `${at}/dir/`, { query: { p: `/${E}` }, form: { operation: 'mkdir' } })).status).toBe(
      400,
    );
    expect(
      (await call('POST', `${at}/file/`, { query: { p: `/${E}.txt` }, form: { operation: 'create' } })).status,
    ).toBe(400);
    expect((await call('POST', `${at}/dir/`, { query: { p: '/ok' }, form: { operation: 'mkdir' } })).status).toBe(201);
    expect(
      (await call('POST', `${at}/dir/`, { query: { p: '/ok' }, form: { operation: 'rename', newname: E } })).status,
    ).toBe(400);
    expect((await call('POST', '/api2/repos/', { form: { name: E } })).status).toBe(400);
    const link = (await call('GET', `${at}/upload-link/`, { query: { p: '/' } })).json as string;
    expect((await uploadTo(link, '/', { [`${E}.txt`]: 'x' })).status).toBe(200);
    const names = ((await call('GET', `${at}/dir/`, { query: { p: '/' } })).json as { name: string }[]).map(
      (e) => e.name,
    );
    expect(names.sort()).toEqual(['ok', `${E}.txt`]);
  });
});
