// The blocks API (upload-blks-link, upload-raw-blks-api, upload-blks-api and
// update-blks-api commits, op=downloadblks, block download links) driven over
// HTTP: the same script against `seafs serve` and a real Seafile CE 10.0, whose
// answers (status, type, body with ids and tokens named) must be the same;
// then what only `seafs serve`'s store shows: blocks stored once, kept per
// library, quota and size limits, a store from before blocks, kill -9.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realServerSkipped, startServerOfKind, type ServerKind } from '../helpers/real-server.js';
import { blockIdsOf, fileIdOfBlocks, seafileFileId, sha1hex } from '../helpers/seafile-ids.js';
import { storedBlock, storedBlockIds } from '../helpers/serve-store.js';
import { adminToken, apiAs, createUser, getToken, startTestServer, type TestServer } from '../helpers/server.js';

type Call = ReturnType<typeof apiAs>;

interface Answer {
  status: number;
  type: string;
  text: string;
  headers: Headers;
}

/**
 * A multipart POST whose answer counts even when the server closes the
 * connection before reading the body (the C fileserver does on a refused
 * token: fetch would fail with EPIPE instead).
 */
function post(url: string, fields: Record<string, string>, files: [string, Buffer, string?][] = []): Promise<Answer> {
  const boundary = 'seafsblk' + randomBytes(8).toString('hex');
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields))
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  for (const [name, data, field] of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${field ?? 'file'}"; filename="${name}"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      ),
      data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  const body = Buffer.concat(parts);
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            type: res.headers['content-type'] ?? '',
            text: Buffer.concat(chunks).toString('utf8'),
            headers: new Headers(),
          }),
        );
        res.on('error', reject);
      },
    );
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', (e) => {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EPIPE' && code !== 'ECONNRESET') reject(e);
    });
    req.on('close', () => {
      if (!answered) reject(new Error(`POST ${u.pathname}: no answer`));
    });
    req.end(body);
  });
}

async function answer(res: Response): Promise<Answer> {
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    text: await res.text(),
    headers: res.headers,
  };
}

