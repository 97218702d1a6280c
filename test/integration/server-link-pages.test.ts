// The web pages of share and upload links in `seafs serve` (/d/<token>/ and
// /u/d/<token>/), driven with the requests a browser sends: pages fetched,
// their links followed, their forms posted, cookies sent back.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminToken,
  apiAs,
  getToken,
  uploadTo,
  startServerWithUsers,
  BOB,
  type TestServer,
} from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;

// `<script>alert(1)</script>` cannot be a name (names hold no '/'): markup that runs without a closing tag instead
const NASTY = `<img src=x onerror=alert(1)><script>alert(1)&"'.txt`;
const NASTY_ESCAPED = '&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(1)&amp;&quot;&#39;.txt';
const SUB = `<b>&"'sub`;
const SUB_ESCAPED = '&lt;b&gt;&amp;&quot;&#39;sub';

beforeAll(async () => {
  ({
    server,
    admin,
    users: [bob],
  } = await startServerWithUsers([BOB], { extraArgs: ['--verbose'] }));
});

afterAll(async () => {
  await server?.stop();
});

interface Page {
  status: number;
  headers: Headers;
  text: string;
}

/** A request as a browser makes it (no redirect followed, so each answer can be checked). */
async function browse(
  pathOrUrl: string,
  opts: { cookie?: string; form?: Record<string, string>; body?: FormData } = {},
): Promise<Page> {
  const headers: Record<string, string> = opts.cookie ? { Cookie: opts.cookie } : {};
  let body: string | FormData | undefined = opts.body;
  if (opts.form) {
    body = new URLSearchParams(opts.form).toString();
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  const url = pathOrUrl.startsWith('http') ? pathOrUrl : server.url + pathOrUrl;
  const res = await fetch(url, { method: body ? 'POST' : 'GET', headers, body, redirect: 'manual' });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const unescape = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);

/** The links of a page, as the browser reads them (attribute values unescaped), by their text. */
function links(page: Page): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of page.text.matchAll(/<a href="([^"]*)">([^<]*)<\/a>/g)) out.set(unescape(m[2]), unescape(m[1]));
  return out;
}

/** The cookie a browser would send back after this answer (name=value), or undefined. */
const cookieOf = (page: Page) => page.headers.get('set-cookie')?.split(';')[0];

function expectHtmlPage(page: Page): void {
  expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(page.headers.get('x-content-type-options')).toBe('nosniff');
  const csp = page.headers.get('content-security-policy') ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(csp).not.toContain('script-src');
  expect(page.text).not.toMatch(/<script/i);
}

/** Follows a file link of a page to the file's bytes (the 302 to a download, then the download). */
async function fileThrough(href: string, cookie?: string): Promise<string> {
  const res = await browse(href, { cookie });
  expect(res.status).toBe(302);
  return (await fetch(res.headers.get('location')!)).text();
}

/** A library with /pub/{NASTY, SUB/deep.txt} and /top.txt, and a folder link to /pub. */
async function sharedFolder(name: string, password?: string): Promise<{ repo: string; token: string; page: string }> {
  const repo = (await admin('POST', '/api2/repos/', { form: { name } })).json.repo_id as string;
  await admin('POST', `/api2/repos/${repo}/dir/`, {
    query: { p: `/pub/${SUB}` },
    form: { operation: 'mkdir', create_parents: 'true' },
  });
  const up = async (dir: string, files: Record<string, string>) => {
    const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: dir } })).json as string;
    expect((await uploadTo(link, dir, files)).status).toBe(200);
  };
  await up('/', { 'top.txt': 'above the link' });
  await up('/pub', { 'plain.txt': 'the nasty file' });
  await up(`/pub/${SUB}`, { 'deep.txt': 'deep down' });
  const renamed = await admin('POST', `/api2/repos/${repo}/file/`, {
    query: { p: '/pub/plain.txt' },
    form: { operation: 'rename', newname: NASTY },
  });
  expect(renamed.status).toBeLessThan(400);
  const link = await admin('POST', '/api/v2.1/share-links/', {
    json: { repo_id: repo, path: '/pub', ...(password ? { password } : {}) },
  });
  expect(link.status).toBe(200);
  return { repo, token: link.json.token, page: new URL(link.json.link).pathname };
}

