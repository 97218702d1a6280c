// Regression tests for the holes of the blocks API in `seafs serve`: each
// probe of the attack as it was made, and what the server answers now.
// Upload-link tokens on the blocks URLs, encrypted content through a block
// download link, object ids of other libraries in that link, raw blocks and
// the quota, collection of blocks no commit uses, file_size, and a commit of
// a file over 5 GiB (whose block list is larger than an upload's form fields).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { FAST } from '../helpers/client-setup.js';
import { fileIdOfBlocks, seafileFileId, sha1hex } from '../helpers/seafile-ids.js';
import { storedBlockIds } from '../helpers/serve-store.js';
import {
  apiAs,
  BOB,
  CAROL,
  createUser,
  getToken,
  newLibrary,
  startServerWithUsers,
  uploadTo,
  type RawApi,
  type TestServer,
} from '../helpers/server.js';

let server: TestServer;
let admin: RawApi;
let bob: RawApi;
const anon = () => apiAs(server.url, null);

beforeAll(async () => {
  ({
    server,
    admin,
    users: [bob],
  } = await startServerWithUsers([BOB]));
});

afterAll(async () => {
  await server?.stop();
});

/** A multipart POST of text fields and files (`[filename, bytes]`, field "file"). */
async function postForm(
  url: string,
  fields: Record<string, string>,
  files: [string, Buffer][] = [],
): Promise<{ status: number; text: string }> {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  for (const [name, data] of files) fd.append('file', new Blob([data]), name);
  const res = await fetch(url, { method: 'POST', body: fd });
  return { status: res.status, text: await res.text() };
}

async function read(call: RawApi, repo: string, p: string): Promise<string> {
  const url = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p } })).json as string;
  return (await fetch(url)).text();
}

async function names(call: RawApi, repo: string, p = '/'): Promise<string[]> {
  return ((await call('GET', `/api2/repos/${repo}/dir/`, { query: { p } })).json as { name: string }[]).map(
    (e) => e.name,
  );
}

async function mkdir(call: RawApi, repo: string, p: string): Promise<void> {
  expect((await call('POST', `/api2/repos/${repo}/dir/`, { query: { p }, form: { operation: 'mkdir' } })).status).toBe(
    201,
  );
}

/** POST upload-blks-link: the raw and commit URLs of `repo`'s folder `p`, and which of `ids` it lacks. */
async function blocksLinks(
  call: RawApi,
  repo: string,
  ids: string[],
  p = '/',
): Promise<{ rawblksurl: string; commiturl: string; blklist: string[] }> {
  const r = await call('POST', `/api2/repos/${repo}/upload-blks-link/`, {
    query: { p },
    form: { blklist: ids.join(',') },
  });
  expect(r.status).toBe(200);
  return r.json;
}

/** The answer of a block download link of file `fileId`'s block `blockId`, asked for in `repo`. */
async function fetchBlock(
  call: RawApi,
  repo: string,
  fileId: string,
  blockId: string,
): Promise<{ status: number; text: string }> {
  const link = await call('GET', `/api2/repos/${repo}/files/${fileId}/blks/${blockId}/download-link/`);
  expect(link.status).toBe(200);
  const res = await fetch(link.json as string);
  return { status: res.status, text: await res.text() };
}

