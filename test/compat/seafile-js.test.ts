// Seafile's own JavaScript client, the npm package `seafile-js` (what seahub's
// web interface calls the server with), against `seafs serve`: log in, then
// libraries, folders, files, uploads, copy/move (sync and async), trash,
// history, revisions, starred items, search, share and upload links (with
// password and expiry), locks, groups, shares and encrypted libraries. Each
// call's answer is checked for the fields the web interface reads, and its
// effect through the server's API (raw requests, not seafile-js). A call this
// server does not support is listed in UNSUPPORTED and asserted to fail; the
// table of calls is printed at the end. Run `npm run build` first.
import { inflateRawSync } from 'node:zlib';
import { SeafileAPI } from 'seafile-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, apiAs, getToken, uploadTo, startServerWithUsers, type TestServer } from '../helpers/server.js';

const BOB = 'bob@seafs.test';
const BOB_PW = 'bob-secret-1';
const CAROL = 'carol@seafs.test';
const CAROL_PW = 'carol-secret-1';
const ENC_PW = 'vault pw 1';

let server: TestServer;
let sa: SeafileAPI; // the admin, through seafile-js
let sb: SeafileAPI; // bob, through seafile-js
let raw: ReturnType<typeof apiAs>; // the admin, raw requests: how each effect is checked
let rawBob: ReturnType<typeof apiAs>;

interface Row {
  call: string;
  result: 'pass' | 'FAIL' | 'unsupported';
  note: string;
}
const rows: Row[] = [];

/** Runs one seafile-js call with the checks of its answer and effect, and records it in the table. */
async function call<T>(name: string, fn: () => Promise<T>): Promise<T> {
  try {
    const v = await fn();
    rows.push({ call: name, result: 'pass', note: '' });
    return v;
  } catch (e) {
    const res = (e as { response?: { status: number; data: unknown } }).response;
    const note = res ? `${res.status} ${JSON.stringify(res.data).slice(0, 120)}` : String(e).slice(0, 160);
    rows.push({ call: name, result: 'FAIL', note });
    throw e;
  }
}

/**
 * A call this server does not carry out, with why: it must fail with `status`
 * (as seahub 10 fails it when its mail is not configured; the test fails the day it starts working).
 */
async function unsupported(name: string, why: string, status: number, fn: () => Promise<unknown>): Promise<void> {
  await expect(fn()).rejects.toMatchObject({ response: { status } });
  rows.push({ call: name, result: 'unsupported', note: why });
}

/** A file's content through a download link of the raw API. */
async function content(repo: string, p: string): Promise<string> {
  const link = await raw('GET', `/api2/repos/${repo}/file/`, { query: { p } });
  expect(link.status).toBe(200);
  return (await fetch(link.json as string)).text();
}

async function names(repo: string, p = '/'): Promise<string[]> {
  const r = await raw('GET', `/api2/repos/${repo}/dir/`, { query: { p } });
  expect(r.status).toBe(200);
  return (r.json as { name: string }[]).map((e) => e.name).sort();
}