describe('the folder page of a share link', () => {
  it('lists the folder as HTML with every name escaped, under a strict CSP', async () => {
    const { page } = await sharedFolder('folder-page');
    const res = await browse(page);
    expect(res.status).toBe(200);
    expectHtmlPage(res);
    expect(res.text).toContain(NASTY_ESCAPED);
    expect(res.text).not.toContain(NASTY);
    expect([...links(res).keys()]).toEqual([`${SUB}/`, NASTY]);
    expect(res.text).not.toContain('top.txt');
  });

  it('its links work: a file link gives the bytes, a folder link lists the folder, whose parent link leads back', async () => {
    const { page } = await sharedFolder('folder-links');
    const top = links(await browse(page));
    expect(await fileThrough(top.get(NASTY)!)).toBe('the nasty file');
    const sub = await browse(top.get(`${SUB}/`)!);
    expect(sub.status).toBe(200);
    expect(sub.text).toContain(`<h1>pub/${SUB_ESCAPED}</h1>`);
    const subLinks = links(sub);
    expect([...subLinks.keys()]).toEqual(['Parent folder', 'deep.txt']);
    expect(await fileThrough(subLinks.get('deep.txt')!)).toBe('deep down');
    const back = await browse(subLinks.get('Parent folder')!);
    expect([...links(back).keys()]).toEqual([`${SUB}/`, NASTY]);
    // nothing above the link's folder, and no folder that is not there
    expect((await browse(`${page}?p=/..`)).status).toBe(400);
    const missing = await browse(`${page}?p=/nope/`);
    expect(missing.status).toBe(404);
    expectHtmlPage(missing);
  });

  it('with a password: a form first, 403 and the form again after a wrong one, the listing after the right one', async () => {
    const { token, page } = await sharedFolder('folder-pw', 'pub-pw-123');
    const first = await browse(page);
    expect(first.status).toBe(200);
    expectHtmlPage(first);
    expect(first.text).toMatch(/<form method="post"[^>]*><label>Password <input type="password" name="password"/);
    expect(first.text).not.toContain('deep.txt');
    expect(first.text).not.toContain(SUB_ESCAPED);

    const wrong = await browse(page, { form: { password: 'guess-1234' } });
    expect(wrong.status).toBe(403);
    expectHtmlPage(wrong);
    expect(wrong.text).toContain('The password is not correct.');
    expect(wrong.text).toContain('type="password"');
    expect(wrong.text).not.toContain(SUB_ESCAPED);
    expect(cookieOf(wrong)).toBeUndefined();

    const right = await browse(page, { form: { password: 'pub-pw-123' } });
    expect(right.status).toBe(200);
    expectHtmlPage(right);
    expect([...links(right).keys()]).toEqual([`${SUB}/`, NASTY]);
    const setCookie = right.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/; Path=\/d\/[0-9a-f]+; Max-Age=\d+; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain('pub-pw-123');
    const cookie = cookieOf(right)!;

    // the page's links work with the cookie the browser got, and not without it
    const fileHref = links(right).get(NASTY)!;
    expect(await fileThrough(fileHref, cookie)).toBe('the nasty file');
    expect((await browse(fileHref)).status).toBe(403);
    const sub = await browse(links(right).get(`${SUB}/`)!, { cookie });
    expect([...links(sub).keys()]).toEqual(['Parent folder', 'deep.txt']);
    expect((await browse(links(right).get(`${SUB}/`)!)).text).not.toContain('deep.txt');
    // a cookie altered by hand, or of another link, proves nothing
    expect((await browse(page, { cookie: cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) })).text).not.toContain(
      SUB_ESCAPED,
    );
    const other = await sharedFolder('folder-pw-other', 'pub-pw-123');
    expect((await browse(other.page, { cookie })).text).not.toContain(SUB_ESCAPED);

    // the password is in no URL the server logged, nor the token
    await new Promise((r) => setTimeout(r, 300));
    expect(server.log()).toContain('POST /d/<token>/');
    expect(server.log()).not.toContain('pub-pw-123');
    expect(server.log()).not.toContain(token);
  });

  it('a link that was deleted, expired or whose creator lost access answers a 404 page', async () => {
    const gone = await sharedFolder('folder-gone');
    expect((await browse(gone.page)).status).toBe(200);
    expect((await admin('DELETE', `/api/v2.1/share-links/${gone.token}/`)).status).toBe(200);
    const deleted = await browse(gone.page);
    expect(deleted.status).toBe(404);
    expectHtmlPage(deleted);
    expect(deleted.text).toContain('This link does not exist or has expired.');
    expect((await browse('/d/0123456789abcdef0123/')).status).toBe(404);

    // bob's link to a library shared with him, until the share is revoked
    const shared = await sharedFolder('folder-revoked');
    await admin('PUT', `/api2/shared-repos/${shared.repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'r' },
    });
    const bobs = await bob('POST', '/api/v2.1/share-links/', { json: { repo_id: shared.repo, path: '/pub' } });
    expect(bobs.status).toBe(200);
    const bobsPage = new URL(bobs.json.link).pathname;
    expect([...links(await browse(bobsPage)).keys()]).toEqual([`${SUB}/`, NASTY]);
    await admin('DELETE', `/api2/shared-repos/${shared.repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test' },
    });
    const revoked = await browse(bobsPage);
    expect(revoked.status).toBe(404);
    expectHtmlPage(revoked);

    // an expiry in the past, written into db.json while the server is down
    const expiring = await sharedFolder('folder-expired');
    await server.halt();
    const dbPath = path.join(server.dataDir, 'db.json');
    const db = JSON.parse(readFileSync(dbPath, 'utf8'));
    const rec = db.shareLinks.find((l: { token: string }) => l.token === expiring.token);
    rec.expire = Math.floor(Date.now() / 1000) - 60;
    writeFileSync(dbPath, JSON.stringify(db));
    await server.restart();
    admin = apiAs(server.url, await adminToken(server));
    bob = apiAs(server.url, await getToken(server.url, 'bob@seafs.test', 'bob-pw'));
    const expired = await browse(expiring.page);
    expect(expired.status).toBe(404);
    expectHtmlPage(expired);
    expect(expired.text).toContain('This link does not exist or has expired.');
  });
});