describe('an upload link on the blocks URLs', () => {
  it('commits only into its own folder: elsewhere 403, and the file there stays as it was', async () => {
    const repo = await newLibrary(bob, 'inbox-lib');
    await mkdir(bob, repo, '/inbox');
    await mkdir(bob, repo, '/private');
    const own = (await bob('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/private' } })).json as string;
    expect((await uploadTo(own, '/private', { 'important.txt': 'the original' })).status).toBe(200);

    const link = await bob('POST', '/api/v2.1/upload-links/', { json: { repo_id: repo, path: '/inbox' } });
    expect(link.status).toBe(200);
    const url = (await anon()('GET', `/api/v2.1/upload-links/${link.json.token}/upload/`)).json.upload_link as string;
    expect(url).toContain('/seafhttp/upload-api/');
    const evil = Buffer.from('overwritten by a link holder');
    const id = sha1hex(evil);
    // the raw block is taken (as real servers take it), then counted and collected if no commit uses it
    expect((await postForm(url.replace('/upload-api/', '/upload-raw-blks-api/'), {}, [[id, evil]])).text).toBe('"OK"');
    const commit = url.replace('/upload-api/', '/upload-blks-api/') + '?commitonly=true&ret-json=true';
    const fields = (parent: string) => ({
      parent_dir: parent,
      file_name: 'important.txt',
      file_size: String(evil.length),
      blockids: JSON.stringify([id]),
      replace: '1',
    });
    for (const parent of ['/private', '/', '/private/', '\\private']) {
      const refused = await postForm(commit, fields(parent));
      expect(refused, parent).toEqual({ status: 403, text: '{"error": "Permission denied.\n"}' });
    }
    expect(await read(bob, repo, '/private/important.txt')).toBe('the original');
    expect(await names(bob, repo)).toEqual(['inbox', 'private']);
    // into its own folder it commits (spelt with a trailing slash too)
    expect((await postForm(commit, fields('/inbox/'))).status).toBe(200);
    expect(await read(bob, repo, '/inbox/important.txt')).toBe(evil.toString());
  });
});

describe('a block download link of an encrypted library', () => {
  it('serves nothing to a reader who never gave the password (400, as the file link), and the block once given', async () => {
    const secret = 'the plaintext of an encrypted library';
    const repo = await newLibrary(admin, 'vault', { 'secret.txt': secret }, 'vault-pw-1');
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: BOB.email, permission: 'r' },
    });
    const blks = await bob('GET', `/api2/repos/${repo}/file/`, { query: { p: '/secret.txt', op: 'downloadblks' } });
    expect(blks.status).toBe(200);
    const [blockId] = blks.json.blklist as string[];
    const fileLink = await fetch((await bob('GET', `/api2/repos/${repo}/file/`, { query: { p: '/secret.txt' } })).json);
    expect(fileLink.status).toBe(400);
    const refused = await fetchBlock(bob, repo, blks.json.file_id, blockId);
    expect(refused).toEqual({ status: 400, text: 'Repo is encrypted. Please provide password to view it.\n' });
    // the owner gave it (newLibrary unlocks), and bob once he does
    expect(await fetchBlock(admin, repo, blks.json.file_id, blockId)).toEqual({ status: 200, text: secret });
    expect((await bob('POST', `/api2/repos/${repo}/`, { form: { password: 'vault-pw-1' } })).status).toBe(200);
    expect(await fetchBlock(bob, repo, blks.json.file_id, blockId)).toEqual({ status: 200, text: secret });
  });
});