/** The blocks scenario; returns its transcript with tokens, hosts and ids named. */
async function scenario(server: TestServer): Promise<{ lines: string[]; facts: Record<string, unknown> }> {
  const token = await adminToken(server);
  const call = apiAs(server.url, token);
  const repo = (await call('POST', '/api2/repos/', { form: { name: 'blocks' } })).json.repo_id as string;
  await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/d' }, form: { operation: 'mkdir' } });
  const b = [randomBytes(1000), randomBytes(2000), randomBytes(3000), randomBytes(100)];
  const id = b.map((x) => sha1hex(x));
  const f123 = fileIdOfBlocks(id.slice(0, 3), 6000);
  const f3 = fileIdOfBlocks([id[2]], 3000);
  const big = randomBytes(9 << 20);
  const names = new Map<string, string>([...id.map((x, i): [string, string] => [x, `<b${i + 1}>`])]);
  names.set(f123, '<file b1 b2 b3>');
  names.set(f3, '<file b3>');
  names.set(fileIdOfBlocks([id[0]], 1000), '<file b1>');
  names.set(seafileFileId(big), '<big file>');
  blockIdsOf(big).forEach((x, i) => names.set(x, `<big block ${i}>`));
  const norm = (s: string) => {
    let out = s
      .replace(/https?:\/\/127\.0\.0\.1:\d+(\/seafhttp)?/g, '<host>')
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\/[0-9a-f]{32}(?=[/?"]|$)/g, (m) =>
        m.startsWith('/') ? '/<token>' : '<token>',
      );
    for (const [k, v] of names) out = out.split(k).join(v);
    return out;
  };
  const lines: string[] = [];
  const facts: Record<string, unknown> = {};
  const log = (step: string, a: { status: number; type?: string; text: string }, withType = true) =>
    lines.push(`${step}: ${a.status}${withType ? ` [${a.type}]` : ''} ${norm(a.text)}`);
  const apiAnswer = async (method: string, p: string, o: Parameters<Call>[2] = {}) => {
    const r = await call(method, p, o);
    return { status: r.status, type: r.headers.get('content-type') ?? '', text: r.text, headers: r.headers };
  };

  log('GET upload-blks-link', await apiAnswer('GET', `/api2/repos/${repo}/upload-blks-link/`, { query: { p: '/d' } }));
  log(
    'POST upload-blks-link, no such folder',
    await apiAnswer('POST', `/api2/repos/${repo}/upload-blks-link/`, {
      query: { p: '/nope' },
      form: { blklist: id[0] },
    }),
    false,
  );
  log(
    'POST upload-blks-link, no blklist',
    await apiAnswer('POST', `/api2/repos/${repo}/upload-blks-link/`, { query: { p: '/d' } }),
  );
  const links = await apiAnswer('POST', `/api2/repos/${repo}/upload-blks-link/`, {
    query: { p: '/d' },
    form: { blklist: `${id[0]},${id[1]}` },
  });
  log('POST upload-blks-link', links);
  const { rawblksurl: raw, commiturl: commit } = JSON.parse(links.text) as Record<string, string>;
  log('raw block', await post(raw, {}, [[id[0], b[0]]]));
  log('raw block, id not its sha1', await post(raw, {}, [[id[1], b[0]]]));
  log('raw block, id not hex', await post(raw, {}, [['block', b[0]]]));
  log('raw block, field not "file"', await post(raw, {}, [[id[1], b[1], 'other']]));
  log('raw, not multipart', await answer(await fetch(raw, { method: 'POST', body: 'x' })));
  log(
    'two raw blocks',
    await post(raw, {}, [
      [id[1], b[1]],
      [id[2], b[2]],
    ]),
  );
  log(
    'POST upload-blks-link, after',
    await apiAnswer('POST', `/api2/repos/${repo}/upload-blks-link/`, {
      query: { p: '/d' },
      form: { blklist: id.join(',') },
    }),
  );
  const fields = (o: Record<string, string | undefined> = {}) => {
    const all: Record<string, string | undefined> = {
      parent_dir: '/d',
      file_name: 'x.bin',
      file_size: '6000',
      blockids: JSON.stringify(id.slice(0, 3)),
      replace: '1',
      ...o,
    };
    return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as Record<string, string>;
  };
  const commitNoJson = commit.replace('&ret-json=true', '');
  const commitBare = commit.split('?')[0];
  log('commit', await post(commit, fields()));
  log('commit without ret-json', await post(commitNoJson, fields()));
  log('commit without commitonly', await post(commitBare, fields()));
  log('commit, a block missing', await post(commit, fields({ blockids: JSON.stringify([id[0], id[3]]) })));
  log('commit, replace=0 onto a file', await post(commit, fields({ replace: '0' })));
  log('commit, replace=2', await post(commit, fields({ replace: '2' })));
  log('commit, no such parent', await post(commit, fields({ parent_dir: '/nope' })));
  log('commit, no blockids', await post(commit, fields({ blockids: undefined })));
  log('commit, no file_size', await post(commit, fields({ file_size: undefined })));
  log('commit, name with a slash', await post(commit, fields({ file_name: 'a/b' })));
  log('commit, empty list', await post(commit, fields({ file_name: 'empty.bin', blockids: '[]', file_size: '0' })));
  const listing = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/d' } });
  lines.push(
    `listing: ${norm(JSON.stringify(listing.json.map((e: { name: string; id: string; size: number }) => [e.name, e.id, e.size])))}`,
  );
  const blks = await apiAnswer('GET', `/api2/repos/${repo}/file/`, { query: { p: '/d/x.bin', op: 'downloadblks' } });
  log('downloadblks', blks);
  lines.push(`downloadblks oid: ${norm(blks.headers.get('oid') ?? '')}`);
  log(
    'downloadblks, empty file',
    await apiAnswer('GET', `/api2/repos/${repo}/file/`, { query: { p: '/d/empty.bin', op: 'downloadblks' } }),
  );
  const dl = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/d/x.bin' } })).json as string;
  facts.content = Buffer.from(await (await fetch(dl)).arrayBuffer()).equals(Buffer.concat(b.slice(0, 3)));

  const blkLink = await apiAnswer('GET', `/api2/repos/${repo}/files/${f123}/blks/${id[1]}/download-link/`);
  log('block download link', blkLink);
  const blkRes = await fetch(JSON.parse(blkLink.text) as string);
  const blkBytes = Buffer.from(await blkRes.arrayBuffer());
  lines.push(
    norm(
      `block download: ${blkRes.status} ${blkRes.headers.get('content-disposition')} ${blkRes.headers.get('content-length')} ${blkRes.headers.get('content-type')} ${blkBytes.equals(b[1])}`,
    ),
  );
  log('block download again', await answer(await fetch(JSON.parse(blkLink.text) as string)));
  const notIn = await call('GET', `/api2/repos/${repo}/files/${f123}/blks/${id[3]}/download-link/`);
  log('block not in the file', await answer(await fetch(notIn.json as string)));
  const noFile = await call('GET', `/api2/repos/${repo}/files/${'1'.repeat(40)}/blks/${id[1]}/download-link/`);
  log('block of no file', await answer(await fetch(noFile.json as string)));
  log(
    'block download link, no such folder',
    await apiAnswer('GET', `/api2/repos/${repo}/files/${f123}/blks/${id[1]}/download-link/`, { query: { p: '/nope' } }),
    false,
  );

  const updLink = await apiAnswer('GET', `/api2/repos/${repo}/update-blks-link/`, { query: { p: '/d' } });
  log('update-blks-link', updLink);
  const upd = JSON.parse(updLink.text) as string;
  const updFields = (o: Record<string, string> = {}) => ({
    target_file: '/d/x.bin',
    file_size: '3000',
    blockids: JSON.stringify([id[2]]),
    ...o,
  });
  log('update-blks', await post(`${upd}?commitonly=true`, updFields()));
  log('update-blks without commitonly', await post(upd, updFields()));
  log('update-blks, a new file', await post(`${upd}?commitonly=true`, updFields({ target_file: '/d/new.bin' })));
  log(
    'update-blks, a block missing',
    await post(`${upd}?commitonly=true`, updFields({ blockids: JSON.stringify([id[3]]) })),
  );
  log('update-blks, ret-json', await post(`${upd}?commitonly=true&ret-json=1`, updFields()));
  log(
    'update-blks with the upload token',
    await post(raw.replace('upload-raw-blks-api', 'update-blks-api') + '?commitonly=true', updFields()),
  );
  const commitOnly = (await call('GET', `/api2/repos/${repo}/upload-blks-link/`, { query: { p: '/d' } }))
    .json as string;
  log(
    'raw block with the GET link token',
    await post(commitOnly.replace('upload-blks-api', 'upload-raw-blks-api'), {}, [[id[3], b[3]]]),
  );
  log('commit with the GET link', await post(`${commitOnly}?commitonly=true`, fields({ file_name: 'g.bin' })));
  const upl = (await call('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/d' } })).json as string;
  log(
    'raw block with an upload-link token',
    await post(upl.replace('upload-api', 'upload-raw-blks-api'), {}, [[id[3], b[3]]]),
  );

  // an upload cut into 8 MiB blocks, whose blocks the library then holds
  const up = await post(`${upl}?ret-json=1`, { parent_dir: '/d' }, [['big.bin', big]]);
  // (seafs serve's upload answer is compact JSON, the real one has spaces: the same value)
  log('upload-api of 9 MiB', { ...up, text: JSON.stringify(JSON.parse(up.text)) });
  log(
    'downloadblks of it',
    await apiAnswer('GET', `/api2/repos/${repo}/file/`, { query: { p: '/d/big.bin', op: 'downloadblks' } }),
  );
  log(
    'its blocks are held',
    await apiAnswer('POST', `/api2/repos/${repo}/upload-blks-link/`, {
      query: { p: '/' },
      form: { blklist: blockIdsOf(big).join(',') },
    }),
  );

  // an encrypted library takes raw blocks and commits without its password, as stored
  const enc = (await call('POST', '/api2/repos/', { form: { name: 'vault', passwd: 'vault pw 1' } })).json.repo_id;
  const encLinks = (
    await call('POST', `/api2/repos/${enc}/upload-blks-link/`, { query: { p: '/' }, form: { blklist: id[0] } })
  ).json as Record<string, string>;
  log('encrypted: raw block', await post(encLinks.rawblksurl, {}, [[id[0], b[0]]]));
  log(
    'encrypted: commit',
    await post(encLinks.commiturl, {
      parent_dir: '/',
      file_name: 'p.bin',
      file_size: '1000',
      blockids: JSON.stringify([id[0]]),
    }),
  );
  log(
    'encrypted: downloadblks',
    await apiAnswer('GET', `/api2/repos/${enc}/file/`, { query: { p: '/p.bin', op: 'downloadblks' } }),
  );
  await call('POST', `/api2/repos/${enc}/`, { form: { password: 'vault pw 1' } });
  const encUrl = (await call('GET', `/api2/repos/${enc}/file/`, { query: { p: '/p.bin' } })).json as string;
  const encRes = await fetch(encUrl);
  let encBody: string;
  try {
    const got = Buffer.from(await encRes.arrayBuffer());
    encBody = got.equals(b[0]) ? 'the bytes' : `${got.length} other bytes`;
  } catch {
    encBody = 'a body that breaks off';
  }
  lines.push(
    `encrypted, unlocked: download of it: ${encRes.status} ${encRes.headers.get('content-length')} ${encBody}`,
  );
  return { lines, facts };
}

