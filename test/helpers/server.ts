// Starts `seafs serve` as a child process (never in-process: e2e tests run
// blocking tools while the server must keep answering) on port 0 with a temp
// data dir, and stops it by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface TestServer {
  url: string;
  adminEmail: string;
  adminPassword: string;
  dataDir: string;
  pid: number;
  stop(): Promise<void>;
  /** what the server printed on stderr (one line per request with extraArgs ['--verbose']) */
  log(): string;
  /**
   * stops and starts again on the same dataDir (the port may change, unless
   * `samePort`; `url` and `pid` are updated); after halt() it only starts
   */
  restart(opts?: { samePort?: boolean }): Promise<void>;
  /** stops the process (SIGTERM, waits) and keeps the data dir: a server that is gone until restart() */
  halt(): Promise<void>;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CLI = path.join(ROOT, 'dist/cli/main.js');

const ADMIN_EMAIL = 'admin@seafs.test';
const ADMIN_PASSWORD = 'admin-secret-pw';

function spawnServer(
  dataDir: string,
  latencyMs: number | undefined,
  extraArgs: string[],
  port = 0,
): Promise<{ child: ChildProcess; url: string; log: () => string }> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  const args = [
    CLI,
    'serve',
    '--data',
    dataDir,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--admin-email',
    ADMIN_EMAIL,
  ];
  if (latencyMs) args.push('--latency-ms', String(latencyMs));
  args.push(...extraArgs);
  // SEAFS_TEST_SERVER_LOG=1 shows the server's log, one line per request, on the test's stderr
  if (process.env.SEAFS_TEST_SERVER_LOG) args.push('--verbose');
  const child = spawn(process.execPath, args, {
    env: { ...process.env, SEAFS_ADMIN_PASSWORD: ADMIN_PASSWORD },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`seafs serve did not start within 20 s\nstdout: ${out}\nstderr: ${err}`));
    }, 20_000);
    child.stdout!.setEncoding('utf8');
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      err += d;
      if (process.env.SEAFS_TEST_SERVER_LOG) process.stderr.write(d);
    });
    child.stdout!.on('data', (d: string) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], log: () => err });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`seafs serve exited (${code ?? signal}) before listening\nstderr: ${err}`));
    });
  });
}

function waitExit(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export async function startTestServer(
  opts: { latencyMs?: number; extraArgs?: string[]; dataDir?: string; port?: number } = {},
): Promise<TestServer> {
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'seafs-srv-'));
  const extra = opts.extraArgs ?? [];
  let { child, url, log } = await spawnServer(dataDir, opts.latencyMs, extra, opts.port);
  const server: TestServer = {
    url,
    adminEmail: ADMIN_EMAIL,
    adminPassword: ADMIN_PASSWORD,
    dataDir,
    pid: child.pid!,
    log: () => log(),
    async stop() {
      child.kill('SIGTERM');
      await waitExit(child, 15_000);
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
    async restart(r = {}) {
      child.kill('SIGTERM');
      await waitExit(child, 15_000);
      const port = r.samePort ? Number(new URL(url).port) : 0;
      ({ child, url, log } = await spawnServer(dataDir, opts.latencyMs, extra, port));
      server.url = url;
      server.pid = child.pid!;
    },
    async halt() {
      child.kill('SIGTERM');
      await waitExit(child, 15_000);
    },
  };
  return server;
}

