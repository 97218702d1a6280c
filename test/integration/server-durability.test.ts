// Durability and concurrency of `seafs serve`: data survives a restart,
// concurrent uploads into one folder all land, SIGTERM finishes in-flight
// requests, and kill -9 at any moment leaves a consistent store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { adminToken, apiAs, CLI, startTestServer, uploadTo, type TestServer } from '../helpers/server.js';
import { fileIdOfBlocks } from '../helpers/seafile-ids.js';
import { storedBlock, storedFile } from '../helpers/serve-store.js';

let server: TestServer;
let call: ReturnType<typeof apiAs>;
let repo: string;

const sha1 = (b: Buffer | string) => createHash('sha1').update(b).digest('hex');

async function link(dir = '/'): Promise<string> {
  return (await call('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: dir } })).json;
}

async function names(p: string): Promise<string[]> {
  const r = await call('GET', `/api2/repos/${repo}/dir/`, { query: { p } });
  expect(r.status).toBe(200);
  return r.json.map((e: { name: string }) => e.name);
}

async function download(p: string): Promise<Buffer> {
  const url = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p } })).json;
  return Buffer.from(await (await fetch(url)).arrayBuffer());
}

/** Reads the store directly: every head's commit, tree, file record and block exists and matches its id. */
function checkStore(dataDir: string): number {
  const obj = (id: string) => path.join(dataDir, 'objects', id.slice(0, 2), id.slice(2));
  const zero = '0'.repeat(40);
  let files = 0;
  const walk = (dirId: string) => {
    if (dirId === zero) return;
    const text = readFileSync(obj(dirId));
    expect(sha1(text)).toBe(dirId);
    for (const e of JSON.parse(text.toString()) as { type: string; id: string; size: number }[]) {
      if (e.type === 'dir') walk(e.id);
      else if (e.id !== zero) {
        // a file is its record (files/) naming blocks (blocks/) whose bytes match their ids
        const rec = storedFile(dataDir, e.id);
        expect(fileIdOfBlocks(rec.block_ids, rec.size)).toBe(e.id);
        let size = 0;
        for (const b of rec.block_ids) {
          const bytes = storedBlock(dataDir, b);
          expect(sha1(bytes)).toBe(b);
          size += bytes.length;
        }
        expect(size).toBe(e.size);
        files++;
      }
    }
  };
  const heads = readdirSync(path.join(dataDir, 'heads'));
  expect(heads.filter((f) => !f.endsWith('.json'))).toEqual([]); // crash leftovers are cleared at start
  for (const f of heads) {
    const head = JSON.parse(readFileSync(path.join(dataDir, 'heads', f), 'utf8'));
    const commit = readFileSync(obj(head.commit_id));
    expect(sha1(commit)).toBe(head.commit_id);
    expect(JSON.parse(commit.toString()).root_id).toBe(head.root_id);
    walk(head.root_id);
  }
  return files;
}

/** A multipart upload whose body is written slowly; returns a handle to finish or abandon it. */
function slowUpload(uploadUrl: string, name: string, chunk: Buffer, chunks: number, delayMs: number) {
  const boundary = '----seafs' + Math.random().toString(16).slice(2);
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="parent_dir"\r\n\r\n/\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const u = new URL(uploadUrl + '?ret-json=1');
  const req = http.request({
    host: u.hostname,
    port: u.port,
    path: u.pathname + u.search,
    method: 'POST',
    headers: {
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
      'Content-Length': head.length + chunk.length * chunks + tail.length,
    },
  });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
  });
  let sent = 0;
  const started = new Promise<void>((resolve) => {
    req.write(head);
    const tick = () => {
      if (sent === chunks) {
        req.end(tail);
        return;
      }
      req.write(chunk);
      sent++;
      if (sent === 2) resolve();
      setTimeout(tick, delayMs);
    };
    tick();
  });
  return { response, started, abort: () => req.destroy() };
}

beforeAll(async () => {
  server = await startTestServer();
  call = apiAs(server.url, await adminToken(server));
  repo = (await call('POST', '/api2/repos/', { form: { name: 'durable' } })).json.repo_id;
});

afterAll(async () => {
  await server?.stop();
});