const KINDS: ServerKind[] = realServerSkipped() ? ['serve'] : ['serve', 'real'];

describe('the blocks API answers as a real server does', () => {
  const transcripts = new Map<ServerKind, string[]>();
  for (const kind of KINDS) {
    it(`on ${kind === 'real' ? 'a real Seafile CE 10.0' : 'seafs serve'}`, { timeout: 240_000 }, async () => {
      const server = await startServerOfKind(kind);
      try {
        const { lines, facts } = await scenario(server);
        transcripts.set(kind, lines);
        expect(facts.content).toBe(true);
        const has = (l: string) => expect(lines).toContain(l);
        has('commit: 200 [application/json; charset=utf-8] {"id": "<file b1 b2 b3>"}');
        has('commit, a block missing: 443 [application/json; charset=utf-8] {"error": "Out of quota.\n"}');
        has('raw block, id not its sha1: 500 [application/json; charset=utf-8] {"error": "Internal error\n"}');
        has('update-blks: 200 [application/json; charset=utf-8] <file b3>');
        has('encrypted, unlocked: download of it: 200 1000 a body that breaks off');
        has(
          'downloadblks: 200 [application/json; charset=utf-8] {"file_id": "<file b1 b2 b3>", "blklist": ["<b1>", "<b2>", "<b3>"], "encrypted": false, "enc_version": 0}',
        );
        has(
          'downloadblks of it: 200 [application/json; charset=utf-8] {"file_id": "<big file>", "blklist": ["<big block 0>", "<big block 1>"], "encrypted": false, "enc_version": 0}',
        );
        if (kind === 'real' && transcripts.has('serve')) expect(transcripts.get('serve')).toEqual(lines);
      } finally {
        await server.stop();
      }
    });
  }
});

