// One script of web API calls, run against `seafs serve` (as a CE 10.0) and a
// real Seafile CE 10.0: every endpoint of the spec that 10.0 has, as the
// library's owner, as another user, as a share-link visitor and with no
// login, with good and bad input. The two answers to each call must agree in
// status, media type, the headers clients read (oid, Location,
// Content-Disposition) and the body's shape (keys and value types, not
// values), unless server-differences.ts lists the difference with a reason.
// An unlisted difference fails with both answers; so does a listed one that
// no longer occurs (unless it is listed as under change elsewhere).
// SEAFS_SKIP_REAL_SERVER=1 runs the script against `seafs serve` alone
// (loudly), which still checks what serve must answer here.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { realServerSkipped, startRealServer, type ServerKind } from '../helpers/real-server.js';
import { adminToken, createUser, getToken, startTestServer, type TestServer } from '../helpers/server.js';
import { differences, observe, type Observed } from './api-shape.js';
import { INTENDED, type Intended } from './server-differences.js';

type Who = 'owner' | 'other' | 'visitor' | 'nobody';

interface CallOpts {
  query?: Record<string, string>;
  form?: Record<string, string | string[]>;
  headers?: Record<string, string>;
  /** a JSON body (the V2.1 batch endpoints read JSON) */
  json?: unknown;
  /** an absolute URL (a link the server handed out) instead of a path */
  url?: boolean;
}

/** A multipart part: a text field, or a file (or a text field sent with a filename, as some HTTP libraries do). */
type Part = { name: string; value: string | Buffer; filename?: string };

/** a 16 x 8 PNG, half red and half blue */
function smallPng(): Buffer {
  const png = new PNG({ width: 16, height: 8 });
  for (let i = 0; i < 16 * 8; i++) png.data.set(i % 16 < 8 ? [255, 0, 0, 255] : [0, 0, 255, 255], i * 4);
  return PNG.sync.write(png);
}