describe('concurrency', () => {
  it('20 concurrent uploads into one folder all land', async () => {
    await call('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/many' }, form: { operation: 'mkdir' } });
    const l = await link('/many');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        uploadTo(l, '/many', { [`f${String(i).padStart(2, '0')}.txt`]: `content ${i}`.repeat(100 + i) }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(await names('/many')).toEqual(Array.from({ length: 20 }, (_, i) => `f${String(i).padStart(2, '0')}.txt`));
    // and 10 concurrent uploads of the same name all land, auto-renamed
    const same = await Promise.all(Array.from({ length: 10 }, (_, i) => uploadTo(l, '/many', { 'same.txt': `v${i}` })));
    const landed = same.map((r) => JSON.parse(r.text)[0].name as string);
    expect(new Set(landed).size).toBe(10);
    expect((await names('/many')).filter((n) => n.startsWith('same'))).toHaveLength(10);
  });

  it('concurrent operations in different folders and libraries do not lose each other', async () => {
    const other = (await call('POST', '/api2/repos/', { form: { name: 'other' } })).json.repo_id;
    const history = async (id: string) =>
      (await call('GET', `/api2/repos/${id}/history/`, { query: { per_page: '10000' } })).json.commits;
    const before = (await history(repo)).length;
    const ops = [];
    for (let i = 0; i < 10; i++) {
      ops.push(call('POST', `/api2/repos/${repo}/dir/`, { query: { p: `/d${i}` }, form: { operation: 'mkdir' } }));
      ops.push(call('POST', `/api2/repos/${other}/dir/`, { query: { p: `/e${i}` }, form: { operation: 'mkdir' } }));
    }
    for (const r of await Promise.all(ops)) expect(r.status).toBe(201);
    const mine = await names('/');
    for (let i = 0; i < 10; i++) expect(mine).toContain(`d${i}`);
    const theirs = (await call('GET', `/api2/repos/${other}/dir/`, { query: { p: '/' } })).json;
    expect(theirs).toHaveLength(10);
    // one commit per change, chained parent to child, even when changes were written together
    const commits = await history(repo);
    expect(commits.length).toBe(before + 10);
    for (let i = 0; i + 1 < commits.length; i++) expect(commits[i].parent_id).toBe(commits[i + 1].id);
    expect(
      commits
        .slice(0, 10)
        .map((c: { desc: string }) => c.desc)
        .sort(),
    ).toEqual(Array.from({ length: 10 }, (_, i) => `Added directory "d${i}"`).sort());
  });
});

