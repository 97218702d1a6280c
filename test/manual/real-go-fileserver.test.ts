// scripts/test (and so CI) runs it after the light tests, with the variable set; by hand:
//   SEAFS_REAL_GO_FILESERVER=1 npx vitest run --project manual test/manual/real-go-fileserver.test.ts
// (it builds Go code and runs MariaDB; see test/manual/README.md).
// The drive's core workload (copy, edit, rename, delete, a file sent by
// blocks) through a mount of the real Seafile 10.0 server running its Go
// fileserver (scripts/real-go-fileserver: seaf-server moved to MariaDB, the
// fileserver built from the same seafile-server source), every result read
// back through the API. The Go fileserver listens on a port of its own and a
// small pass-through in the test process holds the files port the links name,
// so the test sees which fileserver calls the drive made (the fileserver keeps
// no access log).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitRemoteFile, remoteNames } from '../helpers/api-check.js';
import { writeRandom } from '../helpers/e2e-fixture.js';
import { cleanupMounts, mountLibrary, q, scratchDir, sh, sleep, type Mount } from '../helpers/mount.js';
import { freePort, runScript } from '../helpers/ports.js';
import { startRealServer } from '../helpers/real-server.js';
import { apiAs, adminToken, startTestServer, type TestServer } from '../helpers/server.js';
import { SeafileClient } from '../../src/client/client.js';

const ON = process.env.SEAFS_REAL_GO_FILESERVER === '1';
if (!ON)
  throw new Error(
    'the real Go fileserver test builds Go code and runs MariaDB: run it with SEAFS_REAL_GO_FILESERVER=1',
  );
const SCRIPT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/real-go-fileserver');
const MiB = 1024 * 1024;

const script = (args: string[]) => runScript(SCRIPT, args);

/** the files port: every request passed on to the Go fileserver, its method, path (token and query cut) and status noted */
function passThrough(listen: number, to: number, seen: string[]): Promise<http.Server> {
  const srv = http.createServer((req, res) => {
    const up = http.request(
      { host: '127.0.0.1', port: to, path: req.url, method: req.method, headers: req.headers },
      (r) => {
        seen.push(`${req.method} ${req.url!.replace(/\?.*/, '').replace(/^(\/[^/]+)\/[^/]+/, '$1/T')} ${r.statusCode}`);
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  // the files port was seaf-server's until the switch: a failure to take it over fails at once, saying so
  return new Promise((resolve, reject) => {
    srv.once('error', (e) =>
      reject(new Error(`the pass-through cannot listen on the files port ${listen}: ${e.message}`)),
    );
    srv.listen(listen, '127.0.0.1', () => resolve(srv));
  });
}

async function until<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) {
      expect(ok(v), `${what}: ${JSON.stringify(v)}`).toBe(true);
      return v;
    }
    await sleep(200);
  }
}

/**
 * The same fileserver requests (uploads, an update, downloads, block commits, most refused) against a server:
 * each answer's status, type and body, for comparing the real Go fileserver with `seafs serve`.
 */
async function fileServerAnswers(server: TestServer): Promise<string[]> {
  const call = apiAs(server.url, await adminToken(server));
  const repo = (await call('POST', '/api2/repos/', { form: { name: 'Answers' } })).json.repo_id as string;
  await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/sub' }, form: { operation: 'mkdir' } });
  const link = async (kind = 'upload-link') =>
    (await call('GET', `/api2/repos/${repo}/${kind}/`, { query: { p: '/' } })).json as string;
  const out: string[] = [];
  const send = async (what: string, url: string, fields: Record<string, string>, files: [string, Buffer][] = []) => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    for (const [name, b] of files) fd.append('file', new Blob([b]), name);
    const r = await fetch(url, { method: 'POST', body: fd });
    out.push(`${what}: ${r.status} ${r.headers.get('content-type')} ${JSON.stringify(await r.text())}`);
  };
  const x: [string, Buffer][] = [['x.txt', Buffer.from('x')]];
  await send('upload, plain', await link(), { parent_dir: '/' }, x);
  await send('upload, ret-json, a backslash', `${await link()}?ret-json=1`, { parent_dir: '/' }, [
    ['a\\b.txt', Buffer.from('b')],
  ]);
  await send('upload into a missing folder', await link(), { parent_dir: '/nope' }, x);
  await send("upload into a folder not the link's", await link(), { parent_dir: '/sub' }, x);
  await send('upload without parent_dir', await link(), {}, x);
  await send('upload without a file', await link(), { parent_dir: '/' });
  const notMultipart = await fetch(await link(), { method: 'POST', body: 'x' });
  out.push(`upload not multipart: ${notMultipart.status} ${JSON.stringify(await notMultipart.text())}`);
  // a UUID's length: Go answers a shorter token 400 "Invalid URL" (serve's tokens are 32 hex digits)
  await send(
    'upload, unknown token',
    (await link()).replace(/[^/]+$/, '00000000-0000-0000-0000-000000000000'),
    { parent_dir: '/' },
    x,
  );
  await send('update of a missing file', await link('update-link'), { target_file: '/none.txt' }, x);
  await send('update without target_file', await link('update-link'), {}, x);
  // downloads: status, the headers a client reads, body
  const odd = "d (1)+$&;'é.txt";
  await send('upload, an odd name', await link(), { parent_dir: '/' }, [[odd, Buffer.from('hello world')]]);
  const get = async (what: string, headers: Record<string, string> = {}, url?: string) => {
    url ??= (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: `/${odd}` } })).json as string;
    const r = await fetch(url, { headers });
    const h = ['content-type', 'content-disposition', 'content-range', 'accept-ranges', 'cache-control', 'etag'];
    out.push(
      `${what}: ${r.status} ${h.map((k) => `${k}=${r.headers.get(k)}`).join(' ')} ${JSON.stringify(await r.text())}`,
    );
    return url;
  };
  const used = await get('download');
  await get('download, the token again', {}, used);
  await get('download, a range', { Range: 'bytes=2-4' });
  await get('download, a range past the end', { Range: 'bytes=100-' });
  await get('download, If-Modified-Since', { 'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' });
  const block = Buffer.from('one block');
  const id = createHash('sha1').update(block).digest('hex');
  const blks = (
    await call('POST', `/api2/repos/${repo}/upload-blks-link/`, { query: { p: '/' }, form: { blklist: id } })
  ).json as { rawblksurl: string; commiturl: string };
  const commit = { parent_dir: '/', file_name: 'b.bin', file_size: String(block.length), replace: '1' };
  await send('commit, the block missing', blks.commiturl, { ...commit, blockids: JSON.stringify([id]) });
  await send('raw block, a wrong id', blks.rawblksurl, {}, [['f'.repeat(40), block]]);
  await send('raw block', blks.rawblksurl, {}, [[id, block]]);
  await send('commit without blockids', blks.commiturl, commit);
  await send('commit, blockids not JSON', blks.commiturl, { ...commit, blockids: 'nope' });
  await send('commit without commitonly', blks.commiturl.split('?')[0], { ...commit, blockids: '[]' });
  await send('commit', blks.commiturl, { ...commit, blockids: JSON.stringify([id]) });
  return out;
}