function multipart(parts: Part[]): { body: Buffer; type: string } {
  const boundary = 'seafsdiff' + randomBytes(8).toString('hex');
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const fn = p.filename !== undefined ? `; filename="${p.filename}"` : '';
    const ct = p.filename !== undefined ? 'Content-Type: application/octet-stream\r\n' : '';
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${fn}\r\n${ct}\r\n`),
      Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** A raw POST that keeps the answer even when the C fileserver closes before reading the whole body. */
function rawPost(url: string, body: Buffer, type: string): Promise<{ status: number; headers: Headers; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: 'POST',
        agent: false,
        headers: { 'Content-Type': type, 'Content-Length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          resolve({ status: res.statusCode!, headers, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', (e) => {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EPIPE' && code !== 'ECONNRESET') reject(e);
    });
    req.end(body);
  });
}

interface Transcript {
  answers: Map<string, Observed>;
  /** raw answers some checks of serve alone look at */
  raw: Map<string, { status: number; headers: Headers; text: string; json: unknown }>;
}

const OTHER = 'other@seafs.test';
const OTHER_PW = 'other-pw-1';
const ENC_PW = 'enc pw 1';

/** The script: the same calls in the same order on either server. */
async function script(server: TestServer): Promise<Transcript> {
  const answers = new Map<string, Observed>();
  const raw: Transcript['raw'] = new Map();
  await createUser(server, OTHER, OTHER_PW);
  const tokens: Record<Who, string | null> = {
    owner: await adminToken(server),
    other: await getToken(server.url, OTHER, OTHER_PW),
    visitor: null,
    nobody: null,
  };
  const owner = server.adminEmail;

  /** One call of the script, kept under `label` (unique); returns the answer for later calls. */
  const step = async (label: string, who: Who, method: string, pathOrUrl: string, o: CallOpts = {}) => {
    if (answers.has(label)) throw new Error(`two steps named ${label}`);
    const u = new URL(o.url ? pathOrUrl : server.url + pathOrUrl);
    for (const [k, v] of Object.entries(o.query ?? {})) u.searchParams.set(k, v);
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const token = tokens[who];
    if (token) headers.Authorization = `Token ${token}`;
    let body: string | undefined;
    if (o.form) {
      const f = new URLSearchParams();
      for (const [k, v] of Object.entries(o.form)) for (const x of Array.isArray(v) ? v : [v]) f.append(k, x);
      body = f.toString();
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    } else if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['Content-Type'] = 'application/json';
    }
    const res = await fetch(u, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    return record(label, `${method} ${u.pathname}${u.search} as ${who}`, res.status, res.headers, text);
  };
  const record = (label: string, call: string, status: number, headers: Headers, text: string) => {
    answers.set(label, observe(call, status, headers, text));
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const a = { status, headers, text, json };
    raw.set(label, a);
    return a;
  };
  /** A multipart POST to a fileserver link (no login: the link's token is the permission). */
  const upload = async (label: string, url: string, parts: Part[]) => {
    const { body, type } = multipart(parts);
    const a = await rawPost(url, body, type);
    return record(
      label,
      `POST ${neutralPath(url)} (multipart: ${parts.map(describePart).join(', ')})`,
      a.status,
      a.headers,
      a.text,
    );
  };
  const str = (a: { json: unknown }) => (typeof a.json === 'string' ? a.json : '');

  // ---- session and account
  await step('ping', 'nobody', 'GET', '/api2/ping/');
  await step('auth ping', 'owner', 'GET', '/api2/auth/ping/');
  await step('auth ping, no token', 'nobody', 'GET', '/api2/auth/ping/');
  await step('auth ping, unknown token', 'nobody', 'GET', '/api2/auth/ping/', {
    headers: { Authorization: `Token ${'0'.repeat(40)}` },
  });
  await step('auth-token, wrong password', 'nobody', 'POST', '/api2/auth-token/', {
    form: { username: owner, password: 'wrong' },
  });
  await step('auth-token, no password', 'nobody', 'POST', '/api2/auth-token/', { form: { username: owner } });
  await step('auth-token', 'nobody', 'POST', '/api2/auth-token/', {
    form: { username: OTHER, password: OTHER_PW },
  });
  await step('account info', 'owner', 'GET', '/api2/account/info/');
  await step('account info, other', 'other', 'GET', '/api2/account/info/');
  await step('server-info', 'nobody', 'GET', '/api2/server-info/');
  await step('v2.1 user', 'owner', 'GET', '/api/v2.1/user/');
  await step('v2.1 user, rename', 'owner', 'PUT', '/api/v2.1/user/', { form: { name: 'Admin' } });
  await step('search-user', 'owner', 'GET', '/api2/search-user/', { query: { q: 'other' } });
  await step('devices', 'owner', 'GET', '/api2/devices/');
  await step('avatar', 'owner', 'GET', `/api2/avatars/user/${OTHER}/resized/80/`);
  await step('client-login', 'owner', 'GET', '/api2/client-login/');
  await step('client-login, POST', 'owner', 'POST', '/api2/client-login/');

  // ---- accounts (administrator)
  await step('accounts', 'owner', 'GET', '/api2/accounts/');
  await step('accounts, not admin', 'other', 'GET', '/api2/accounts/');
  await step('account', 'owner', 'GET', `/api2/accounts/${OTHER}/`);
  await step('account, no such', 'owner', 'GET', '/api2/accounts/nobody@seafs.test/');
  await step('account create', 'owner', 'PUT', '/api2/accounts/carol@seafs.test/', {
    form: { password: 'carol-pw-1' },
  });
  await step('account update', 'owner', 'PUT', '/api2/accounts/carol@seafs.test/', { form: { name: 'Carol' } });
  await step('account update, not admin', 'other', 'PUT', '/api2/accounts/carol@seafs.test/', {
    form: { name: 'C' },
  });
  await step('account create, no password', 'owner', 'PUT', '/api2/accounts/dave@seafs.test/', {
    form: { name: 'Dave' },
  });
  await step('account migrate, no to_user', 'owner', 'POST', '/api2/accounts/carol@seafs.test/', {
    form: { op: 'migrate' },
  });
  await step('account delete', 'owner', 'DELETE', '/api2/accounts/carol@seafs.test/');

  // ---- libraries
  const made = await step('create library', 'owner', 'POST', '/api2/repos/', { form: { name: 'diff' } });
  const repo = (made.json as { repo_id: string }).repo_id;
  await step('create library, no name', 'owner', 'POST', '/api2/repos/', { form: {} });
  const madeEnc = await step('create encrypted library', 'owner', 'POST', '/api2/repos/', {
    form: { name: 'vault', passwd: ENC_PW },
  });
  const enc = (madeEnc.json as { repo_id: string }).repo_id;
  const spare = (
    (await step('create library, spare', 'other', 'POST', '/api2/repos/', { form: { name: 'spare' } })).json as {
      repo_id: string;
    }
  ).repo_id;
  const R = `/api2/repos/${repo}`;
  await step('library', 'owner', 'GET', `${R}/`);
  await step('library, no such', 'owner', 'GET', `/api2/repos/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}/`);
  await step('library v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/`);
  await step('library owner', 'owner', 'GET', `${R}/owner/`);
  await step('library owner, not the owner', 'other', 'GET', `${R}/owner/`);
  await step('library rename', 'owner', 'POST', `${R}/`, { query: { op: 'rename' }, form: { repo_name: 'diff2' } });
  await step('library rename, by its owner', 'other', 'POST', `/api2/repos/${spare}/`, {
    query: { op: 'rename' },
    form: { repo_name: 'x' },
  });
  await step('library rename, not the owner', 'owner', 'POST', `/api2/repos/${spare}/`, {
    query: { op: 'rename' },
    form: { repo_name: 'x' },
  });
  await step('set password', 'owner', 'POST', `/api2/repos/${enc}/`, { form: { password: ENC_PW } });
  await step('set password, wrong', 'owner', 'POST', `/api2/repos/${enc}/`, { form: { password: 'nope' } });
  await step('set password, not encrypted', 'owner', 'POST', `${R}/`, { form: { password: 'nope' } });
  await step('set password v2.1', 'owner', 'POST', `/api/v2.1/repos/${enc}/set-password/`, {
    form: { password: ENC_PW },
  });
  await step('encrypted library', 'owner', 'GET', `/api2/repos/${enc}/`);
  await step('download-info', 'owner', 'GET', `${R}/download-info/`);
  await step('history', 'owner', 'GET', `${R}/history/`);
  await step('history v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/history/`);
  await step('history-limit', 'owner', 'GET', `${R}/history-limit/`);
  await step('default library', 'owner', 'GET', '/api2/default-repo/');
  await step('default library, create', 'other', 'POST', '/api2/default-repo/');
  await step('virtual libraries', 'owner', 'GET', '/api2/virtual-repos/');
  await step('search (Pro)', 'owner', 'GET', '/api2/search/', { query: { q: 'a' } });
  await step('sub-library', 'owner', 'GET', `${R}/dir/sub_repo/`, { query: { p: '/', name: 'x' } });
  await step('library public (Pro)', 'owner', 'POST', `${R}/public/`);
  await step('folder permissions (Pro)', 'owner', 'GET', `${R}/user-folder-perm/`, { query: { folder_path: '/' } });
  await step('office viewer (Pro)', 'owner', 'GET', `${R}/owa-file/`, { query: { path: '/a.txt' } });

  // ---- folders and files, as the owner
  await step('list root, empty', 'owner', 'GET', `${R}/dir/`, { query: { p: '/' } });
  await step('mkdir', 'owner', 'POST', `${R}/dir/`, { query: { p: '/d' }, form: { operation: 'mkdir' } });
  await step('mkdir, reloaddir', 'owner', 'POST', `${R}/dir/`, {
    query: { p: '/e', reloaddir: 'true' },
    form: { operation: 'mkdir' },
  });
  await step('mkdir, name taken', 'owner', 'POST', `${R}/dir/`, { query: { p: '/d' }, form: { operation: 'mkdir' } });
  await step('mkdir, no parent', 'owner', 'POST', `${R}/dir/`, {
    query: { p: '/nope/x' },
    form: { operation: 'mkdir' },
  });
  await step('mkdir, create_parents', 'owner', 'POST', `${R}/dir/`, {
    query: { p: '/p/q' },
    form: { operation: 'mkdir', create_parents: 'true' },
  });
  await step('mkdir, no p', 'owner', 'POST', `${R}/dir/`, { form: { operation: 'mkdir' } });
  await step('dir, bad operation', 'owner', 'POST', `${R}/dir/`, { query: { p: '/d' }, form: { operation: 'x' } });
  await step('dir rename', 'owner', 'POST', `${R}/dir/`, {
    query: { p: '/d (1)' },
    form: { operation: 'rename', newname: 'g' },
  });
  await step('dir rename, no newname', 'owner', 'POST', `${R}/dir/`, {
    query: { p: '/g' },
    form: { operation: 'rename' },
  });
  await step('dir delete', 'owner', 'DELETE', `${R}/dir/`, { query: { p: '/g' } });
  await step('dir delete, no such', 'owner', 'DELETE', `${R}/dir/`, { query: { p: '/nope' } });
  await step('dir download link', 'owner', 'GET', `${R}/dir/download/`, { query: { p: '/d' } });
  await step('thumbnail', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/a.txt', size: '48' } });

  const up = await step('upload-link', 'owner', 'GET', `${R}/upload-link/`, { query: { p: '/' } });
  await step('upload-link, no such folder', 'owner', 'GET', `${R}/upload-link/`, { query: { p: '/nope' } });
  await step('upload-link, not shared', 'other', 'GET', `${R}/upload-link/`, { query: { p: '/' } });
  const link = str(up);
  await upload('upload', `${link}?ret-json=1`, [
    { name: 'parent_dir', value: '/' },
    { name: 'file', value: 'hello a', filename: 'a.txt' },
  ]);
  const linkD = str(await step('upload-link of a folder', 'owner', 'GET', `${R}/upload-link/`, { query: { p: '/d' } }));
  await upload('upload, answer as text', linkD, [
    { name: 'parent_dir', value: '/d' },
    { name: 'file', value: 'hello b', filename: 'b.txt' },
  ]);
  await upload('upload, parent_dir sent with a filename', `${link}?ret-json=1`, [
    { name: 'parent_dir', value: '/', filename: 'blob' },
    { name: 'file', value: 'hello c', filename: 'c.txt' },
  ]);
  await upload('upload, no parent_dir', `${link}?ret-json=1`, [{ name: 'file', value: 'x', filename: 'x.txt' }]);
  await upload('upload, parent_dir outside the link', `${link}?ret-json=1`, [
    { name: 'parent_dir', value: '/d' },
    { name: 'file', value: 'x', filename: 'x.txt' },
  ]);
  await upload('upload, no file', `${link}?ret-json=1`, [{ name: 'parent_dir', value: '/' }]);
  await upload('upload, replace', `${link}?ret-json=1`, [
    { name: 'parent_dir', value: '/' },
    { name: 'replace', value: '1' },
    { name: 'file', value: 'hello a2', filename: 'a.txt' },
  ]);
  // thumbnails (api2 ThumbnailView): a real picture, then seahub's refusals in its order
  await upload('upload a picture', `${link}?ret-json=1`, [
    { name: 'parent_dir', value: '/' },
    { name: 'file', value: smallPng(), filename: 'pic.png' },
  ]);
  await step('thumbnail of a picture', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/pic.png', size: '8' } });
  await step('thumbnail, Accept an image', 'owner', 'GET', `${R}/thumbnail/`, {
    query: { p: '/pic.png', size: '8' },
    headers: { Accept: 'image/*' },
  });
  await step('thumbnail of a text file', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/a.txt', size: '8' } });
  await step('thumbnail, no size', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/pic.png' } });
  await step('thumbnail, bad size', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/pic.png', size: 'x' } });
  await step('thumbnail of a folder', 'owner', 'GET', `${R}/thumbnail/`, { query: { p: '/d', size: '8' } });
  await step('other: thumbnail, not shared', 'other', 'GET', `${R}/thumbnail/`, {
    query: { p: '/pic.png', size: '8' },
  });
  await upload('upload, unknown token', link.replace(/[^/]+$/, 'f'.repeat(36)), [
    { name: 'parent_dir', value: '/' },
    { name: 'file', value: 'x', filename: 'x.txt' },
  ]);
  const upd = await step('update-link', 'owner', 'GET', `${R}/update-link/`, { query: { p: '/' } });
  await upload('update', str(upd), [
    { name: 'target_file', value: '/a.txt' },
    { name: 'file', value: 'hello a3', filename: 'a.txt' },
  ]);
  await upload('update, no such file', str(upd), [
    { name: 'target_file', value: '/nope.txt' },
    { name: 'file', value: 'x', filename: 'nope.txt' },
  ]);
  await step('upload-blks-link', 'owner', 'GET', `${R}/upload-blks-link/`, { query: { p: '/' } });
  await step('update-blks-link', 'owner', 'GET', `${R}/update-blks-link/`, { query: { p: '/' } });

  const listing = await step('list root', 'owner', 'GET', `${R}/dir/`, { query: { p: '/' } });
  await step('list root, uptodate', 'owner', 'GET', `${R}/dir/`, {
    query: { p: '/', oid: listing.headers.get('oid') ?? '' },
  });
  await step('list, files only', 'owner', 'GET', `${R}/dir/`, { query: { p: '/', t: 'f' } });
  await step('list, folders recursively', 'owner', 'GET', `${R}/dir/`, {
    query: { p: '/', t: 'd', recursive: '1' },
  });
  await step('list, bad t', 'owner', 'GET', `${R}/dir/`, { query: { p: '/', t: 'x' } });
  await step('list, bad recursive', 'owner', 'GET', `${R}/dir/`, { query: { p: '/', recursive: '2' } });
  await step('list, no such folder', 'owner', 'GET', `${R}/dir/`, { query: { p: '/nope' } });
  await step('list v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/dir/`, { query: { p: '/' } });
  await step('dir detail v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/dir/detail/`, { query: { path: '/d' } });
  await step('mkdir v2.1', 'owner', 'POST', `/api/v2.1/repos/${repo}/dir/`, {
    query: { p: '/w' },
    form: { operation: 'mkdir' },
  });
  await step('dir delete v2.1', 'owner', 'DELETE', `/api/v2.1/repos/${repo}/dir/`, { query: { p: '/w' } });
  await step('dir detail v2.1, no such folder', 'owner', 'GET', `/api/v2.1/repos/${repo}/dir/detail/`, {
    query: { path: '/nope' },
  });

  const dl = await step('file link', 'owner', 'GET', `${R}/file/`, { query: { p: '/a.txt' } });
  await step('file link, reuse', 'owner', 'GET', `${R}/file/`, { query: { p: '/a.txt', reuse: '1' } });
  await step('file link, bad reuse', 'owner', 'GET', `${R}/file/`, { query: { p: '/a.txt', reuse: '2' } });
  await step('file link, no p', 'owner', 'GET', `${R}/file/`);
  await step('file link, no such file', 'owner', 'GET', `${R}/file/`, { query: { p: '/nope.txt' } });
  await step('file link, a folder', 'owner', 'GET', `${R}/file/`, { query: { p: '/d' } });
  await step('file download', 'nobody', 'GET', str(dl), { url: true });
  await step('file download, used once', 'nobody', 'GET', str(dl), { url: true });
  await step(
    'file download, range',
    'nobody',
    'GET',
    str(await step('file link, for a range', 'owner', 'GET', `${R}/file/`, { query: { p: '/a.txt' } })),
    {
      url: true,
      headers: { Range: 'bytes=1-3' },
    },
  );
  await step('file detail', 'owner', 'GET', `${R}/file/detail/`, { query: { p: '/a.txt' } });
  await step('file detail, no such file', 'owner', 'GET', `${R}/file/detail/`, { query: { p: '/nope.txt' } });
  await step('file detail v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/file/`, { query: { p: '/a.txt' } });
  await step('smart link', 'owner', 'GET', '/api/v2.1/smart-link/', {
    query: { repo_id: repo, path: '/a.txt', is_dir: 'false' },
  });
  const fh = await step('file history', 'owner', 'GET', `${R}/file/history/`, { query: { p: '/a.txt' } });
  await step('file history v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/file/history/`, {
    query: { path: '/a.txt' },
  });
  await step('file new_history v2.1', 'owner', 'GET', `/api/v2.1/repos/${repo}/file/new_history/`, {
    query: { path: '/a.txt' },
  });
  const firstCommit = ((fh.json as { commits?: { id: string }[] })?.commits ?? []).at(-1)?.id ?? '';
  const rev = await step('file revision link', 'owner', 'GET', `${R}/file/revision/`, {
    query: { p: '/a.txt', commit_id: firstCommit },
  });
  await step('file revision download', 'nobody', 'GET', str(rev), { url: true });
  await step('file revert', 'owner', 'PUT', `${R}/file/revert/`, { form: { p: '/a.txt', commit_id: firstCommit } });
  await step('file revert, no p', 'owner', 'PUT', `${R}/file/revert/`, { form: { commit_id: firstCommit } });
  await step('file uploaded bytes', 'owner', 'GET', `/api/v2.1/repos/${repo}/file-uploaded-bytes/`, {
    query: { parent_dir: '/', file_name: 'z.txt' },
  });

  await step('file create', 'owner', 'POST', `${R}/file/`, { query: { p: '/n.txt' }, form: { operation: 'create' } });
  await step('file create, reloaddir', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/m.txt', reloaddir: 'true' },
    form: { operation: 'create' },
  });
  await step('file create, name taken', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n.txt' },
    form: { operation: 'create' },
  });
  await step('file create, no parent', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/nope/n.txt' },
    form: { operation: 'create' },
  });
  await step('file create v2.1', 'owner', 'POST', `/api/v2.1/repos/${repo}/file/`, {
    query: { p: '/v.txt' },
    form: { operation: 'create' },
  });
  await step('file rename', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n.txt' },
    form: { operation: 'rename', newname: 'n2.txt' },
  });
  await step('file rename, same name', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n2.txt' },
    form: { operation: 'rename', newname: 'n2.txt' },
  });
  await step('file rename, no newname', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n2.txt' },
    form: { operation: 'rename' },
  });
  await step('file rename, no such file', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/nope.txt' },
    form: { operation: 'rename', newname: 'x.txt' },
  });
  await step('file rename v2.1', 'owner', 'POST', `/api/v2.1/repos/${repo}/file/`, {
    query: { p: '/v.txt' },
    form: { operation: 'rename', newname: 'v2.txt' },
  });
  await step('file copy', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n2.txt' },
    form: { operation: 'copy', dst_repo: repo, dst_dir: '/d' },
  });
  await step('file move', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/n2.txt' },
    form: { operation: 'move', dst_repo: repo, dst_dir: '/e' },
  });
  await step('file move, no dst_dir', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/m.txt' },
    form: { operation: 'move', dst_repo: repo },
  });
  await step('file, bad operation', 'owner', 'POST', `${R}/file/`, {
    query: { p: '/m.txt' },
    form: { operation: 'x' },
  });
  await step('file lock (Pro)', 'owner', 'PUT', `${R}/file/`, { form: { p: '/a.txt', operation: 'lock' } });
  await step('file unlock, not locked', 'owner', 'PUT', `${R}/file/`, { form: { p: '/a.txt', operation: 'unlock' } });
  await step('file delete', 'owner', 'DELETE', `${R}/file/`, { query: { p: '/m.txt' } });
  await step('file delete v2.1', 'owner', 'DELETE', `/api/v2.1/repos/${repo}/file/`, { query: { p: '/v2.txt' } });
  await step('file delete, no p', 'owner', 'DELETE', `${R}/file/`);

  // ---- several files at once
  await step('fileops copy', 'owner', 'POST', `${R}/fileops/copy/`, {
    query: { p: '/' },
    form: { file_names: 'a.txt:c.txt', dst_repo: repo, dst_dir: '/p' },
  });
  await step('fileops copy, no file_names', 'owner', 'POST', `${R}/fileops/copy/`, {
    query: { p: '/' },
    form: { dst_repo: repo, dst_dir: '/p' },
  });
  await step('fileops move', 'owner', 'POST', `${R}/fileops/move/`, {
    query: { p: '/p' },
    form: { file_names: 'a.txt', dst_repo: repo, dst_dir: '/p/q' },
  });
  await step('fileops delete', 'owner', 'POST', `${R}/fileops/delete/`, {
    query: { p: '/p' },
    form: { file_names: 'c.txt' },
  });
  await step('sync batch copy', 'owner', 'POST', '/api/v2.1/repos/sync-batch-copy-item/', {
    form: {
      src_repo_id: repo,
      src_parent_dir: '/',
      src_dirents: ['a.txt'],
      dst_repo_id: repo,
      dst_parent_dir: '/e',
    },
  });
  await step('sync batch move', 'owner', 'POST', '/api/v2.1/repos/sync-batch-move-item/', {
    form: {
      src_repo_id: repo,
      src_parent_dir: '/e',
      src_dirents: ['a.txt'],
      dst_repo_id: repo,
      dst_parent_dir: '/p',
    },
  });
  const task = await step('async batch copy', 'owner', 'POST', '/api/v2.1/repos/async-batch-copy-item/', {
    json: {
      src_repo_id: repo,
      src_parent_dir: '/',
      src_dirents: ['c.txt'],
      dst_repo_id: repo,
      dst_parent_dir: '/e',
    },
  });
  await step('copy-move progress', 'owner', 'GET', '/api/v2.1/query-copy-move-progress/', {
    query: { task_id: String((task.json as { task_id?: string })?.task_id ?? '') },
  });
  await step('batch delete', 'owner', 'DELETE', '/api/v2.1/repos/batch-delete-item/', {
    json: { repo_id: repo, parent_dir: '/p', dirents: ['a.txt'] },
  });

  // ---- trash, history, commits
  await step('trash', 'owner', 'GET', `/api/v2.1/repos/${repo}/trash/`);
  const hist = await step('history, for a commit', 'owner', 'GET', `${R}/history/`);
  const head = ((hist.json as { commits?: { id: string }[] })?.commits ?? [])[0]?.id ?? '';
  await step('commit dir', 'owner', 'GET', `/api/v2.1/repos/${repo}/commits/${head}/dir/`, { query: { path: '/' } });
  const zip = await step('dir download link (zip)', 'owner', 'GET', `/api/v2.1/repos/${repo}/zip-task/`, {
    query: { parent_dir: '/', dirents: 'd' },
  });
  await step('zip progress', 'owner', 'GET', '/api/v2.1/query-zip-progress/', {
    query: { token: String((zip.json as { zip_token?: string })?.zip_token ?? '') },
  });
  await step('trash clean', 'owner', 'DELETE', `/api/v2.1/repos/${repo}/trash/`);

  // ---- stars
  await step('star', 'owner', 'POST', '/api2/starredfiles/', { form: { repo_id: repo, p: '/a.txt' } });
  await step('star, no p', 'owner', 'POST', '/api2/starredfiles/', { form: { repo_id: repo } });
  await step('stars', 'owner', 'GET', '/api2/starredfiles/');
  await step('unstar', 'owner', 'DELETE', '/api2/starredfiles/', { query: { repo_id: repo, p: '/a.txt' } });
  await step('star v2.1', 'owner', 'POST', '/api/v2.1/starred-items/', { form: { repo_id: repo, path: '/d' } });
  await step('stars v2.1', 'owner', 'GET', '/api/v2.1/starred-items/');
  await step('unstar v2.1', 'owner', 'DELETE', '/api/v2.1/starred-items/', { query: { repo_id: repo, path: '/d' } });

  // ---- share links, and what a visitor with one sees
  await step('share link v2', 'owner', 'PUT', `${R}/file/shared-link/`, { form: { p: '/a.txt' } });
  await step('share link v2, no p', 'owner', 'PUT', `${R}/file/shared-link/`, { form: {} });
  await step('share links v2', 'owner', 'GET', '/api2/shared-links/');
  await step('send share link, no mail', 'owner', 'POST', '/api2/send-share-link/', {
    form: { token: '0'.repeat(20), email: OTHER },
  });
  const dirLink = await step('share link', 'owner', 'POST', '/api/v2.1/share-links/', {
    form: { repo_id: repo, path: '/d' },
  });
  await step('share link, exists', 'owner', 'POST', '/api/v2.1/share-links/', { form: { repo_id: repo, path: '/d' } });
  await step('share link, no such path', 'owner', 'POST', '/api/v2.1/share-links/', {
    form: { repo_id: repo, path: '/nope' },
  });
  await step('share link, not shared', 'other', 'POST', '/api/v2.1/share-links/', {
    form: { repo_id: repo, path: '/d' },
  });
  const fileLink = await step('share link of a file', 'owner', 'POST', '/api/v2.1/share-links/', {
    form: { repo_id: repo, path: '/c.txt' },
  });
  await step('share links of a library', 'owner', 'GET', '/api/v2.1/share-links/', { query: { repo_id: repo } });
  await step('share links', 'owner', 'GET', '/api/v2.1/share-links/');
  const dt = (dirLink.json as { token?: string })?.token ?? '';
  const ft = (fileLink.json as { token?: string })?.token ?? '';
  await step('visitor: folder listing v2', 'visitor', 'GET', `/api2/d/${dt}/dir/`, { query: { p: '/' } });
  await step('visitor: folder listing', 'visitor', 'GET', `/api/v2.1/share-links/${dt}/dirents/`, {
    query: { path: '/' },
  });
  await step(
    'visitor: folder listing, no such link',
    'visitor',
    'GET',
    `/api/v2.1/share-links/${'0'.repeat(20)}/dirents/`,
  );
  await step('visitor: folder page', 'visitor', 'GET', `/d/${dt}/`);
  await step('visitor: file in folder', 'visitor', 'GET', `/d/${dt}/files/`, { query: { p: '/b.txt', dl: '1' } });
  await step('visitor: file page', 'visitor', 'GET', `/f/${ft}/`);
  await step('visitor: file download', 'visitor', 'GET', `/f/${ft}/`, { query: { dl: '1' } });
  await step('visitor: no such link', 'visitor', 'GET', `/f/${'0'.repeat(20)}/`);
  await step('share link delete, not owner', 'other', 'DELETE', `/api/v2.1/share-links/${ft}/`);
  await step('share link delete', 'owner', 'DELETE', `/api/v2.1/share-links/${ft}/`);

  const ul = await step('upload link', 'owner', 'POST', '/api/v2.1/upload-links/', {
    form: { repo_id: repo, path: '/e' },
  });
  await step('upload link, no such path', 'owner', 'POST', '/api/v2.1/upload-links/', {
    form: { repo_id: repo, path: '/nope' },
  });
  await step('upload links', 'owner', 'GET', '/api/v2.1/upload-links/');
  const ut = (ul.json as { token?: string })?.token ?? '';
  const vup = await step('visitor: upload link url', 'visitor', 'GET', `/api/v2.1/upload-links/${ut}/upload/`);
  const vurl = (vup.json as { upload_link?: string })?.upload_link ?? '';
  await upload('visitor: upload', `${vurl}?ret-json=1`, [
    { name: 'parent_dir', value: '/e' },
    { name: 'file', value: 'from a visitor', filename: 'v.txt' },
  ]);
  await step('visitor: upload page', 'visitor', 'GET', `/u/d/${ut}/`);
  await step('upload link delete', 'owner', 'DELETE', `/api/v2.1/upload-links/${ut}/`);

  // ---- another user, before and after the library is shared with them
  await step('other: library, not shared', 'other', 'GET', `${R}/`);
  await step('other: list, not shared', 'other', 'GET', `${R}/dir/`, { query: { p: '/' } });
  await step('other: file link, not shared', 'other', 'GET', `${R}/file/`, { query: { p: '/a.txt' } });
  await step('other: delete library, not shared', 'other', 'DELETE', `${R}/`);
  await step('share library', 'owner', 'PUT', `/api2/shared-repos/${repo}/`, {
    query: { share_type: 'personal', users: OTHER, permission: 'r' },
  });
  await step('share library, no such user', 'owner', 'PUT', `/api2/shared-repos/${repo}/`, {
    query: { share_type: 'personal', users: 'nobody@seafs.test', permission: 'r' },
  });
  await step('shared by me', 'owner', 'GET', '/api2/shared-repos/');
  await step('shared by me v2.1', 'owner', 'GET', '/api/v2.1/shared-repos/');
  await step('other: shared with me', 'other', 'GET', '/api2/beshared-repos/');
  await step('other: libraries', 'other', 'GET', '/api2/repos/');
  await step('other: libraries, shared', 'other', 'GET', '/api2/repos/', { query: { type: 'shared' } });
  await step('other: library, shared', 'other', 'GET', `${R}/`);
  await step('other: list, shared', 'other', 'GET', `${R}/dir/`, { query: { p: '/' } });
  await step('other: file link, shared', 'other', 'GET', `${R}/file/`, { query: { p: '/a.txt' } });
  await step('other: mkdir, read-only', 'other', 'POST', `${R}/dir/`, {
    query: { p: '/o' },
    form: { operation: 'mkdir' },
  });
  await step('other: upload-link, read-only', 'other', 'GET', `${R}/upload-link/`, { query: { p: '/' } });
  await step('other: delete library, shared', 'other', 'DELETE', `${R}/`);
  await step('other: file delete, read-only', 'other', 'DELETE', `${R}/file/`, { query: { p: '/a.txt' } });
  await step('other: file rename, read-only', 'other', 'POST', `${R}/file/`, {
    query: { p: '/a.txt' },
    form: { operation: 'rename', newname: 'z.txt' },
  });
  await step('other: file copy out, read-only', 'other', 'POST', `${R}/file/`, {
    query: { p: '/a.txt' },
    form: { operation: 'copy', dst_repo: spare, dst_dir: '/' },
  });
  await step('other: file detail, read-only', 'other', 'GET', `${R}/file/detail/`, { query: { p: '/a.txt' } });
  await step('other: share link, read-only', 'other', 'POST', '/api/v2.1/share-links/', {
    form: { repo_id: repo, path: '/e' },
  });
  await step('other: star, read-only', 'other', 'POST', '/api2/starredfiles/', {
    form: { repo_id: repo, p: '/a.txt' },
  });
  await step('other: history, read-only', 'other', 'GET', `${R}/history/`);
  await step('other: library owner, read-only', 'other', 'GET', `${R}/owner/`);
  await step('other: shared items, read-only', 'other', 'GET', `${R}/dir/shared_items/`, {
    query: { p: '/', share_type: 'user' },
  });
  await step('shared items', 'owner', 'GET', `${R}/dir/shared_items/`, { query: { p: '/', share_type: 'user' } });
  await step('shared items, bad share_type', 'owner', 'GET', `${R}/dir/shared_items/`, {
    query: { p: '/', share_type: 'x' },
  });
  await step('share folder', 'owner', 'PUT', `${R}/dir/shared_items/`, {
    query: { p: '/d' },
    form: { share_type: 'user', username: OTHER, permission: 'rw' },
  });
  await step('share folder, bad permission', 'owner', 'PUT', `${R}/dir/shared_items/`, {
    query: { p: '/d' },
    form: { share_type: 'user', username: OTHER, permission: 'x' },
  });
  await step('shared folders', 'owner', 'GET', '/api/v2.1/shared-folders/');
  await step('share folder permission', 'owner', 'POST', `${R}/dir/shared_items/`, {
    query: { p: '/d', share_type: 'user', username: OTHER },
    form: { permission: 'r' },
  });
  await step('share libraries in batch', 'owner', 'POST', '/api/v2.1/repos/batch/', {
    form: { operation: 'share', share_type: 'user', username: OTHER, permission: 'r', repo_id: repo },
  });
  await step('unshare folder', 'owner', 'DELETE', `${R}/dir/shared_items/`, {
    query: { p: '/d', share_type: 'user', username: OTHER },
  });
  // an encrypted library, shared: the API answers without its password, the file server does not
  const encUp = await step('encrypted: upload-link', 'owner', 'GET', `/api2/repos/${enc}/upload-link/`, {
    query: { p: '/' },
  });
  await upload('encrypted: upload', `${str(encUp)}?ret-json=1`, [
    { name: 'parent_dir', value: '/' },
    { name: 'file', value: 'secret', filename: 's.txt' },
  ]);
  await step('encrypted: share', 'owner', 'PUT', `/api2/shared-repos/${enc}/`, {
    query: { share_type: 'personal', users: OTHER, permission: 'rw' },
  });
  await step('other: encrypted list, no password', 'other', 'GET', `/api2/repos/${enc}/dir/`, { query: { p: '/' } });
  const encLink = await step('other: encrypted file link, no password', 'other', 'GET', `/api2/repos/${enc}/file/`, {
    query: { p: '/s.txt' },
  });
  await step('other: encrypted download, no password', 'nobody', 'GET', str(encLink), { url: true });
  await step('other: encrypted library, no password', 'other', 'GET', `/api2/repos/${enc}/`);
  await step('other: leave shared library', 'other', 'DELETE', `/api2/beshared-repos/${repo}/`, {
    query: { share_type: 'personal', from: owner },
  });
  await step('unshare library', 'owner', 'DELETE', `/api2/shared-repos/${repo}/`, {
    query: { share_type: 'personal', user: OTHER },
  });

  // ---- groups
  const g = await step('group create', 'owner', 'POST', '/api/v2.1/groups/', { form: { name: 'team' } });
  const gid = String((g.json as { id?: number })?.id ?? 0);
  await step('group create, name taken', 'owner', 'POST', '/api/v2.1/groups/', { form: { name: 'team' } });
  await step('groups v2', 'owner', 'GET', '/api2/groups/');
  await step('groups', 'owner', 'GET', '/api/v2.1/groups/');
  await step('group', 'owner', 'GET', `/api/v2.1/groups/${gid}/`);
  await step('group, no such', 'owner', 'GET', '/api/v2.1/groups/999999/');
  await step('other: group, not a member', 'other', 'GET', `/api/v2.1/groups/${gid}/`);
  await step('other: group members, not a member', 'other', 'GET', `/api/v2.1/groups/${gid}/members/`);
  await step('group member add', 'owner', 'POST', `/api/v2.1/groups/${gid}/members/`, { form: { email: OTHER } });
  await step('group member add, again', 'owner', 'POST', `/api/v2.1/groups/${gid}/members/`, {
    form: { email: OTHER },
  });
  await step('group members', 'owner', 'GET', `/api/v2.1/groups/${gid}/members/`);
  await step('group member', 'owner', 'GET', `/api/v2.1/groups/${gid}/members/${OTHER}/`);
  await step('group member admin', 'owner', 'PUT', `/api/v2.1/groups/${gid}/members/${OTHER}/`, {
    form: { is_admin: 'true' },
  });
  await step('group members bulk', 'owner', 'POST', `/api/v2.1/groups/${gid}/members/bulk/`, {
    form: { emails: `${OTHER},nobody@seafs.test` },
  });
  await step('group search member', 'owner', 'GET', `/api/v2.1/groups/${gid}/search-member/`, {
    query: { q: 'other' },
  });
  await step('shareable groups', 'owner', 'GET', '/api/v2.1/shareable-groups/');
  await step('other: group member add, not admin', 'other', 'POST', `/api/v2.1/groups/${gid}/members/`, {
    form: { email: 'carol@seafs.test' },
  });
  await step('group rename', 'owner', 'PUT', `/api/v2.1/groups/${gid}/`, { form: { name: 'team2' } });
  await step('group library share', 'owner', 'PUT', `/api2/shared-repos/${repo}/`, {
    query: { share_type: 'group', group_id: gid, permission: 'rw' },
  });
  await step('other: libraries, group', 'other', 'GET', '/api2/repos/', { query: { type: 'group' } });
  await step('group libraries', 'owner', 'GET', `/api/v2.1/groups/${gid}/libraries/`);
  await step('group avatar', 'owner', 'GET', `/api2/avatars/group/${gid}/resized/80/`);
  await step('group messages (old)', 'owner', 'GET', `/api2/group/msgs/${gid}/`);
  await step('group discussions (old)', 'owner', 'GET', `/api2/groups/${gid}/discussions/`);
  await step('group v2 rename', 'owner', 'POST', `/api2/groups/${gid}/`, {
    form: { operation: 'rename', newname: 'team3' },
  });
  await step('group v2 member add, no such user', 'owner', 'PUT', `/api2/groups/${gid}/members/`, {
    form: { user_name: 'nobody@seafs.test' },
  });
  await step('group library unshare', 'owner', 'DELETE', `/api2/shared-repos/${repo}/`, {
    query: { share_type: 'group', group_id: gid },
  });
  await step('group member remove', 'owner', 'DELETE', `/api/v2.1/groups/${gid}/members/${OTHER}/`);
  await step('group delete, not owner', 'other', 'DELETE', `/api/v2.1/groups/${gid}/`);
  await step('group delete', 'owner', 'DELETE', `/api/v2.1/groups/${gid}/`);
  await step('group v2 create', 'owner', 'PUT', '/api2/groups/', { form: { group_name: 'old' } });
  const v2g = (await step('groups v2, again', 'owner', 'GET', '/api2/groups/')).json as {
    groups?: { id: number; name: string }[];
  };
  const old = String(v2g?.groups?.find((x) => x.name === 'old')?.id ?? 0);
  await step('group v2 delete', 'owner', 'DELETE', `/api2/groups/${old}/`);
  await step('share link v2 delete', 'owner', 'DELETE', '/api2/shared-links/', { query: { t: '0'.repeat(20) } });

  // ---- the rest, and the library's end
  await step('libraries', 'owner', 'GET', '/api2/repos/');
  await step('libraries, mine', 'owner', 'GET', '/api2/repos/', { query: { type: 'mine' } });
  await step('libraries v2.1', 'owner', 'GET', '/api/v2.1/repos/', { query: { type: 'mine' } });
  await step('search-file', 'owner', 'GET', '/api/v2.1/search-file/', { query: { repo_id: repo, q: 'a.txt' } });
  await step('events (Pro)', 'owner', 'GET', '/api2/events/');
  await step('library delete, not the owner', 'other', 'DELETE', `${R}/`);
  await step('library delete', 'owner', 'DELETE', `${R}/`);
  await step('library delete, again', 'owner', 'DELETE', `${R}/`);
  return { answers, raw };
}