async function upload(repo: string, dir: string, files: Record<string, string>): Promise<void> {
  const link = (await raw('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: dir } })).json as string;
  expect((await uploadTo(link, dir, files, { replace: true })).status).toBe(200);
}

/** A library the caller may not see: seahub answers 403, seafs serve 404 (it hides another user's library). */
const expectNoAccess = (status: number) => expect([403, 404]).toContain(status);

/** The files of a zip archive (stored or deflated), read through its central directory. */
function unzip(zip: Buffer): Map<string, string> {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  expect(end).toBeGreaterThanOrEqual(0);
  const out = new Map<string, string>();
  let at = zip.readUInt32LE(end + 16);
  for (let i = 0; i < zip.readUInt16LE(end + 10); i++) {
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLen = zip.readUInt16LE(at + 28);
    const skip = nameLen + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLen);
    const local = zip.readUInt32LE(at + 42);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + size);
    if (!name.endsWith('/')) out.set(name, (method === 8 ? inflateRawSync(data) : data).toString('utf8'));
    at += 46 + skip;
  }
  return out;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');

let lib = ''; // the main library
let lib2 = ''; // a second one, for copies and moves between libraries
let group = 0;

beforeAll(async () => {
  ({
    server,
    admin: raw,
    users: [rawBob],
  } = await startServerWithUsers([
    { email: BOB, password: BOB_PW, name: 'Bob B' },
    { email: CAROL, password: CAROL_PW, name: 'Carol C' },
  ]));
  sa = new SeafileAPI().init({ server: server.url, username: server.adminEmail, password: server.adminPassword });
  sb = new SeafileAPI().init({ server: server.url, username: BOB, password: BOB_PW });
  await sb.login();
});

afterAll(async () => {
  const width = Math.max(...rows.map((r) => r.call.length));
  const passed = rows.filter((r) => r.result === 'pass').length;
  const lines = rows.map((r) => `${r.call.padEnd(width)}  ${r.result.padEnd(11)}  ${r.note}`);
  console.log(`seafile-js against seafs serve: ${passed} of ${rows.length} calls pass\n${lines.join('\n')}`);
  await server?.stop();
});

describe('account', () => {
  it('logs in and reads and changes the account', async () => {
    await call('login', async () => {
      await sa.login();
      expect(sa.token).toBe(await adminToken(server));
    });
    await call('authPing', async () => expect((await sa.authPing()).data).toBe('pong'));
    await call('getAccountInfo', async () => {
      const { data } = await sa.getAccountInfo();
      expect(data).toMatchObject({ email: server.adminEmail, usage: 0 });
      expect(data).toHaveProperty('total');
      expect(data).toHaveProperty('avatar_url');
    });
    await call('getUserInfo', async () => {
      const { data } = await sa.getUserInfo();
      expect(data).toMatchObject({ email: server.adminEmail, contact_email: server.adminEmail });
      expect(data).toHaveProperty('login_id');
      expect(typeof data.name).toBe('string');
    });
    await call('updateUserInfo', async () => {
      const { data } = await sa.updateUserInfo({ name: 'Ada Admin' });
      expect(data.name).toBe('Ada Admin');
      expect((await raw('GET', '/api2/account/info/')).json.name).toBe('Ada Admin');
    });
    await call('getUserAvatar', async () => {
      const { data } = await sa.getUserAvatar(BOB, 64);
      expect(data).toMatchObject({ is_default: true });
      expect(data.url).toMatch(/^http/);
    });
    await call('searchUsers', async () => {
      const { data } = await sa.searchUsers('bob');
      expect(data.users).toEqual([expect.objectContaining({ email: BOB, name: 'Bob B', contact_email: BOB })]);
    });
  });

  it('lists and unlinks devices', async () => {
    const login = await fetch(`${server.url}/api2/auth-token/`, {
      method: 'POST',
      body: new URLSearchParams({
        username: BOB,
        password: BOB_PW,
        platform: 'linux',
        device_id: 'd'.repeat(40),
        device_name: 'bob-laptop',
      }),
    });
    expect(login.status).toBe(200);
    await call('listLinkedDevices', async () => {
      const { data } = await sb.listLinkedDevices();
      expect(data).toEqual([expect.objectContaining({ platform: 'linux', device_id: 'd'.repeat(40) })]);
      expect(data[0]).toHaveProperty('device_name', 'bob-laptop');
    });
    await call('unlinkDevice', async () => {
      await sb.unlinkDevice('linux', 'd'.repeat(40));
      expect((await rawBob('GET', '/api2/devices/')).json).toEqual([]);
    });
  });
});

describe('libraries', () => {
  it('creates, lists, reads, renames, limits history, transfers and deletes libraries', async () => {
    lib = await call('createMineRepo', async () => {
      const { data } = await sa.createMineRepo({ name: 'js-lib', desc: '' });
      // seahub answers encrypted as "" or 1 here (seafs serve: a bool); the web interface only tests it
      expect(data).toMatchObject({ repo_name: 'js-lib', permission: 'rw' });
      expect(!!data.encrypted).toBe(false);
      const listed = (await raw('GET', '/api2/repos/')).json as { id: string; name: string }[];
      expect(listed.map((x) => x.id)).toContain(data.repo_id);
      return data.repo_id as string;
    });
    lib2 = (await sa.createMineRepo({ name: 'js-lib2' })).data.repo_id;
    await call('listRepos', async () => {
      const { data } = await sa.listRepos();
      expect(data.repos).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ repo_id: lib, repo_name: 'js-lib', type: 'mine', permission: 'rw' }),
        ]),
      );
      const it = data.repos.find((x: { repo_id: string }) => x.repo_id === lib);
      for (const k of ['owner_email', 'owner_name', 'last_modified', 'size', 'encrypted']) expect(it).toHaveProperty(k);
    });
    await call('listRepos(type)', async () => {
      const { data } = await sb.listRepos({ type: 'mine' });
      expect(data.repos).toEqual([]);
    });
    await call('getRepoInfo', async () => {
      const { data } = await sa.getRepoInfo(lib);
      expect(data).toMatchObject({
        repo_id: lib,
        repo_name: 'js-lib',
        owner_email: server.adminEmail,
        permission: 'rw',
        encrypted: false,
        lib_need_decrypt: false,
        is_virtual: false,
      });
      expect(data).toHaveProperty('last_modified');
      expect(data).toHaveProperty('file_count', 0);
    });
    await call('renameRepo', async () => {
      await sa.renameRepo(lib, 'js-lib renamed');
      expect((await raw('GET', `/api2/repos/${lib}/`)).json.name).toBe('js-lib renamed');
    });
    await call('getRepoHistoryLimit', async () =>
      expect((await sa.getRepoHistoryLimit(lib)).data).toEqual({ keep_days: -1 }),
    );
    await call('setRepoHistoryLimit', async () => {
      expect((await sa.setRepoHistoryLimit(lib, 30)).data).toEqual({ keep_days: 30 });
      expect((await raw('GET', `/api2/repos/${lib}/history-limit/`)).json).toEqual({ keep_days: 30 });
    });
    const gift = (await sa.createMineRepo({ name: 'for bob' })).data.repo_id as string;
    await call('transferRepo', async () => {
      expect((await sa.transferRepo(gift, BOB)).data).toEqual({ success: true });
      const bobs = (await rawBob('GET', '/api2/repos/', { query: { type: 'mine' } })).json as { id: string }[];
      expect(bobs.map((x) => x.id)).toContain(gift);
    });
    const doomed = (await sa.createMineRepo({ name: 'doomed' })).data.repo_id as string;
    await call('deleteRepo', async () => {
      await sa.deleteRepo(doomed);
      expect((await raw('GET', `/api2/repos/${doomed}/`)).status).toBe(404);
    });
  });
});