describe('the real 10.0 Go fileserver', () => {
  let real: TestServer;
  let api: SeafileClient;
  let repo: string;
  let front: http.Server;
  let m: Mount | undefined;
  const seen: string[] = [];

  beforeAll(async () => {
    const t0 = Date.now();
    await script(['build']);
    const t1 = Date.now();
    real = await startRealServer();
    const t2 = Date.now();
    const ports = readFileSync(path.join(real.dataDir, 'data/run/ports'), 'utf8');
    const files = Number(/^PF=(\d+)/m.exec(ports)![1]);
    const goPort = await freePort();
    await script(['start', real.dataDir, String(goPort)]);
    const secs = (a: number, b: number) => ((b - a) / 1000).toFixed(1);
    console.log(
      `built in ${secs(t0, t1)} s, real server started in ${secs(t1, t2)} s, switched to MariaDB and the Go fileserver in ${secs(t2, Date.now())} s`,
    );
    front = await passThrough(files, goPort, seen);
    ({ client: api } = await SeafileClient.login({ baseUrl: real.url }, real.adminEmail, real.adminPassword));
    repo = (await api.createLibrary('Core')).repo_id;
  }, 15 * 60_000);

  // everything by its pid, also after a failure: the mounts, then seaf-server and seahub (they hold MariaDB
  // connections), the Go fileserver and MariaDB, then the instance folder
  afterAll(async () => {
    const failed: unknown[] = [];
    const step = (f: () => unknown) =>
      Promise.resolve()
        .then(f)
        .catch((e: unknown) => void failed.push(e));
    await step(() => m?.unmount());
    await step(cleanupMounts);
    await step(() => api?.close());
    await step(() => front?.close());
    if (real) {
      await step(() => real.halt());
      await step(() => script(['stop', real.dataDir]));
      await step(() => real.stop());
    }
    if (failed.length) throw failed[0];
  }, 180_000);

  it('is the Go fileserver that answers on the files port', async () => {
    const files = (front.address() as net.AddressInfo).port;
    // Go's router; the C fileserver (libevhtp) answers an unknown path otherwise
    const r = await fetch(`http://127.0.0.1:${files}/no-such-route/x`);
    expect(r.status).toBe(404);
    expect(await r.text()).toBe('404 page not found\n');
    expect(readFileSync(path.join(real.dataDir, 'data/logs/seafile.log'), 'utf8')).toMatch(/Use database Mysql/);
  });

  it('answers uploads, updates, downloads and block commits as seafs serve --fileserver go does', async () => {
    const serve = await startTestServer({ extraArgs: ['--server-version', '10.0.1', '--fileserver', 'go'] });
    try {
      const [got, want] = [await fileServerAnswers(real), await fileServerAnswers(serve)];
      console.log(`the real Go fileserver's answers:\n${got.join('\n')}`);
      expect(want).toEqual(got);
    } finally {
      await serve.stop();
    }
  }, 120_000);

  it('copies, edits, renames, deletes and sends a file by blocks; each read back through the API', async () => {
    seen.length = 0; // the drive's calls only
    m = await mountLibrary(real, { library: 'Core', attrTimeout: 0, dirCacheTime: 1 });
    const mnt = m.mnt;
    const src = scratchDir();

    // a tree copied in
    await sh(
      `mkdir -p ${q(src)}/tree/sub && printf one > ${q(src)}/tree/a.txt && printf two > ${q(src)}/tree/sub/b.txt`,
    );
    await sh(`cp -r ${q(src)}/tree ${q(mnt)}/tree && sync`);
    await waitRemoteFile(api, repo, '/tree/a.txt', Buffer.from('one'));
    await waitRemoteFile(api, repo, '/tree/sub/b.txt', Buffer.from('two'));

    // an edit (append), then an overwrite
    const small = path.join(src, 'small.txt');
    writeFileSync(small, 'first version\n');
    await sh(`cp ${q(small)} ${q(mnt)}/small.txt && sync ${q(mnt)}/small.txt`);
    await waitRemoteFile(api, repo, '/small.txt', small);
    await sh(`printf 'second line\\n' >> ${q(mnt)}/small.txt && sync ${q(mnt)}/small.txt`);
    await waitRemoteFile(api, repo, '/small.txt', Buffer.from('first version\nsecond line\n'));
    await sh(`printf 'replaced\\n' > ${q(mnt)}/small.txt && sync ${q(mnt)}/small.txt`);
    await waitRemoteFile(api, repo, '/small.txt', Buffer.from('replaced\n'));

    // rename (a file and a folder), delete
    await sh(`mv ${q(mnt)}/small.txt ${q(mnt)}/renamed.txt && mv ${q(mnt)}/tree ${q(mnt)}/moved`);
    await until(
      'rename',
      () => remoteNames(api, repo, '/'),
      (n) => !!n?.includes('renamed.txt') && !!n.includes('moved') && !n.includes('small.txt') && !n.includes('tree'),
    );
    await waitRemoteFile(api, repo, '/moved/sub/b.txt', Buffer.from('two'));
    await sh(`printf gone > ${q(mnt)}/doomed.txt && sync ${q(mnt)}/doomed.txt && rm ${q(mnt)}/doomed.txt`);
    await sh(`rm -r ${q(mnt)}/moved/sub`);
    await until(
      'delete',
      async () => [...((await remoteNames(api, repo, '/')) ?? []), ...((await remoteNames(api, repo, '/moved')) ?? [])],
      (n) => !n.includes('doomed.txt') && !n.includes('sub'),
    );

    // a file past the block threshold (8 MiB): raw blocks, then a commit; then one block of it changed
    const big = path.join(src, 'big.bin');
    await writeRandom(big, 8 * MiB + 4096);
    await sh(`cp ${q(big)} ${q(mnt)}/big.bin && sync ${q(mnt)}/big.bin`);
    await waitRemoteFile(api, repo, '/big.bin', big);
    expect(seen).toContainEqual('POST /upload-raw-blks-api/T 200');
    expect(seen).toContainEqual('POST /upload-blks-api/T 200');
    await sh(`printf 'XXXX' | dd of=${q(big)} bs=1 seek=100 conv=notrunc status=none`);
    await sh(
      `printf 'XXXX' | dd of=${q(mnt)}/big.bin bs=1 seek=100 conv=notrunc status=none && sync ${q(mnt)}/big.bin`,
    );
    await waitRemoteFile(api, repo, '/big.bin', big);

    // read back through the mount, after a remount (no cache)
    expect((await m.unmount()).code).toBe(0);
    m = await mountLibrary(real, { library: 'Core', attrTimeout: 0, dirCacheTime: 1 });
    await sh(`cmp ${q(big)} ${q(m.mnt)}/big.bin && grep -qx replaced ${q(m.mnt)}/renamed.txt`);
    expect((await remoteNames(api, repo, '/'))!.sort()).toEqual(['big.bin', 'moved', 'renamed.txt']);
    expect(seen.filter((s) => / (4|5)\d\d$/.test(s))).toEqual([]);
    console.log(`fileserver calls seen: ${[...new Set(seen)].join(', ')}`);
  }, 300_000);
});