describe('the serve command', () => {
  /** `seafs serve` on a free port: checks the address it prints, logs in with `password`, and stops it with SIGTERM (exit 0). */
  async function serveLoginStop(dir: string, args: string[], env: NodeJS.ProcessEnv, password: string): Promise<void> {
    const { spawn } = await import('node:child_process');
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--data', dir, '--port', '0', '--admin-email', 'e@x.test', ...args],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const line = await new Promise<string>((resolve) => child.stdout.once('data', (d) => resolve(String(d))));
      expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n$/);
      const url = line.trim().split(' ')[2];
      expect(Number(new URL(url).port)).toBeGreaterThan(0);
      // a login also proves the SIGTERM handler is in place (a signal right after the line could beat it)
      const res = await fetch(`${url}/api2/auth-token/`, {
        method: 'POST',
        body: new URLSearchParams({ username: 'e@x.test', password }),
      });
      expect(res.status).toBe(200);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }

  const envWithout = (): NodeJS.ProcessEnv => {
    const env = { ...process.env };
    delete env.SEAFS_ADMIN_PASSWORD;
    return env;
  };

  it('prints the real port for --port 0, reads the password from the environment, exits 0 on SIGTERM', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-cli-'));
    try {
      await serveLoginStop(dir, [], { ...envWithout(), SEAFS_ADMIN_PASSWORD: 'env-pw' }, 'env-pw');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes the admin password from a file, and refuses one on the command line', async () => {
    const { execFile } = await import('node:child_process');
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const os = await import('node:os');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-cli-'));
    const run = (args: string[]) =>
      new Promise<{ code: number; out: string; err: string }>((resolve) => {
        const c = execFile(
          process.execPath,
          [CLI, 'serve', '--data', dir, '--port', '0', '--admin-email', 'e@x.test', ...args],
          { env: envWithout(), timeout: 20_000 },
          (e, out, err) => resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out, err }),
        );
        // a server that starts by mistake is stopped at once (the cases run here must not start)
        c.stdout!.on('data', () => c.kill('SIGKILL'));
      });
    try {
      const inArgv = await run(['--admin-password', 'pw']);
      expect(inArgv.code).toBe(2);
      expect(inArgv.err).toContain('Unknown argument');
      const none = await run([]);
      expect(none.code).not.toBe(0);
      expect(none.err).toContain('SEAFS_ADMIN_PASSWORD or with --admin-password-file');
      writeFileSync(path.join(dir, 'pw'), 'file-pw\n', { mode: 0o600 });
      await serveLoginStop(dir, ['--admin-password-file', path.join(dir, 'pw')], envWithout(), 'file-pw');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('durability', () => {
  it('keeps libraries, files, accounts and tokens across a restart', async () => {
    const content = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
    await uploadTo(await link('/'), '/', { 'keep.bin': content });
    const tokenBefore = await adminToken(server);
    const oidBefore = (await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).headers.get('oid');
    await server.restart();
    call = apiAs(server.url, tokenBefore); // the same token still works
    expect((await call('GET', '/api2/auth/ping/')).json).toBe('pong');
    const libs = (await call('GET', '/api2/repos/')).json.map((l: { name: string }) => l.name);
    expect(libs).toEqual(expect.arrayContaining(['durable', 'other']));
    expect((await call('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/', oid: oidBefore! } })).json).toBe(
      'uptodate',
    );
    expect((await download('/keep.bin')).equals(content)).toBe(true);
    expect(await names('/many')).toHaveLength(30);
    checkStore(server.dataDir);
  });

  it('SIGTERM lets an in-flight upload finish, then the process exits', async () => {
    const l = await link('/');
    const up = slowUpload(l, 'inflight.bin', Buffer.alloc(64 * 1024, 7), 10, 50);
    await up.started;
    const pid = server.pid;
    process.kill(pid, 'SIGTERM');
    const res = await up.response;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)[0]).toMatchObject({ name: 'inflight.bin', size: 640 * 1024 });
    // wait for the exit, then come back on the same data
    for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')).toBe(false);
    await server.restart();
    call = apiAs(server.url, await adminToken(server));
    expect(await names('/')).toContain('inflight.bin');
  });

  it('a client that goes away mid-upload leaves nothing behind and the server keeps going', async () => {
    const l = await link('/');
    const up = slowUpload(l, 'abandoned.bin', Buffer.alloc(128 * 1024, 3), 100, 20);
    await up.started;
    up.abort();
    await up.response.catch(() => null);
    let leftovers: string[] = ['?'];
    for (let i = 0; i < 50 && leftovers.length; i++) {
      await new Promise((r) => setTimeout(r, 100));
      leftovers = readdirSync(path.join(server.dataDir, 'tmp'));
    }
    expect(leftovers).toEqual([]);
    expect(await names('/')).not.toContain('abandoned.bin');
    expect((await call('GET', '/api2/auth/ping/')).json).toBe('pong');
  });

  it('kill -9 during an upload and during a burst of commits leaves a consistent store', async () => {
    const before = await names('/');
    const l = await link('/');
    const up = slowUpload(l, 'partial.bin', Buffer.alloc(256 * 1024, 1), 200, 20);
    await up.started;
    const burstLink = await link('/many');
    const burst = Array.from({ length: 30 }, (_, i) =>
      uploadTo(burstLink, '/many', { [`burst${i}.txt`]: `b${i}` }).catch(() => null),
    );
    await new Promise((r) => setTimeout(r, 30));
    process.kill(server.pid, 'SIGKILL');
    up.abort();
    await up.response.catch(() => null);
    const done = (await Promise.all(burst)).filter((r) => r?.status === 200).length;
    await server.restart();
    call = apiAs(server.url, await adminToken(server));
    const after = await names('/');
    expect(after).not.toContain('partial.bin');
    expect(after).toEqual(before);
    // every upload that was answered 200 before the kill is there
    const many = await names('/many');
    expect(many.filter((n) => n.startsWith('burst')).length).toBeGreaterThanOrEqual(done);
    checkStore(server.dataDir);
    // interrupted temp files are gone, and the server keeps working
    expect(readdirSync(path.join(server.dataDir, 'tmp'))).toEqual([]);
    const again = await uploadTo(await link('/'), '/', { 'after-crash.txt': 'ok' });
    expect(again.status).toBe(200);
    expect((await download('/after-crash.txt')).toString()).toBe('ok');
  });
});