describe('folders and files', () => {
  it('makes, lists, details, renames and deletes folders', async () => {
    await call('createDir', async () => {
      await sa.createDir(lib, '/docs');
      await sa.createDir(lib, '/old');
      expect(await names(lib)).toEqual(['docs', 'old']);
    });
    await upload(lib, '/docs', { 'report.txt': 'report v1', 'notes.md': '# notes' });
    await call('listDir', async () => {
      const { data } = await sa.listDir(lib, '/docs');
      expect(data.user_perm).toBe('rw');
      expect(data.dirent_list.map((e: { name: string }) => e.name).sort()).toEqual(['notes.md', 'report.txt']);
      const f = data.dirent_list.find((e: { name: string }) => e.name === 'report.txt');
      expect(f).toMatchObject({ type: 'file', size: 9, parent_dir: '/docs/', permission: 'rw', starred: false });
      for (const k of ['id', 'mtime', 'modifier_email', 'modifier_name']) expect(f).toHaveProperty(k);
    });
    await call('listDir(recursive)', async () => {
      const { data } = await sa.listDir(lib, '/', { recursive: true });
      const paths = data.dirent_list.map((e: { parent_dir: string; name: string }) => `${e.parent_dir}|${e.name}`);
      expect(paths).toEqual(expect.arrayContaining(['/|docs', '/docs|report.txt']));
    });
    await call('getDirInfo', async () => {
      const { data } = await sa.getDirInfo(lib, '/docs');
      expect(data).toMatchObject({ repo_id: lib, path: '/docs/', name: 'docs', permission: 'rw' });
      expect(data).toHaveProperty('mtime');
    });
    await call('renameDir', async () => {
      await sa.renameDir(lib, '/docs', 'papers');
      expect(await names(lib)).toEqual(['old', 'papers']);
    });
    await call('deleteDir', async () => {
      expect((await sa.deleteDir(lib, '/old')).data).toMatchObject({ success: true, commit_id: expect.any(String) });
      expect(await names(lib)).toEqual(['papers']);
    });
    await call('getInternalLink', async () => {
      const { data } = await sa.getInternalLink(lib, '/papers', 'dir');
      expect(data.smart_link).toMatch(/\/smart-link\/[0-9a-f-]{36}\/$/);
      expect(data.name).toBe('papers');
      // the same folder always has the same link
      expect((await sa.getInternalLink(lib, '/papers', 'dir')).data.smart_link).toBe(data.smart_link);
    });
  });

  it('creates, uploads, updates, reads, renames, locks, stars and deletes files', async () => {
    await call('createFile', async () => {
      // the browser's FormData turns is_draft=false into "false"; Node's form-data package wants the string
      const { data } = await sa.createFile(lib, '/papers/draft.md', 'false');
      expect(data).toMatchObject({ type: 'file', repo_id: lib, parent_dir: '/papers', obj_name: 'draft.md', size: 0 });
      expect(await names(lib, '/papers')).toContain('draft.md');
    });
    await call('getFileServerUploadLink', async () => {
      const { data: link } = await sa.getFileServerUploadLink(lib, '/papers');
      // seahub hands `upload-aj` for from=web (seafs serve: upload-api); both take the same multipart post
      expect(link).toMatch(/\/upload-(api|aj)\//);
      // the web interface uploads to it with ?ret-json=1
      expect((await uploadTo(link, '/papers', { 'upload.bin': 'uploaded by js' })).status).toBe(200);
      expect(await content(lib, '/papers/upload.bin')).toBe('uploaded by js');
    });
    await call('getUpdateLink', async () => {
      const { data: link } = await sa.getUpdateLink(lib, '/papers');
      expect(link).toMatch(/\/update-api\//);
      const fd = new FormData();
      fd.append('file', new Blob(['report v2!']), 'report.txt');
      fd.append('target_file', '/papers/report.txt');
      expect((await fetch(link, { method: 'POST', body: fd })).status).toBe(200);
      expect(await content(lib, '/papers/report.txt')).toBe('report v2!');
    });
    await call('getFileUploadedBytes', async () => {
      expect((await sa.getFileUploadedBytes(lib, '/papers', 'big.iso')).data).toEqual({ uploadedBytes: 0 });
    });
    await call('getFileInfo', async () => {
      const { data } = await sa.getFileInfo(lib, '/papers/report.txt');
      expect(data).toMatchObject({ type: 'file', name: 'report.txt', size: 10, permission: 'rw' });
      expect(data.last_modifier_email).toBe(server.adminEmail);
    });
    await call('getFileDownloadLink', async () => {
      const { data: link } = await sa.getFileDownloadLink(lib, '/papers/report.txt');
      expect(await (await fetch(link)).text()).toBe('report v2!');
    });
    await call('renameFile', async () => {
      const { data } = await sa.renameFile(lib, '/papers/draft.md', 'final.md');
      expect(data).toMatchObject({ obj_name: 'final.md', parent_dir: '/papers' });
      expect(await names(lib, '/papers')).toEqual(['final.md', 'notes.md', 'report.txt', 'upload.bin']);
    });
    await call('lockfile', async () => {
      expect((await sa.lockfile(lib, '/papers/notes.md')).data).toMatchObject({
        is_locked: true,
        obj_name: 'notes.md',
      });
      expect(
        (await raw('GET', `/api2/repos/${lib}/file/detail/`, { query: { p: '/papers/notes.md' } })).json.is_locked,
      ).toBe(true);
      // someone else cannot delete it meanwhile
      await raw('PUT', `/api2/shared-repos/${lib}/`, {
        query: { share_type: 'personal', user: BOB, permission: 'rw' },
      });
      expect(
        (await rawBob('DELETE', `/api/v2.1/repos/${lib}/file/`, { query: { p: '/papers/notes.md' } })).status,
      ).toBe(423);
      await raw('DELETE', `/api2/shared-repos/${lib}/`, { query: { share_type: 'personal', user: BOB } });
    });
    await call('unlockfile', async () => {
      expect((await sa.unlockfile(lib, '/papers/notes.md')).data).toMatchObject({ is_locked: false });
      expect(
        (await raw('GET', `/api2/repos/${lib}/file/detail/`, { query: { p: '/papers/notes.md' } })).json.is_locked,
      ).toBe(false);
    });
    await call('starItem', async () => {
      const { data } = await sa.starItem(lib, '/papers/report.txt');
      expect(data).toMatchObject({ repo_id: lib, path: '/papers/report.txt', obj_name: 'report.txt', is_dir: false });
      await sa.starItem(lib, '/papers');
      const v2 = (await raw('GET', '/api2/starredfiles/')).json as { path: string }[];
      expect(v2.map((s) => s.path)).toContain('/papers/report.txt');
    });
    await call('listStarredItems', async () => {
      const { data } = await sa.listStarredItems();
      expect(data.starred_item_list).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            repo_id: lib,
            repo_name: 'js-lib renamed',
            path: '/papers/report.txt',
            is_dir: false,
          }),
          expect.objectContaining({ path: '/papers/', is_dir: true, obj_name: 'papers' }),
        ]),
      );
    });
    await call('unstarItem', async () => {
      await sa.unstarItem(lib, '/papers/report.txt');
      await sa.unstarItem(lib, '/papers');
      expect((await sa.listStarredItems()).data.starred_item_list).toEqual([]);
      expect((await raw('GET', '/api2/starredfiles/')).json).toEqual([]);
    });
    await call('deleteFile', async () => {
      expect((await sa.deleteFile(lib, '/papers/final.md')).data).toMatchObject({
        success: true,
        commit_id: expect.any(String),
      });
      expect(await names(lib, '/papers')).not.toContain('final.md');
    });
  });
});