export async function getToken(url: string, email: string, password: string, otp?: string): Promise<string> {
  const res = await fetch(`${url}/api2/auth-token/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...(otp ? { 'X-Seafile-OTP': otp } : {}) },
    body: new URLSearchParams({ username: email, password }),
  });
  const body = (await res.json()) as { token?: string };
  if (!res.ok || !body.token) throw new Error(`auth-token failed: ${res.status} ${JSON.stringify(body)}`);
  return body.token;
}

export function adminToken(server: TestServer): Promise<string> {
  return getToken(server.url, server.adminEmail, server.adminPassword);
}

/** Creates an account through the admin API (PUT /api2/accounts/{email}/). */
export async function createUser(
  server: TestServer,
  email: string,
  password: string,
  extra: Record<string, string> = {},
): Promise<void> {
  const res = await fetch(`${server.url}/api2/accounts/${encodeURIComponent(email)}/`, {
    method: 'PUT',
    headers: {
      Authorization: `Token ${await adminToken(server)}`,
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ password, ...extra }),
  });
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`create user failed: ${res.status} ${await res.text()}`);
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** the body parsed as JSON, or undefined when it is not JSON */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * A tiny raw HTTP caller for server tests: `call(method, path, {form, query})`
 * with the token's Authorization header; never follows redirects (the 301 of
 * rename/move is a success).
 */
export function apiAs(url: string, token: string | null) {
  return async function call(
    method: string,
    pathOrUrl: string,
    opts: {
      form?: Record<string, string | string[]>;
      query?: Record<string, string>;
      json?: unknown;
      headers?: Record<string, string>;
    } = {},
  ): Promise<ApiResponse> {
    const u = new URL(pathOrUrl.startsWith('http') ? pathOrUrl : url + pathOrUrl);
    for (const [k, v] of Object.entries(opts.query ?? {})) u.searchParams.set(k, v);
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (token) headers.Authorization = `Token ${token}`;
    let body: string | undefined;
    if (opts.form) {
      const f = new URLSearchParams();
      for (const [k, v] of Object.entries(opts.form)) for (const x of Array.isArray(v) ? v : [v]) f.append(k, x);
      body = f.toString();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    } else if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(u, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

/** Uploads `files` (name -> content) through an upload link with a multipart body. */
export async function uploadTo(
  link: string,
  parentDir: string,
  files: Record<string, string | Buffer>,
  opts: { replace?: boolean; relativePath?: string; retJson?: boolean } = {},
): Promise<{ status: number; text: string }> {
  const fd = new FormData();
  for (const [name, content] of Object.entries(files)) fd.append('file', new Blob([content]), name);
  fd.append('parent_dir', parentDir);
  if (opts.replace) fd.append('replace', '1');
  if (opts.relativePath) fd.append('relative_path', opts.relativePath);
  const res = await fetch(opts.retJson === false ? link : `${link}?ret-json=1`, { method: 'POST', body: fd });
  return { status: res.status, text: await res.text() };
}

export type RawApi = ReturnType<typeof apiAs>;

/** An account a test server is started with (`name`: its display name). */
export interface TestUser {
  email: string;
  password: string;
  name?: string;
}

/** the users most server tests share a server with */
export const BOB: TestUser = { email: 'bob@seafs.test', password: 'bob-pw' };
export const CAROL: TestUser = { email: 'carol@seafs.test', password: 'carol-pw' };

/**
 * Starts `seafs serve` (`opts` as startTestServer's) and logs in its admin
 * and `users`, made through the admin API: the set-up the server test files
 * begin with. `users` come back in the order given. The caller stops the server.
 */
export async function startServerWithUsers(
  users: TestUser[] = [],
  opts: Parameters<typeof startTestServer>[0] = {},
): Promise<{ server: TestServer; admin: RawApi; users: RawApi[] }> {
  const server = await startTestServer(opts);
  const admin = apiAs(server.url, await adminToken(server));
  const apis: RawApi[] = [];
  for (const u of users) {
    await createUser(server, u.email, u.password, u.name ? { name: u.name } : {});
    apis.push(apiAs(server.url, await getToken(server.url, u.email, u.password)));
  }
  return { server, admin, users: apis };
}

/**
 * Makes a library as the user of `call` with `files` (name -> content) in
 * its root, and returns its id; `passwd`: an encrypted library, unlocked for
 * that user.
 */
export async function newLibrary(
  call: RawApi,
  name: string,
  files: Record<string, string> = {},
  passwd?: string,
): Promise<string> {
  const made = await call('POST', '/api2/repos/', { form: passwd ? { name, passwd } : { name } });
  if (made.status !== 200) throw new Error(`library ${name}: ${made.status} ${made.text}`);
  const id = made.json.repo_id as string;
  if (passwd) {
    const unlocked = await call('POST', `/api2/repos/${id}/`, { form: { password: passwd } });
    if (unlocked.status !== 200) throw new Error(`library ${name} not unlocked: ${unlocked.status} ${unlocked.text}`);
  }
  if (Object.keys(files).length === 0) return id;
  const link = (await call('GET', `/api2/repos/${id}/upload-link/`, { query: { p: '/' } })).json as string;
  const up = await uploadTo(link, '/', files);
  if (up.status !== 200) throw new Error(`upload into ${name}: ${up.status} ${up.text}`);
  return id;
}