describe('the upload page of an upload link', () => {
  async function uploadLink(name: string, password?: string): Promise<{ repo: string; token: string; page: string }> {
    const repo = (await admin('POST', '/api2/repos/', { form: { name } })).json.repo_id as string;
    await admin('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/inbox' }, form: { operation: 'mkdir' } });
    const link = await admin('POST', '/api/v2.1/upload-links/', {
      json: { repo_id: repo, path: '/inbox', ...(password ? { password } : {}) },
    });
    expect(link.status).toBe(200);
    return { repo, token: link.json.token, page: new URL(link.json.link).pathname };
  }

  /** The upload form of a page: its action and the name of its file input. */
  function uploadForm(page: Page): { action: string; field: string } {
    const form =
      /<form method="post" enctype="multipart\/form-data" action="([^"]*)"><input type="file" name="([^"]*)"/.exec(
        page.text,
      );
    expect(form).not.toBeNull();
    return { action: unescape(form![1]), field: form![2] };
  }

  async function readBack(repo: string, p: string): Promise<string> {
    const dl = await admin('GET', `/api2/repos/${repo}/file/`, { query: { p } });
    expect(dl.status).toBe(200);
    return (await fetch(dl.json as string)).text();
  }

  it('shows a file form that stores the files a browser posts in the link folder', async () => {
    const { repo, page } = await uploadLink('drop-page');
    const res = await browse(page);
    expect(res.status).toBe(200);
    expectHtmlPage(res);
    const { action, field } = uploadForm(res);
    const fd = new FormData();
    fd.append(field, new Blob(['first dropped file']), 'one.txt');
    fd.append(field, new Blob([Buffer.alloc(70_000, 7)]), NASTY.replace('"', ''));
    const sent = await browse(action, { body: fd });
    expect(sent.status).toBe(200);
    expectHtmlPage(sent);
    expect(sent.text).toContain('Uploaded: one.txt, ' + NASTY_ESCAPED.replace('&quot;', ''));
    expect(sent.text).not.toContain('<script>');
    expect(await readBack(repo, '/inbox/one.txt')).toBe('first dropped file');
    expect(Buffer.from(await readBack(repo, '/inbox/' + NASTY.replace('"', '')), 'latin1')).toHaveLength(70_000);
    // the same name again is kept beside the first, as the upload API does
    const again = new FormData();
    again.append(field, new Blob(['second']), 'one.txt');
    expect((await browse(action, { body: again })).text).toContain('Uploaded: one (1).txt');
    expect(await readBack(repo, '/inbox/one (1).txt')).toBe('second');
  });

  it('with a password: the form only after the right one, and an upload without it stores nothing', async () => {
    const { repo, page } = await uploadLink('drop-pw', 'drop-pw-123');
    const first = await browse(page);
    expect(first.status).toBe(200);
    expect(first.text).toContain('type="password"');
    expect(first.text).not.toContain('type="file"');
    const wrong = await browse(page, { form: { password: 'wrong-pw-1' } });
    expect(wrong.status).toBe(403);
    expectHtmlPage(wrong);
    expect(wrong.text).toContain('The password is not correct.');

    const blocked = new FormData();
    blocked.append('file', new Blob(['sneaked in']), 'sneak.txt');
    const refused = await browse(page, { body: blocked });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('type="password"');

    const right = await browse(page, { form: { password: 'drop-pw-123' } });
    expect(right.status).toBe(200);
    expect(right.headers.get('set-cookie')).toMatch(/; Path=\/u\/d\/[0-9a-f]+;/);
    const cookie = cookieOf(right)!;
    const { action, field } = uploadForm(right);
    const fd = new FormData();
    fd.append(field, new Blob(['with the password']), 'allowed.txt');
    const sent = await browse(action, { body: fd, cookie });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('Uploaded: allowed.txt');
    expect(await readBack(repo, '/inbox/allowed.txt')).toBe('with the password');
    const names = (
      (await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/inbox' } })).json as { name: string }[]
    ).map((e) => e.name);
    expect(names).toEqual(['allowed.txt']);
  });

  it('a deleted upload link, or one whose creator can no longer write, answers a 404 page', async () => {
    const { token, page } = await uploadLink('drop-gone');
    expect((await browse(page)).status).toBe(200);
    expect((await admin('DELETE', `/api/v2.1/upload-links/${token}/`)).status).toBe(200);
    const deleted = await browse(page);
    expect(deleted.status).toBe(404);
    expectHtmlPage(deleted);

    const repo = (await admin('POST', '/api2/repos/', { form: { name: 'drop-ro' } })).json.repo_id as string;
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'rw' },
    });
    const bobs = await bob('POST', '/api/v2.1/upload-links/', { json: { repo_id: repo, path: '/' } });
    expect(bobs.status).toBe(200);
    const bobsPage = new URL(bobs.json.link).pathname;
    expect((await browse(bobsPage)).text).toContain('type="file"');
    await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'personal', user: 'bob@seafs.test', permission: 'r' },
    });
    const readOnly = await browse(bobsPage);
    expect(readOnly.status).toBe(404);
    expectHtmlPage(readOnly);
    const fd = new FormData();
    fd.append('file', new Blob(['late']), 'late.txt');
    expect((await browse(bobsPage, { body: fd })).status).toBe(404);
    expect((await admin('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).json).toEqual([]);
  });

  it('an encrypted library gets no upload link, unlocked or not, by either API form', async () => {
    const repo = (await admin('POST', '/api2/repos/', { form: { name: 'drop-enc', passwd: 'enc-pw-1' } })).json
      .repo_id as string;
    expect((await admin('POST', `/api2/repos/${repo}/`, { form: { password: 'enc-pw-1' } })).status).toBe(200);
    const v21 = await admin('POST', '/api/v2.1/upload-links/', { json: { repo_id: repo, path: '/' } });
    expect(v21.status).toBe(403);
    const v2 = await admin('PUT', `/api2/repos/${repo}/file/shared-link/`, { form: { p: '/', share_type: 'upload' } });
    expect(v2.status).toBe(403);
    const mine = (await admin('GET', '/api/v2.1/upload-links/')).json as { repo_id: string }[];
    expect(mine.filter((l) => l.repo_id === repo)).toEqual([]);
  });
});