describe('copy, move, delete and download several', () => {
  it('copies and moves in a library (sync) and between libraries (async, with progress)', async () => {
    await sa.createDir(lib, '/dst');
    await call('copyDir(sync)', async () => {
      expect((await sa.copyDir(lib, lib, '/dst', '/papers', ['report.txt', 'notes.md'])).data).toEqual({
        success: true,
      });
      expect(await names(lib, '/dst')).toEqual(['notes.md', 'report.txt']);
      expect(await names(lib, '/papers')).toContain('report.txt');
    });
    await call('moveDir(sync)', async () => {
      await sa.moveDir(lib, lib, '/dst', '/papers', 'upload.bin');
      expect(await names(lib, '/dst')).toContain('upload.bin');
      expect(await names(lib, '/papers')).not.toContain('upload.bin');
    });
    const copied = await call('copyDir(async)', async () => {
      const { data } = await sa.copyDir(lib, lib2, '/', '/dst', ['report.txt']);
      expect(data.task_id).toMatch(/\S/);
      expect(await content(lib2, '/report.txt')).toBe('report v2!');
      return data.task_id as string;
    });
    await call('queryAsyncOperationProgress', async () => {
      const { data } = await sa.queryAsyncOperationProgress(copied);
      expect(data).toMatchObject({ done: 1, successful: true, failed: false, canceled: false, total: 1 });
    });
    const moved = await call('moveDir(async)', async () => {
      const { data } = await sa.moveDir(lib, lib2, '/', '/dst', ['upload.bin']);
      expect(await names(lib2)).toContain('upload.bin');
      expect(await names(lib, '/dst')).not.toContain('upload.bin');
      return data.task_id as string;
    });
    expect((await sa.queryAsyncOperationProgress(moved)).data).toMatchObject({ done: 1, successful: true });
    await call('cancelCopyMoveOperation', async () => {
      // the task is over already: nothing to cancel, and nothing undone
      expect((await sa.cancelCopyMoveOperation(moved)).data).toEqual({ success: true });
      expect(await names(lib2)).toContain('upload.bin');
    });
    await call('deleteMutipleDirents', async () => {
      const { data } = await sa.deleteMutipleDirents(lib, '/dst', ['report.txt', 'notes.md']);
      expect(data.success).toBe(true);
      expect(await names(lib, '/dst')).toEqual([]);
    });
  });

  it('zips a folder and several items for download', async () => {
    const token = await call('zipDownload', async () => {
      const { data } = await sa.zipDownload(lib, '/', 'papers');
      expect(data.zip_token).toMatch(/\S/);
      return data.zip_token as string;
    });
    await call('queryZipProgress', async () => {
      const { data } = await sa.queryZipProgress(token);
      expect(data.zipped).toBe(data.total);
      expect(data.total).toBeGreaterThan(0);
      // the file server's archive holds the folder with its files (stored, so the bytes show)
      const res = await fetch(`${server.url}/seafhttp/zip/${token}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/zip');
      const files = unzip(Buffer.from(await res.arrayBuffer()));
      expect([...files.keys()].sort()).toEqual(['papers/notes.md', 'papers/report.txt']);
      expect(files.get('papers/report.txt')).toBe('report v2!');
      // a zip token is spent by its download
      expect((await fetch(`${server.url}/seafhttp/zip/${token}`)).status).toBe(403);
    });
    await call('cancelZipTask', async () => {
      const multi = (await sa.zipDownload(lib, '/papers', ['report.txt', 'notes.md'])).data.zip_token;
      expect((await sa.cancelZipTask(multi)).data).toEqual({ success: true });
      expect((await fetch(`${server.url}/seafhttp/zip/${multi}`)).status).toBe(403);
    });
  });
});

describe('trash, history and revisions', () => {
  it('lists the trash and restores from it', async () => {
    await sa.createDir(lib, '/bin');
    await sa.createDir(lib, '/bin/sub');
    await upload(lib, '/bin', { 'gone.txt': 'deleted file', 'also.txt': 'also deleted' });
    await sa.deleteFile(lib, '/bin/gone.txt');
    await sa.deleteFile(lib, '/bin/also.txt');
    await sa.deleteDir(lib, '/bin/sub');
    const items = await call('getRepoFolderTrash', async () => {
      const { data } = await sa.getRepoFolderTrash(lib, '/bin');
      const byName = new Map<string, Record<string, unknown>>(
        data.data.map((e: { obj_name: string }) => [e.obj_name, e]),
      );
      expect([...byName.keys()].sort()).toEqual(['also.txt', 'gone.txt', 'sub']);
      expect(byName.get('gone.txt')).toMatchObject({ parent_dir: '/bin/', is_dir: false, size: 12 });
      for (const k of ['commit_id', 'deleted_time', 'obj_id']) expect(byName.get('gone.txt')).toHaveProperty(k);
      expect(data).toHaveProperty('more', false);
      return byName;
    });
    await call('restoreDirents', async () => {
      const gone = items.get('gone.txt')!;
      const { data } = await sa.restoreDirents(lib, gone.commit_id, ['/bin/gone.txt']);
      expect(data).toEqual({ failed: [], success: [{ path: '/bin/gone.txt', is_dir: false }] });
      expect(await content(lib, '/bin/gone.txt')).toBe('deleted file');
    });
    await call('restoreFile', async () => {
      const also = items.get('also.txt')!;
      await sa.restoreFile(lib, also.commit_id, '/bin/also.txt');
      expect(await content(lib, '/bin/also.txt')).toBe('also deleted');
    });
    await call('restoreFolder', async () => {
      const sub = items.get('sub')!;
      await sa.restoreFolder(lib, sub.commit_id, '/bin/sub');
      expect(await names(lib, '/bin')).toEqual(['also.txt', 'gone.txt', 'sub']);
    });
    await call('deleteRepoTrash', async () => {
      await sa.deleteFile(lib, '/bin/also.txt');
      expect((await raw('GET', `/api/v2.1/repos/${lib}/trash/`)).json.data.length).toBeGreaterThan(0);
      expect((await sa.deleteRepoTrash(lib, 0)).data).toEqual({ success: true });
      expect((await raw('GET', `/api/v2.1/repos/${lib}/trash/`)).json.data).toEqual([]);
    });
  });

  it('lists history, a commit folder, file histories and revisions, and reverts', async () => {
    const history = await call('getRepoHistory', async () => {
      const { data } = await sa.getRepoHistory(lib, 1, 100);
      const first = data.data[0];
      expect(first).toMatchObject({ email: server.adminEmail, name: 'Ada Admin', contact_email: server.adminEmail });
      for (const k of ['commit_id', 'time', 'description']) expect(first).toHaveProperty(k);
      expect(data).toHaveProperty('more', false);
      return data.data as { commit_id: string; description: string }[];
    });
    // the commit right after /papers/report.txt got its second content
    const v2Commit = history.find((c) => /report\.txt/.test(c.description) && /Modified|Updated/i.test(c.description));
    await call('listCommitDir', async () => {
      const { data } = await sa.listCommitDir(lib, history[0].commit_id, '/papers');
      const report = data.dirent_list.find((e: { name: string }) => e.name === 'report.txt');
      expect(report).toMatchObject({ type: 'file', size: 10, parent_dir: '/papers/' });
      expect(report).toHaveProperty('obj_id');
    });
    expect(v2Commit).toBeDefined();
    const revs = await call('getFileHistory', async () => {
      const { data } = await sa.getFileHistory(lib, '/papers/report.txt');
      expect(data.commits.length).toBe(2);
      expect(data.commits[0]).toMatchObject({ rev_file_size: 10, creator_name: server.adminEmail });
      expect(data.commits[0].user_info).toEqual({
        email: server.adminEmail,
        name: 'Ada Admin',
        contact_email: server.adminEmail,
      });
      return data.commits as { id: string; rev_file_size: number }[];
    });
    const oldCommit = revs[1].id; // where "report v1" appeared
    await call('listFileHistoryRecords', async () => {
      const { data } = await sa.listFileHistoryRecords(lib, '/papers/report.txt', 1, 25);
      expect(data).toMatchObject({ page: 1, total_count: 2 });
      expect(data.data[0]).toMatchObject({ size: 10, path: '/papers/report.txt', creator_email: server.adminEmail });
      expect(data.data[1]).toMatchObject({ size: 9, commit_id: oldCommit, creator_name: 'Ada Admin' });
    });
    await call('listOldFileHistoryRecords', async () => {
      const { data } = await sa.listOldFileHistoryRecords(lib, '/papers/report.txt', '');
      expect(data.data.map((x: { size: number }) => x.size)).toEqual([10, 9]);
      expect(data.data[1]).toMatchObject({ commit_id: oldCommit, creator_contact_email: server.adminEmail });
      expect(data.next_start_commit).toBe(false);
    });
    await call('getFileRevision', async () => {
      const { data: link } = await sa.getFileRevision(lib, oldCommit, '/papers/report.txt');
      expect(await (await fetch(link)).text()).toBe('report v1');
    });
    await call('revertFile', async () => {
      expect((await sa.revertFile(lib, '/papers/report.txt', oldCommit)).data).toEqual({ success: true });
      expect(await content(lib, '/papers/report.txt')).toBe('report v1');
    });
    await call('revertFolder', async () => {
      await sa.deleteDir(lib, '/bin');
      const before = (await raw('GET', `/api/v2.1/repos/${lib}/history/`)).json.data[1].commit_id as string;
      expect((await sa.revertFolder(lib, '/bin', before)).data).toEqual({ success: true });
      expect(await names(lib, '/bin')).toEqual(['gone.txt', 'sub']);
    });
    await call('revertRepo', async () => {
      expect(
        (await sa.revertRepo(lib2, (await raw('GET', `/api/v2.1/repos/${lib2}/history/`)).json.data.at(-1).commit_id))
          .data,
      ).toEqual({ success: true });
      expect(await names(lib2)).toEqual([]);
    });
  });
});

describe('search', () => {
  it('finds files by name across libraries and in one', async () => {
    await call('searchFiles', async () => {
      const { data } = await sa.searchFiles({ q: 'report', search_repo: lib });
      expect(data.results).toEqual([
        expect.objectContaining({ repo_id: lib, name: 'report.txt', fullpath: '/papers/report.txt', is_dir: false }),
      ]);
      expect(data).toHaveProperty('total', 1);
    });
    await call('searchFileInRepo', async () => {
      const { data } = await sa.searchFileInRepo(lib, 'REPORT');
      expect(data.data).toEqual([expect.objectContaining({ path: '/papers/report.txt', type: 'file', size: 9 })]);
    });
  });
});

describe('share links and upload links', () => {
  it('creates share links with password and expiry, lists, updates and deletes them', async () => {
    const in3days = Date.now() + 3 * 86400_000;
    const fileLink = await call('createShareLink', async () => {
      const { data } = await sa.createShareLink(lib, '/papers/report.txt', 'link-pw-123', iso(in3days));
      expect(data).toMatchObject({ repo_id: lib, path: '/papers/report.txt', is_dir: false, is_expired: false });
      expect(Date.parse(data.expire_date)).toBe(Math.floor(in3days / 1000) * 1000);
      expect(data.link).toBe(`${server.url}/f/${data.token}/`);
      // the link needs its password, and gives the file with it
      expect((await fetch(data.link, { redirect: 'manual' })).status).toBe(403);
      const ok = await fetch(`${data.link}?password=link-pw-123`, { redirect: 'manual' });
      expect(ok.status).toBe(302);
      expect(await (await fetch(ok.headers.get('location')!)).text()).toBe('report v1');
      return data as { token: string };
    });
    const dirLink = (await sa.createShareLink(lib, '/papers')).data as { token: string };
    await call('listShareLinks(path)', async () => {
      const { data } = await sa.listShareLinks({ repoID: lib, path: '/papers/report.txt' });
      expect(data).toEqual([
        expect.objectContaining({ token: fileLink.token, obj_name: 'report.txt', repo_name: 'js-lib renamed' }),
      ]);
    });
    await call('listShareLinks', async () => {
      const { data } = await sa.listShareLinks({});
      expect(data.map((l: { token: string }) => l.token).sort()).toEqual([fileLink.token, dirLink.token].sort());
      for (const k of ['view_cnt', 'ctime', 'expire_date', 'is_expired', 'permissions'])
        expect(data[0]).toHaveProperty(k);
    });
    await call('getShareLink', async () => {
      // (the web interface reads one link by GET share-links/{token}/; seafile-js has no method for it)
      const { data } = await sa.req.get(`${server.url}/api/v2.1/share-links/${dirLink.token}/`);
      expect(data).toMatchObject({ token: dirLink.token, is_dir: true, path: '/papers/' });
    });
    await call('updateShareLink', async () => {
      const past = Date.now() - 60_000;
      const { data } = await sa.updateShareLink(fileLink.token, '', iso(past));
      expect(data.is_expired).toBe(true);
      expect(Date.parse(data.expire_date)).toBe(Math.floor(past / 1000) * 1000);
      // expired: the link serves nothing, whatever the password
      expect(
        (await fetch(`${server.url}/f/${fileLink.token}/?password=link-pw-123`, { redirect: 'manual' })).status,
      ).toBe(404);
    });
    await call('listSharedDir', async () => {
      const { data } = await sa.listSharedDir(dirLink.token, '/', 48);
      expect(data.dirent_list.map((e: { file_name?: string }) => e.file_name).sort()).toEqual([
        'notes.md',
        'report.txt',
      ]);
      expect(data.dirent_list[0]).toMatchObject({ is_dir: false, file_path: expect.stringMatching(/^\/\w+\.\w+$/) });
    });
    await call('listRepoShareLinks', async () => {
      const { data } = await sa.listRepoShareLinks(lib);
      expect(data.map((l: { token: string }) => l.token).sort()).toEqual([fileLink.token, dirLink.token].sort());
    });
    await call('deleteRepoShareLink', async () => {
      expect((await sa.deleteRepoShareLink(lib, dirLink.token)).data).toEqual({ success: true });
      expect((await fetch(`${server.url}/d/${dirLink.token}/`)).status).toBe(404);
    });
    await call('deleteShareLink', async () => {
      expect((await sa.deleteShareLink(fileLink.token)).data).toEqual({ success: true });
      expect((await raw('GET', '/api/v2.1/share-links/')).json).toEqual([]);
    });
    await call('deleteShareLinks', async () => {
      const a = (await sa.createShareLink(lib, '/papers/notes.md')).data.token;
      const b = (await sa.createShareLink(lib, '/bin')).data.token;
      const { data } = await sa.deleteShareLinks([a, b]);
      expect(data).toEqual({ success: [{ token: a }, { token: b }], failed: [] });
      expect((await raw('GET', '/api/v2.1/share-links/')).json).toEqual([]);
    });
  });

  it('creates upload links with password and expiry, lists, updates, uses and deletes them', async () => {
    await sa.createDir(lib, '/inbox');
    const in2days = Date.now() + 2 * 86400_000;
    const guarded = await call('createUploadLink', async () => {
      const { data } = await sa.createUploadLink(lib, '/inbox', 'drop-pw-123', iso(in2days));
      expect(data).toMatchObject({ repo_id: lib, path: '/inbox/', obj_name: 'inbox', is_expired: false });
      expect(Date.parse(data.expire_date)).toBe(Math.floor(in2days / 1000) * 1000);
      expect(data.link).toBe(`${server.url}/u/d/${data.token}/`);
      const ask = `${server.url}/api/v2.1/upload-links/${data.token}/upload/`;
      expect((await fetch(ask)).status).toBe(403);
      expect((await fetch(`${ask}?password=drop-pw-123`)).status).toBe(200);
      return data as { token: string };
    });
    const open = (await sa.createUploadLink(lib, '/')).data as { token: string };
    await call('listUserUploadLinks', async () => {
      const { data } = await sa.listUserUploadLinks();
      expect(data.map((l: { token: string }) => l.token).sort()).toEqual([guarded.token, open.token].sort());
    });
    await call('getUploadLink', async () => {
      const { data } = await sa.getUploadLink(lib, '/inbox');
      expect(data).toEqual([expect.objectContaining({ token: guarded.token, path: '/inbox/' })]);
    });
    await call('updateUploadLink', async () => {
      const past = Date.now() - 60_000;
      const { data } = await sa.updateUploadLink(guarded.token, iso(past));
      expect(data.is_expired).toBe(true);
      const ask = `${server.url}/api/v2.1/upload-links/${guarded.token}/upload/?password=drop-pw-123`;
      expect((await fetch(ask)).status).toBe(404);
    });
    await call('sharedUploadLinkGetFileUploadUrl', async () => {
      const { data } = await sa.sharedUploadLinkGetFileUploadUrl(open.token);
      expect((await uploadTo(data.upload_link, '/', { 'dropped.txt': 'from a link' })).status).toBe(200);
      expect(await content(lib, '/dropped.txt')).toBe('from a link');
    });
    await call('listRepoUploadLinks', async () => {
      const { data } = await sa.listRepoUploadLinks(lib);
      expect(data.map((l: { token: string }) => l.token).sort()).toEqual([guarded.token, open.token].sort());
    });
    await call('deleteRepoUploadLink', async () => {
      expect((await sa.deleteRepoUploadLink(lib, open.token)).data).toEqual({ success: true });
      expect((await fetch(`${server.url}/api/v2.1/upload-links/${open.token}/upload/`)).status).toBe(404);
    });
    await call('deleteUploadLink', async () => {
      expect((await sa.deleteUploadLink(guarded.token)).data).toEqual({ success: true });
      expect((await raw('GET', '/api/v2.1/upload-links/')).json).toEqual([]);
    });
    await unsupported('sendUploadLink', 'sends mail: none here; 403 as seahub without mail', 403, () =>
      sa.sendUploadLink(open.token, BOB, 'hi'),
    );
    await unsupported('sendShareLink', 'sends mail: none here; 403 as seahub without mail', 403, () =>
      sa.sendShareLink('0123456789abcdef0123', BOB, 'hi'),
    );
  });
});

describe('groups', () => {
  it('creates a group, manages its members and admins, its libraries, and hands it over', async () => {
    group = await call('createGroup', async () => {
      const { data } = await sa.createGroup('js-team');
      expect(data).toMatchObject({ name: 'js-team', owner: server.adminEmail, admins: [server.adminEmail] });
      expect((await raw('GET', '/api2/groups/')).json.groups).toEqual([expect.objectContaining({ id: data.id })]);
      return data.id as number;
    });
    await call('listGroups', async () => {
      const { data } = await sa.listGroups();
      expect(data).toEqual([expect.objectContaining({ id: group, name: 'js-team', owner: server.adminEmail })]);
    });
    await call('getGroup', async () => {
      const { data } = await sa.getGroup(group);
      expect(data).toMatchObject({ id: group, name: 'js-team' });
      expect(data).toHaveProperty('created_at');
    });
    await call('renameGroup', async () => {
      expect((await sa.renameGroup(group, 'js-crew')).data.name).toBe('js-crew');
      expect((await raw('GET', `/api/v2.1/groups/${group}/`)).json.name).toBe('js-crew');
    });
    await call('addGroupMember', async () => {
      const { data, status } = await sa.addGroupMember(group, BOB);
      expect(status).toBe(201);
      expect(data).toMatchObject({ email: BOB, name: 'Bob B', is_admin: false, role: 'Member', group_id: group });
      expect((await rawBob('GET', '/api/v2.1/groups/')).json.map((g: { id: number }) => g.id)).toEqual([group]);
    });
    await call('listGroupMembers', async () => {
      const { data } = await sa.listGroupMembers(group);
      const byEmail = new Map(data.map((m: { email: string }) => [m.email, m]));
      expect(byEmail.get(server.adminEmail)).toMatchObject({ role: 'Owner', is_admin: true });
      expect(byEmail.get(BOB)).toMatchObject({ role: 'Member', is_admin: false, contact_email: BOB });
    });
    await call('setGroupAdmin', async () => {
      const { data } = await sa.setGroupAdmin(group, BOB, true);
      expect(data).toMatchObject({ email: BOB, is_admin: true, role: 'Admin' });
      expect((await raw('GET', `/api/v2.1/groups/${group}/`)).json.admins.sort()).toEqual(
        [server.adminEmail, BOB].sort(),
      );
    });
    await call('searchGroupMember', async () => {
      const { data } = await sa.searchGroupMember(group, 'bob');
      expect(data).toEqual([expect.objectContaining({ email: BOB, role: 'Admin' })]);
    });
    await call('addGroupMembers', async () => {
      const { data } = await sa.addGroupMembers(group, [CAROL, 'nobody@seafs.test']);
      expect(data.success).toEqual([expect.objectContaining({ email: CAROL, role: 'Member' })]);
      expect(data.failed).toEqual([expect.objectContaining({ email: 'nobody@seafs.test' })]);
      const members = (await raw('GET', `/api/v2.1/groups/${group}/members/`)).json as { email: string }[];
      expect(members.map((m) => m.email)).toContain(CAROL);
    });
    await call('deleteGroupMember', async () => {
      expect((await sa.deleteGroupMember(group, CAROL)).data).toEqual({ success: true });
      const members = (await raw('GET', `/api/v2.1/groups/${group}/members/`)).json as { email: string }[];
      expect(members.map((m) => m.email)).not.toContain(CAROL);
    });
    const groupLib = await call('createGroupRepo', async () => {
      const { data } = await sa.createGroupRepo(group, { repo_name: 'team lib', permission: 'rw' });
      expect(data).toMatchObject({ repo_name: 'team lib', permission: 'rw', encrypted: false });
      const bobs = (await rawBob('GET', '/api2/repos/', { query: { type: 'group' } })).json as { id: string }[];
      expect(bobs.map((x) => x.id)).toContain(data.repo_id);
      return data.repo_id as string;
    });
    await call('listGroupRepos', async () => {
      const { data } = await sb.listGroupRepos(group);
      expect(data).toEqual([expect.objectContaining({ repo_id: groupLib, repo_name: 'team lib', permission: 'rw' })]);
    });
    await call('shareableGroups', async () => {
      const { data } = await sa.shareableGroups();
      expect(data).toEqual([expect.objectContaining({ id: group, name: 'js-crew' })]);
    });
    await call('unshareRepoToGroup', async () => {
      expect((await sa.unshareRepoToGroup(groupLib, group)).data).toEqual({ success: true });
      expectNoAccess((await rawBob('GET', `/api2/repos/${groupLib}/`)).status);
    });
    await call('transferGroup', async () => {
      const { data } = await sa.transferGroup(group, BOB);
      expect(data.owner).toBe(BOB);
      expect((await rawBob('GET', `/api/v2.1/groups/${group}/`)).json.owner).toBe(BOB);
    });
    await call('quitGroup', async () => {
      expect((await sa.quitGroup(group, server.adminEmail)).data).toEqual({ success: true });
      expect((await raw('GET', '/api/v2.1/groups/')).json).toEqual([]);
    });
    await call('deleteGroup', async () => {
      const spare = (await sb.createGroup('spare')).data.id;
      expect((await sb.deleteGroup(spare)).data).toEqual({ success: true });
      expect((await rawBob('GET', `/api/v2.1/groups/${spare}/`)).status).toBe(404);
    });
  });
});

describe('shares', () => {
  it('shares a library with a user: lists, changes and ends it, both sides', async () => {
    await call('shareFolder(user)', async () => {
      const { data } = await sa.shareFolder(lib, '/', 'user', 'r', [BOB]);
      expect(data.success).toEqual([
        expect.objectContaining({
          share_type: 'user',
          permission: 'r',
          user_info: expect.objectContaining({ name: BOB }),
        }),
      ]);
      expect((await rawBob('GET', `/api2/repos/${lib}/`)).status).toBe(200);
    });
    await call('listSharedItems(user)', async () => {
      const { data } = await sa.listSharedItems(lib, '/', 'user');
      expect(data).toEqual([
        expect.objectContaining({
          permission: 'r',
          user_info: expect.objectContaining({ name: BOB, nickname: 'Bob B' }),
        }),
      ]);
    });
    await call('updateShareToUserItemPermission', async () => {
      await sa.updateShareToUserItemPermission(lib, '/', 'user', BOB, 'rw');
      expect((await rawBob('GET', `/api2/repos/${lib}/`)).json.permission).toBe('rw');
    });
    await call('getBeSharedRepos', async () => {
      const { data } = await sb.getBeSharedRepos();
      expect(data).toEqual([expect.objectContaining({ repo_id: lib, permission: 'rw', share_type: 'personal' })]);
    });
    await call('listRepos(shared)', async () => {
      const { data } = await sb.listRepos({ type: 'shared' });
      expect(data.repos).toEqual([
        expect.objectContaining({ repo_id: lib, type: 'shared', permission: 'rw', owner_email: server.adminEmail }),
      ]);
    });
    await call('getSharedRepos', async () => {
      const { data } = await sa.getSharedRepos();
      expect(data).toEqual([
        expect.objectContaining({ repo_id: lib, share_type: 'personal', user: BOB, permission: 'rw' }),
      ]);
    });
    await call('listSharedRepos', async () => {
      const { data } = await sa.listSharedRepos();
      expect(data).toEqual([
        expect.objectContaining({
          repo_id: lib,
          share_type: 'personal',
          user_email: BOB,
          user_name: 'Bob B',
          share_permission: 'rw',
        }),
      ]);
    });
    await call('updateRepoSharePerm', async () => {
      expect((await sa.updateRepoSharePerm(lib, { share_type: 'personal', user: BOB, permission: 'r' })).data).toEqual({
        success: true,
      });
      expect((await rawBob('GET', `/api2/repos/${lib}/`)).json.permission).toBe('r');
    });
    await call('unshareRepo', async () => {
      expect((await sa.unshareRepo(lib, { share_type: 'personal', user: BOB })).data).toEqual({ success: true });
      expectNoAccess((await rawBob('GET', `/api2/repos/${lib}/`)).status);
    });
    await sa.shareFolder(lib, '/', 'user', 'r', [BOB]);
    await call('leaveShareRepo', async () => {
      await sb.leaveShareRepo(lib, { share_type: 'personal', from: server.adminEmail });
      expectNoAccess((await rawBob('GET', `/api2/repos/${lib}/`)).status);
      expect((await raw('GET', '/api2/shared-repos/')).json).toEqual([]);
    });
    await sa.shareFolder(lib, '/', 'user', 'r', [BOB]);
    await call('deleteShareToUserItem', async () => {
      await sa.deleteShareToUserItem(lib, '/', 'user', BOB);
      expect(
        (await raw('GET', `/api2/repos/${lib}/dir/shared_items/`, { query: { p: '/', share_type: 'user' } })).json,
      ).toEqual([]);
    });
  });

  it('shares a library with a group: lists, changes and ends it', async () => {
    const g = (await sa.createGroup('readers')).data.id as number;
    await sa.addGroupMember(g, CAROL);
    const carol = apiAs(server.url, await getToken(server.url, CAROL, CAROL_PW));
    await call('shareFolder(group)', async () => {
      const { data } = await sa.shareFolder(lib, '/', 'group', 'r', [g]);
      expect(data.success).toEqual([
        expect.objectContaining({ share_type: 'group', permission: 'r', group_info: { id: g, name: 'readers' } }),
      ]);
      expect((await carol('GET', `/api2/repos/${lib}/`)).json.permission).toBe('r');
    });
    await call('listSharedItems(group)', async () => {
      const { data } = await sa.listSharedItems(lib, '/', 'group');
      expect(data).toEqual([expect.objectContaining({ permission: 'r', group_info: { id: g, name: 'readers' } })]);
    });
    await call('updateShareToGroupItemPermission', async () => {
      await sa.updateShareToGroupItemPermission(lib, '/', 'group', g, 'rw');
      expect((await carol('GET', `/api2/repos/${lib}/`)).json.permission).toBe('rw');
    });
    await call('deleteShareToGroupItem', async () => {
      await sa.deleteShareToGroupItem(lib, '/', 'group', g);
      expectNoAccess((await carol('GET', `/api2/repos/${lib}/`)).status);
    });
  });

  it('shares a sub-folder: listed on the folder and among shared folders', async () => {
    await call('shareFolder(sub-folder)', async () => {
      const { data } = await sa.shareFolder(lib, '/papers', 'user', 'rw', [BOB]);
      expect(data).toEqual({
        failed: [],
        success: [expect.objectContaining({ share_type: 'user', permission: 'rw' })],
      });
      // the library itself is not shared by it
      const items = (
        await raw('GET', `/api2/repos/${lib}/dir/shared_items/`, { query: { p: '/', share_type: 'user' } })
      ).json;
      expect(items).toEqual([]);
    });
    await call('listSharedItems(sub-folder)', async () => {
      const { data } = await sa.listSharedItems(lib, '/papers', 'user');
      expect(data).toEqual([
        expect.objectContaining({ permission: 'rw', user_info: expect.objectContaining({ name: BOB }) }),
      ]);
    });
    await call('listSharedFolders', async () => {
      const { data } = await sa.listSharedFolders();
      expect(data).toEqual([
        expect.objectContaining({
          repo_id: lib,
          path: '/papers',
          folder_name: 'papers',
          share_type: 'personal',
          user_email: BOB,
          share_permission: 'rw',
        }),
      ]);
    });
    await call('updateFolderSharePerm', async () => {
      await sa.updateFolderSharePerm(lib, { permission: 'r' }, { p: '/papers', share_type: 'user', username: BOB });
      expect((await raw('GET', '/api/v2.1/shared-folders/')).json[0].share_permission).toBe('r');
    });
    await call('unshareFolder', async () => {
      await sa.unshareFolder(lib, { p: '/papers', share_type: 'user', username: BOB });
      expect((await raw('GET', '/api/v2.1/shared-folders/')).json).toEqual([]);
    });
  });
});

describe('encrypted libraries', () => {
  it('creates one, unlocks it, changes its password', async () => {
    const vault = await call('createMineRepo(encrypted)', async () => {
      const { data } = await sa.createMineRepo({ name: 'vault', passwd: ENC_PW });
      expect(data).toMatchObject({ enc_version: 2 });
      expect(!!data.encrypted).toBe(true);
      expect(data.magic).toMatch(/^[0-9a-f]{64}$/);
      return data.repo_id as string;
    });
    await call('getRepoInfo(encrypted)', async () => {
      expect((await sa.getRepoInfo(vault)).data).toMatchObject({ encrypted: true, lib_need_decrypt: true });
    });
    await call('setRepoDecryptPassword', async () => {
      expect((await sa.setRepoDecryptPassword(vault, ENC_PW)).data).toEqual({ success: true });
      expect((await raw('GET', `/api/v2.1/repos/${vault}/`)).json.lib_need_decrypt).toBe(false);
      await upload(vault, '/', { 'secret.txt': 'top secret' });
      expect(await content(vault, '/secret.txt')).toBe('top secret');
    });
    await call('changeEncryptedRepoPassword', async () => {
      expect((await sa.changeEncryptedRepoPassword(vault, ENC_PW, 'new vault pw')).data).toEqual({ success: true });
      expect((await raw('POST', `/api2/repos/${vault}/`, { form: { password: ENC_PW } })).status).toBe(400);
      expect((await raw('POST', `/api2/repos/${vault}/`, { form: { password: 'new vault pw' } })).status).toBe(200);
      await expect(sa.changeEncryptedRepoPassword(vault, 'wrong pw', 'x')).rejects.toMatchObject({
        response: { status: 403, data: { error_msg: 'Wrong old password' } },
      });
    });
    await unsupported(
      'resetAndSendEncryptedRepoPassword',
      'mails a new password: 403 "Feature disabled." as seahub by default',
      403,
      () => sa.resetAndSendEncryptedRepoPassword(vault),
    );
  });
});

describe('the tally', () => {
  it('at least 100 calls pass, and none fails', () => {
    const failed = rows.filter((r) => r.result === 'FAIL');
    expect(failed).toEqual([]);
    expect(rows.filter((r) => r.result === 'pass').length).toBeGreaterThanOrEqual(100);
  });
});
