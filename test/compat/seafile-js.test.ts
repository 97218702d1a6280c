// Seafile's own JavaScript client, the npm package `seafile-js` (what seahub's
// web interface calls the server with), against `seafs serve`: log in, then
// libraries, folders, files, uploads, copy/move (sync and async), trash,
// history, revisions, starred items, search, share and upload links (with
// password and expiry), locks, groups, shares and encrypted libraries. Each
// call's answer is checked for the fields the web interface reads, and its
// effect through the server's API (raw requests, not seafile-js). A call this
// server does not support is listed in UNSUPPORTED and asserted to fail; the
// table of calls is printed at the end. Run `npm run build` first.
import { SeafileAPI } from 'seafile-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminToken,
  apiAs,
  createUser,
  getToken,
  startTestServer,
  uploadTo,
  type TestServer,
} from '../helpers/server.js';

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
 * A call this server does not support, with why: it must fail with `status`
 * (the test fails the day it starts working, so the list stays true).
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

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');

let lib = ''; // the main library
let lib2 = ''; // a second one, for copies and moves between libraries
let group = 0;

beforeAll(async () => {
  server = await startTestServer();
  raw = apiAs(server.url, await adminToken(server));
  await createUser(server, BOB, BOB_PW, { name: 'Bob B' });
  await createUser(server, CAROL, CAROL_PW, { name: 'Carol C' });
  rawBob = apiAs(server.url, await getToken(server.url, BOB, BOB_PW));
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
      expect(data).toMatchObject({ email: server.adminEmail, contact_email: server.adminEmail, login_id: '' });
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
      expect(data).toMatchObject({ repo_name: 'js-lib', encrypted: false, permission: 'rw' });
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
      expect(data).toMatchObject({ repo_id: lib, name: 'docs', file_count: 2, dir_count: 0, size: 16 });
    });
    await call('renameDir', async () => {
      await sa.renameDir(lib, '/docs', 'papers');
      expect(await names(lib)).toEqual(['old', 'papers']);
    });
    await call('deleteDir', async () => {
      expect((await sa.deleteDir(lib, '/old')).data).toEqual({ success: true });
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
      expect(data).toMatchObject({ type: 'file', repo_id: lib, parent_dir: '/papers/', obj_name: 'draft.md', size: 0 });
      expect(await names(lib, '/papers')).toContain('draft.md');
    });
    await call('getFileServerUploadLink', async () => {
      const { data: link } = await sa.getFileServerUploadLink(lib, '/papers');
      expect(link).toMatch(/\/seafhttp\/upload-api\//);
      // the web interface uploads to it with ?ret-json=1
      expect((await uploadTo(link, '/papers', { 'upload.bin': 'uploaded by js' })).status).toBe(200);
      expect(await content(lib, '/papers/upload.bin')).toBe('uploaded by js');
    });
    await call('getUpdateLink', async () => {
      const { data: link } = await sa.getUpdateLink(lib, '/papers');
      expect(link).toMatch(/\/seafhttp\/update-api\//);
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
      expect(data).toMatchObject({ obj_name: 'final.md', parent_dir: '/papers/' });
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
      expect((await sa.deleteFile(lib, '/papers/final.md')).data).toEqual({ success: true });
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
      expect(data).toMatchObject({ done: true, successful: true, failed: false, canceled: false, total: 1 });
    });
    const moved = await call('moveDir(async)', async () => {
      const { data } = await sa.moveDir(lib, lib2, '/', '/dst', ['upload.bin']);
      expect(await names(lib2)).toContain('upload.bin');
      expect(await names(lib, '/dst')).not.toContain('upload.bin');
      return data.task_id as string;
    });
    expect((await sa.queryAsyncOperationProgress(moved)).data).toMatchObject({ done: true, successful: true });
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
      const zip = Buffer.from(await res.arrayBuffer());
      expect(zip.subarray(0, 4).toString('hex')).toBe('504b0304');
      expect(zip.includes('papers/report.txt')).toBe(true);
      expect(zip.includes('report v2!')).toBe(true);
      // a zip token is spent by its download
      expect((await fetch(`${server.url}/seafhttp/zip/${token}`)).status).toBe(400);
    });
    await call('cancelZipTask', async () => {
      const multi = (await sa.zipDownload(lib, '/papers', ['report.txt', 'notes.md'])).data.zip_token;
      expect((await sa.cancelZipTask(multi)).data).toEqual({ success: true });
      expect((await fetch(`${server.url}/seafhttp/zip/${multi}`)).status).toBe(400);
    });
  });
});

describe('trash, history and revisions', () => {
  let firstCommit = '';

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
    firstCommit = history[history.length - 1].commit_id;
    // the commit right after /papers/report.txt got its second content
    const v2Commit = history.find((c) => /report\.txt/.test(c.description) && /Modified|Updated/i.test(c.description));
    await call('listCommitDir', async () => {
      const { data } = await sa.listCommitDir(lib, history[0].commit_id, '/papers');
      const report = data.dirent_list.find((e: { name: string }) => e.name === 'report.txt');
      expect(report).toMatchObject({ type: 'file', size: 10, parent_dir: '/papers' });
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