describe('seafs serve stores blocks', () => {
  let server: TestServer;
  let call: Call;
  let repo: string;

  beforeAll(async () => {
    server = await startTestServer();
    call = apiAs(server.url, await adminToken(server));
    repo = (await call('POST', '/api2/repos/', { form: { name: 'store' } })).json.repo_id;
  });
  afterAll(() => server?.stop());

  const blockFiles = () => storedBlockIds(server.dataDir);
  const contents = () =>
    readdirSync(path.join(server.dataDir, 'contents')).flatMap((d) =>
      readdirSync(path.join(server.dataDir, 'contents', d)).map((f) => d + f),
    );
  const uploadLink = async (r = repo) =>
    (await call('GET', `/api2/repos/${r}/upload-link/`, { query: { p: '/' } })).json;
  const read = async (p: string, range?: string, c = call, r = repo) => {
    const url = (await c('GET', `/api2/repos/${r}/file/`, { query: { p } })).json as string;
    return Buffer.from(await (await fetch(url, { headers: range ? { Range: range } : {} })).arrayBuffer());
  };

  it('keeps identical blocks once (the same bytes again store nothing), and ranges across a block boundary read right', async () => {
    const content = randomBytes((8 << 20) + 5000);
    const before = new Set(blockFiles());
    const contentsBefore = new Set(contents());
    const link = await uploadLink();
    expect((await post(`${link}?ret-json=1`, { parent_dir: '/' }, [['a.bin', content]])).status).toBe(200);
    expect((await post(`${link}?ret-json=1`, { parent_dir: '/' }, [['copy.bin', content]])).status).toBe(200);
    // same first block, different tail
    const other = Buffer.concat([content.subarray(0, 8 << 20), randomBytes(10)]);
    expect((await post(`${link}?ret-json=1`, { parent_dir: '/' }, [['other.bin', other]])).status).toBe(200);
    const added = blockFiles().filter((f) => !before.has(f));
    expect(added.sort()).toEqual([...new Set([...blockIdsOf(content), ...blockIdsOf(other)])].sort());
    expect(added).toHaveLength(3);
    // a.bin and other.bin came whole with a new block each; copy.bin's blocks were all known
    expect(
      contents()
        .filter((f) => !contentsBefore.has(f))
        .sort(),
    ).toEqual([seafileFileId(content), seafileFileId(other)].sort());
    const at = (8 << 20) - 100;
    expect((await read('/a.bin', `bytes=${at}-${at + 199}`)).equals(content.subarray(at, at + 200))).toBe(true);
    expect((await read('/other.bin')).equals(other)).toBe(true);
    const e = (await call('GET', `/api2/repos/${repo}/file/detail/`, { query: { p: '/a.bin' } })).json;
    expect(e.id).toBe(seafileFileId(content));
  });

  it("a library holds only its own blocks: another account's are missing there and cannot be committed", async () => {
    const block = randomBytes(4000);
    const id = sha1hex(block);
    const mine = (await call('POST', `/api2/repos/${repo}/upload-blks-link/`, { form: { blklist: id } })).json;
    expect((await post(mine.rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    await createUser(server, 'eve@seafs.test', 'eve-pw-1');
    const eve = apiAs(server.url, await getToken(server.url, 'eve@seafs.test', 'eve-pw-1'));
    const hers = (await eve('POST', '/api2/repos/', { form: { name: 'eve' } })).json.repo_id;
    const links = (await eve('POST', `/api2/repos/${hers}/upload-blks-link/`, { form: { blklist: id } })).json;
    expect(links.blklist).toEqual([id]);
    const fields = { parent_dir: '/', file_name: 'stolen.bin', file_size: '4000', blockids: JSON.stringify([id]) };
    expect((await post(links.commiturl, fields)).status).toBe(443);
    // once she sends the block herself it is hers
    expect((await post(links.rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    expect((await post(links.commiturl, fields)).status).toBe(200);
    expect((await read('/stolen.bin', undefined, eve, hers)).equals(block)).toBe(true);
  });

  it('refuses links over quota and commits whose blocks do not fit (443)', async () => {
    await createUser(server, 'q@seafs.test', 'q-pw-1', { storage: '1' }); // 1 MB
    const q = apiAs(server.url, await getToken(server.url, 'q@seafs.test', 'q-pw-1'));
    const r = (await q('POST', '/api2/repos/', { form: { name: 'q' } })).json.repo_id;
    const block = randomBytes(700_000);
    const id = sha1hex(block);
    const links = (await q('POST', `/api2/repos/${r}/upload-blks-link/`, { form: { blklist: id } })).json;
    expect((await post(links.rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    const commit = (name: string, ids: string[]) =>
      post(links.commiturl, {
        parent_dir: '/',
        file_name: name,
        file_size: String(ids.length * 700_000),
        blockids: JSON.stringify(ids),
      });
    expect((await commit('one.bin', [id])).status).toBe(200);
    const two = await commit('two.bin', [id, id]);
    expect(two.status).toBe(443);
    expect(two.text).toBe('{"error": "Out of quota.\n"}');
    expect(
      (await q('GET', `/api2/repos/${r}/dir/`, { query: { p: '/' } })).json.map((e: { name: string }) => e.name),
    ).toEqual(['one.bin']);
  });

  it('a file stored whole by an older seafs serve stays readable; its block list is cut on demand and reused', async () => {
    // write a library the old way: the content is objects/<sha1>, its id that sha1
    const content = randomBytes((8 << 20) + 3000);
    const legacyId = sha1hex(content);
    const r = (await call('POST', '/api2/repos/', { form: { name: 'legacy' } })).json.repo_id as string;
    await server.halt();
    const obj = (id: string) => path.join(server.dataDir, 'objects', id.slice(0, 2), id.slice(2));
    const put = (text: string | Buffer) => {
      const id = sha1hex(text);
      writeFileSync(obj(id), text);
      return id;
    };
    writeFileSync(obj(legacyId), content);
    const root = put(
      JSON.stringify([
        {
          name: 'old.bin',
          type: 'file',
          id: legacyId,
          mtime: 1700000000,
          size: content.length,
          modifier: server.adminEmail,
        },
      ]),
    );
    const headFile = path.join(server.dataDir, 'heads', `${r}.json`);
    const head = JSON.parse(readFileSync(headFile, 'utf8'));
    const commit = put(
      JSON.stringify({
        parent_id: head.commit_id,
        second_parent_id: null,
        root_id: root,
        repo_id: r,
        creator: sha1hex(server.adminEmail),
        creator_name: server.adminEmail,
        ctime: 1700000000,
        desc: 'Added "old.bin"',
        new_merge: false,
        conflict: false,
        version: 1,
      }),
    );
    writeFileSync(
      headFile,
      JSON.stringify({ commit_id: commit, root_id: root, size: content.length, mtime: 1700000000 }),
    );
    await server.restart();
    call = apiAs(server.url, await adminToken(server));
    expect((await read('/old.bin', undefined, call, r)).equals(content)).toBe(true);
    const blks = (await call('GET', `/api2/repos/${r}/file/`, { query: { p: '/old.bin', op: 'downloadblks' } })).json;
    expect(blks).toEqual({ file_id: legacyId, blklist: blockIdsOf(content), encrypted: false, enc_version: 0 });
    // an edit of the tail sends only the changed block
    const edited = Buffer.concat([content.subarray(0, 8 << 20), randomBytes(3000)]);
    const ids = blockIdsOf(edited);
    const links = (await call('POST', `/api2/repos/${r}/upload-blks-link/`, { form: { blklist: ids.join(',') } })).json;
    expect(links.blklist).toEqual([ids[1]]);
    expect((await post(links.rawblksurl, {}, [[ids[1], edited.subarray(8 << 20)]])).text).toBe('"OK"');
    const done = await post(links.commiturl, {
      parent_dir: '/',
      file_name: 'old.bin',
      file_size: String(edited.length),
      blockids: JSON.stringify(ids),
      replace: '1',
    });
    expect(JSON.parse(done.text)).toEqual({ id: seafileFileId(edited) });
    expect((await read('/old.bin', undefined, call, r)).equals(edited)).toBe(true);
  });

  it('kill -9 during a raw block upload leaves no partial block, and the upload can be made again', async () => {
    const block = randomBytes(6 << 20);
    const id = sha1hex(block);
    const links = (await call('POST', `/api2/repos/${repo}/upload-blks-link/`, { form: { blklist: id } })).json;
    const boundary = 'seafsblk' + randomBytes(6).toString('hex');
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${id}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const u = new URL(links.rawblksurl);
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      headers: {
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        'Content-Length': head.length + block.length + 50,
      },
    });
    req.on('error', () => undefined);
    req.write(head);
    await new Promise<void>((resolve) => req.write(block.subarray(0, 4 << 20), () => resolve()));
    // the first 4 MiB reach the server's temp file before it dies
    await new Promise((r) => setTimeout(r, 300));
    process.kill(server.pid, 'SIGKILL');
    req.destroy();
    await server.restart();
    call = apiAs(server.url, await adminToken(server));
    expect(readdirSync(path.join(server.dataDir, 'tmp'))).toEqual([]);
    for (const f of blockFiles()) expect(sha1hex(storedBlock(server.dataDir, f))).toBe(f);
    const again = (await call('POST', `/api2/repos/${repo}/upload-blks-link/`, { form: { blklist: id } })).json;
    expect(again.blklist).toEqual([id]);
    expect((await post(again.rawblksurl, {}, [[id, block]])).text).toBe('"OK"');
    const ok = await post(again.commiturl, {
      parent_dir: '/',
      file_name: 'k.bin',
      file_size: String(block.length),
      blockids: JSON.stringify([id]),
    });
    expect(ok.status).toBe(200);
    expect((await read('/k.bin')).equals(block)).toBe(true);
  });
});

describe('seafs serve with --max-upload-mb', () => {
  it('refuses raw blocks whose sum in one request is over the limit (442), as the C server sums the parts', async () => {
    const server = await startTestServer({ extraArgs: ['--max-upload-mb', '1'] });
    try {
      const call = apiAs(server.url, await adminToken(server));
      const r = (await call('POST', '/api2/repos/', { form: { name: 'm' } })).json.repo_id;
      const a = randomBytes(600_000);
      const c = randomBytes(600_000);
      const links = (await call('POST', `/api2/repos/${r}/upload-blks-link/`, { form: { blklist: '' } })).json;
      const both = await post(links.rawblksurl, {}, [
        [sha1hex(a), a],
        [sha1hex(c), c],
      ]);
      expect(both.status).toBe(442);
      expect(both.text).toBe('{"error": "File size is too large.\n"}');
      // one at a time each fits
      expect((await post(links.rawblksurl, {}, [[sha1hex(a), a]])).text).toBe('"OK"');
    } finally {
      await server.stop();
    }
  });

  it('--max-upload-size takes a size with a unit (binary): 512k lets 512 KiB through and refuses a byte more', async () => {
    const server = await startTestServer({ extraArgs: ['--max-upload-size', '512k'] });
    try {
      const call = apiAs(server.url, await adminToken(server));
      const r = (await call('POST', '/api2/repos/', { form: { name: 'm' } })).json.repo_id;
      const links = (await call('POST', `/api2/repos/${r}/upload-blks-link/`, { form: { blklist: '' } })).json;
      const fits = randomBytes(512 * 1024);
      const over = randomBytes(512 * 1024 + 1);
      expect((await post(links.rawblksurl, {}, [[sha1hex(fits), fits]])).text).toBe('"OK"');
      expect((await post(links.rawblksurl, {}, [[sha1hex(over), over]])).status).toBe(442);
    } finally {
      await server.stop();
    }
  });
});