function describePart(p: Part): string {
  return p.filename !== undefined ? `${p.name}="${p.filename}"` : p.name;
}

function neutralPath(url: string): string {
  return new URL(url).pathname.replace(/\/[^/]{20,}$/, '/<token>') + new URL(url).search;
}

/** The unlisted differences, and the listed ones that did not occur (not under change), as a readable report. */
function compare(serve: Transcript, real: Transcript, intended: Intended[]): string[] {
  const report: string[] = [];
  const used = new Set<Intended>();
  const labels = [...new Set([...serve.answers.keys(), ...real.answers.keys()])];
  for (const label of labels) {
    const a = serve.answers.get(label);
    const b = real.answers.get(label);
    if (!a || !b) {
      report.push(`${label}: run on ${a ? 'serve' : 'real'} only`);
      continue;
    }
    const unlisted: string[] = [];
    for (const d of differences(a, b)) {
      const hit = intended.filter((i) => matches(i.call, label) && d.startsWith(i.what));
      hit.forEach((i) => used.add(i));
      if (hit.length === 0) unlisted.push(d);
    }
    if (unlisted.length === 0) continue;
    report.push(
      [
        `${label}: ${b.call}`,
        ...unlisted.map((d) => `  - ${d}`),
        `  serve: ${a.status} [${a.type}] ${a.excerpt}`,
        `  real:  ${b.status} [${b.type}] ${b.excerpt}`,
      ].join('\n'),
    );
  }
  for (const i of intended)
    if (!used.has(i) && !i.underChange) report.push(`listed but not seen: ${i.call} / ${i.what} (${i.why})`);
  return report;
}