describe('a block download link takes only a file of its library', () => {
  it("another library's commit, folder or file id answers 400 and lends no block to the asker's library", async () => {
    const content = 'the private notes of the administrator';
    const theirs = await newLibrary(admin, 'theirs', { 'notes.txt': content });
    await mkdir(admin, theirs, '/hidden');
    await uploadTo(
      (await admin('GET', `/api2/repos/${theirs}/upload-link/`, { query: { p: '/hidden' } })).json,
      '/hidden',
      { 'deep.txt': 'in a folder' },
    );
    const history = await admin('GET', `/api2/repos/${theirs}/history/`);
    const commitId = history.json.commits[0].id as string;
    const folderId = (await admin('GET', `/api2/repos/${theirs}/dir/`, { query: { p: '/' } })).json.find(
      (e: { name: string }) => e.name === 'hidden',
    ).id as string;
    const fileId = seafileFileId(Buffer.from(content));
    const blockId = sha1hex(content);

    const mine = await newLibrary(bob, 'mine');
    // an object's block under the old, whole-object path is the object itself: its id is its sha1
    for (const [what, f, b] of [
      ['commit', commitId, commitId],
      ['folder', folderId, folderId],
      ['file', fileId, blockId],
    ]) {
      const got = await fetchBlock(bob, mine, f, b);
      expect(got.status, what).toBe(400);
      expect(got.text, what).toBe('Invalid file id\n\n');
    }
    // the block was not lent: bob's library still lacks it, and a commit of it fails as one of a missing block
    const links = await blocksLinks(bob, mine, [blockId]);
    expect(links.blklist).toEqual([blockId]);
    const stolen = await postForm(links.commiturl, {
      parent_dir: '/',
      file_name: 'stolen.txt',
      file_size: String(content.length),
      blockids: JSON.stringify([blockId]),
    });
    expect(stolen.status).toBe(443);
    expect(await names(bob, mine)).toEqual([]);
  });

  it("a file of the library's history serves its blocks; its folder's id does not", async () => {
    const old = 'a file deleted since';
    const repo = await newLibrary(bob, 'history', { 'gone.txt': old });
    await mkdir(bob, repo, '/sub');
    const subId = (await bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json.find(
      (e: { name: string }) => e.name === 'sub',
    ).id as string;
    expect((await bob('DELETE', `/api2/repos/${repo}/file/`, { query: { p: '/gone.txt' } })).status).toBe(200);
    expect(await fetchBlock(bob, repo, seafileFileId(Buffer.from(old)), sha1hex(old))).toEqual({
      status: 200,
      text: old,
    });
    expect((await fetchBlock(bob, repo, subId, subId)).status).toBe(400);
  });
});

describe('file_size of a blocks commit', () => {
  it('a value that is not a byte count, or not the size of the blocks, is refused (400) and nothing is stored', async () => {
    const repo = await newLibrary(admin, 'sizes');
    const block = randomBytes(5000);
    const id = sha1hex(block);
    const links = await blocksLinks(admin, repo, [id]);
    expect((await postForm(links.rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    const commit = (name: string, size: string) =>
      postForm(links.commiturl, { parent_dir: '/', file_name: name, file_size: size, blockids: JSON.stringify([id]) });
    for (const size of ['9'.repeat(400), '9007199254740993', '4999', '5001']) {
      const r = await commit(`f-${size.length}-${size.slice(-1)}.bin`, size);
      expect(r.status, size.slice(0, 20)).toBe(400);
    }
    expect(await names(admin, repo)).toEqual([]);
    const info = await admin('GET', '/api2/account/info/');
    expect(typeof info.json.usage).toBe('number');
    expect((await commit('right.bin', '5000')).status).toBe(200);
    expect(await names(admin, repo)).toEqual(['right.bin']);
  });
});

describe('raw blocks and the quota', () => {
  it('blocks sent and not yet committed count against the owner quota (443 past it), and their commit fits', async () => {
    await createUser(server, CAROL.email, CAROL.password, { storage: '1' }); // 1 MB
    const carol = apiAs(server.url, await getToken(server.url, CAROL.email, CAROL.password));
    const repo = await newLibrary(carol, 'small');
    const a = randomBytes(700_000);
    const b = randomBytes(700_000);
    let links = await blocksLinks(carol, repo, [sha1hex(a), sha1hex(b)]);
    expect((await postForm(links.rawblksurl, {}, [[sha1hex(a), a]])).text).toBe('"OK"');
    const over = await postForm(links.rawblksurl, {}, [[sha1hex(b), b]]);
    expect(over.status).toBe(443);
    expect((await blocksLinks(carol, repo, [sha1hex(b)])).blklist).toEqual([sha1hex(b)]);
    // a restart remembers what waits for a commit (links are new: their tokens were the old process's)
    await server.restart({ samePort: true });
    links = await blocksLinks(carol, repo, [sha1hex(a), sha1hex(b)]);
    expect(links.blklist).toEqual([sha1hex(b)]);
    expect((await postForm(links.rawblksurl, {}, [[sha1hex(b), b]])).status).toBe(443);
    // sending a block the library holds again adds nothing
    expect((await postForm(links.rawblksurl, {}, [[sha1hex(a), a]])).text).toBe('"OK"');
    const done = await postForm(links.commiturl, {
      parent_dir: '/',
      file_name: 'a.bin',
      file_size: String(a.length),
      blockids: JSON.stringify([sha1hex(a)]),
    });
    expect(done.status).toBe(200);
    expect((await postForm(links.rawblksurl, {}, [[sha1hex(b), b]])).status).toBe(443);
  });
});

describe('raw blocks that fill the quota', () => {
  it('still get links to commit them (the link views count committed files only), and commit', async () => {
    const dave = { email: 'dave@seafs.test', password: 'dave-pw-1' };
    await createUser(server, dave.email, dave.password, { storage: '1' }); // 10^6 bytes
    const call = apiAs(server.url, await getToken(server.url, dave.email, dave.password));
    const repo = await newLibrary(call, 'full');
    const block = randomBytes(1_000_000);
    const id = sha1hex(block);
    expect((await postForm((await blocksLinks(call, repo, [id])).rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    const links = await blocksLinks(call, repo, [id]);
    expect(links.blklist).toEqual([]);
    const done = await postForm(links.commiturl, {
      parent_dir: '/',
      file_name: 'full.bin',
      file_size: String(block.length),
      blockids: JSON.stringify([id]),
    });
    expect(done.status).toBe(200);
    // now the files fill it: links answer 443 as seahub's do
    const over = await call('POST', `/api2/repos/${repo}/upload-blks-link/`, { form: { blklist: id } });
    expect(over.status).toBe(443);
  });
});

describe('blocks no commit uses', () => {
  let gcServer: TestServer;
  let gcAdmin: RawApi;
  beforeAll(async () => {
    // test knob: a raw block no commit took is removed after 1 s
    ({ server: gcServer, admin: gcAdmin } = await startServerWithUsers([], { extraArgs: ['--block-grace', '1'] }));
  });
  afterAll(() => gcServer?.stop());

  it('are removed after the grace period and stop counting; committed ones and those another library holds stay', async () => {
    const repo = await newLibrary(gcAdmin, 'a');
    const other = await newLibrary(gcAdmin, 'b');
    const [lone, used, shared] = [randomBytes(3000), randomBytes(4000), randomBytes(5000)];
    const ids = [lone, used, shared].map((x) => sha1hex(x));
    const links = await blocksLinks(gcAdmin, repo, ids);
    expect((await postForm(links.rawblksurl, {}, [[ids[0], lone]])).text).toBe('"OK"');
    expect((await postForm(links.rawblksurl, {}, [[ids[2], shared]])).text).toBe('"OK"');
    /** sends a block and commits it as a client does: sent again after a 443 (the grace is short here) */
    const sendAndCommit = async (r: string, name: string, data: Buffer) => {
      const l = await blocksLinks(gcAdmin, r, [sha1hex(data)]);
      for (let i = 0; ; i++) {
        expect((await postForm(l.rawblksurl, {}, [[sha1hex(data), data]])).text).toBe('"OK"');
        const fields = {
          parent_dir: '/',
          file_name: name,
          file_size: String(data.length),
          blockids: JSON.stringify([sha1hex(data)]),
        };
        const done = await postForm(l.commiturl, fields);
        if (done.status === 200 || i === 3) return expect(done.status).toBe(200);
        expect(done.status).toBe(443);
      }
    };
    await sendAndCommit(repo, 'used.bin', used);
    await sendAndCommit(other, 'shared.bin', shared);

    // collected once the grace period is over (the sweep runs every second with this knob)
    let missing: string[] = [];
    for (let i = 0; i < 150; i++) {
      missing = (await blocksLinks(gcAdmin, repo, ids)).blklist;
      if (missing.includes(ids[0]) && missing.includes(ids[2])) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(missing).toEqual([ids[0], ids[2]]);
    const onDisk = storedBlockIds(gcServer.dataDir);
    expect(onDisk).not.toContain(ids[0]);
    expect(onDisk).toContain(ids[1]);
    expect(onDisk).toContain(ids[2]);
    const readBytes = async (r: string, p: string) => {
      const url = (await gcAdmin('GET', `/api2/repos/${r}/file/`, { query: { p } })).json as string;
      return Buffer.from(await (await fetch(url)).arrayBuffer());
    };
    expect((await readBytes(repo, '/used.bin')).equals(used)).toBe(true);
    expect((await readBytes(other, '/shared.bin')).equals(shared)).toBe(true);
  });

  it('stop counting against the quota once removed', async () => {
    await createUser(gcServer, CAROL.email, CAROL.password, { storage: '1' }); // 1 MB
    const carol = apiAs(gcServer.url, await getToken(gcServer.url, CAROL.email, CAROL.password));
    const repo = await newLibrary(carol, 'small');
    const [a, b] = [randomBytes(700_000), randomBytes(700_000)];
    const links = await blocksLinks(carol, repo, [sha1hex(a), sha1hex(b)]);
    expect((await postForm(links.rawblksurl, {}, [[sha1hex(a), a]])).text).toBe('"OK"');
    let last = 0;
    for (let i = 0; i < 150; i++) {
      last = (await postForm(links.rawblksurl, {}, [[sha1hex(b), b]])).status;
      if (last === 200) break;
      expect(last).toBe(443);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(last).toBe(200);
  });
});

describe('a file over 5 GiB by blocks through the client', () => {
  it('commits (its block list is larger than the fields of an upload) and reads back: size, blocks, a range', async () => {
    const { client } = await SeafileClient.login(
      { baseUrl: server.url, ...FAST },
      server.adminEmail,
      server.adminPassword,
    );
    try {
      const repo = (await client.createLibrary('huge')).repo_id;
      const MiB = 1 << 20;
      // sparse: zero blocks share one id, so 5 GiB cost two blocks
      const zero8 = Buffer.alloc(8 * MiB);
      const zeroTail = Buffer.alloc(MiB);
      const ids = [...Array<string>(640).fill(sha1hex(zero8)), sha1hex(zeroTail)];
      const size = 640 * 8 * MiB + MiB;
      const link = await client.blocksLink(repo, '/', ids);
      expect(new Set(link.missing)).toEqual(new Set([sha1hex(zero8), sha1hex(zeroTail)]));
      await client.uploadBlocks(link.rawUrl, [
        { id: sha1hex(zero8), length: zero8.length, offset: 0, data: zero8 },
        { id: sha1hex(zeroTail), length: zeroTail.length, offset: 0, data: zeroTail },
      ]);
      const fileId = await client.commitBlocks(link.commitUrl, {
        parentDir: '/',
        name: 'huge.bin',
        size,
        ids,
        replace: false,
        repoId: repo,
      });
      expect(fileId).toBe(fileIdOfBlocks(ids, size));

      const detail = await admin('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/huge.bin' } });
      expect(detail.json).toMatchObject({ id: fileId, size });
      const blks = await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/huge.bin', op: 'downloadblks' } });
      expect(blks.json.blklist).toEqual(ids);
      const url = (await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/huge.bin', reuse: '1' } })).json;
      for (const start of [5 * 1024 * MiB - 100, size - 1000]) {
        const res = await fetch(url, { headers: { Range: `bytes=${start}-${start + 999}` } });
        expect(res.status).toBe(206);
        expect(res.headers.get('content-range')).toBe(`bytes ${start}-${start + 999}/${size}`);
        expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.alloc(1000))).toBe(true);
      }
    } finally {
      await client.close();
    }
  });
});