function matches(pattern: string, label: string): boolean {
  if (!pattern.includes('*')) return pattern === label;
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(label);
}

const KINDS: ServerKind[] = realServerSkipped() ? ['serve'] : ['serve', 'real'];

describe('seafs serve answers each call of the web API as a real Seafile CE 10.0 does', () => {
  const transcripts = new Map<ServerKind, Transcript>();
  for (const kind of KINDS) {
    it(
      `runs the script on ${kind === 'real' ? 'a real Seafile CE 10.0' : 'seafs serve (as CE 10.0)'}`,
      { timeout: 180_000 },
      async () => {
        const server =
          kind === 'real'
            ? await startRealServer()
            : await startTestServer({ extraArgs: ['--edition', 'community', '--server-version', '10.0.1'] });
        try {
          const t = await script(server);
          transcripts.set(kind, t);
          // what every client the Seafile team wrote expects of both servers
          const mk = t.raw.get('mkdir, reloaddir')!;
          expect.soft(mk.status).toBe(200);
          expect.soft(Array.isArray(mk.json)).toBe(true);
          expect.soft(mk.headers.get('oid')).toMatch(/^[0-9a-f]{40}$/);
          const cr = t.raw.get('file create, reloaddir')!;
          expect.soft(cr.status).toBe(200);
          expect
            .soft(Array.isArray(cr.json) ? (cr.json as { name: string }[]).map((e) => e.name) : cr.json)
            .toContain('m.txt');
          expect.soft(cr.headers.get('oid')).toMatch(/^[0-9a-f]{40}$/);
          expect.soft((t.raw.get('library')!.json as { owner: string }).owner).toBe('self');
          expect.soft((t.raw.get('other: library, shared')!.json as { owner: string }).owner).toBe('share');
          expect.soft(t.raw.get('upload, parent_dir sent with a filename')!.status).toBe(200);
        } finally {
          await server.stop();
        }
      },
    );
  }
  if (KINDS.includes('real'))
    it('and the two agree, but for the differences listed in server-differences.ts', () => {
      const serve = transcripts.get('serve');
      const real = transcripts.get('real');
      if (!serve || !real) throw new Error('a run above failed: nothing to compare');
      const report = compare(serve, real, INTENDED);
      expect(
        report.join('\n\n'),
        `${report.length} unlisted differences (server-differences.ts lists the intended ones)`,
      ).toBe('');
    });
});
