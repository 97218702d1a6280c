// `seafs serve`'s notification server, spoken to as the real one's clients
// do: the ping; tokens from seahub's endpoint (12.0+) and from the
// fileserver's jwt-token with a sync token; a websocket subscription that
// gets repo-update for a commit (with the library's new head) and
// file-lock-changed for a lock; jwt-expired for a token of another library or
// a forged one; no events for a library not subscribed; and 404s when the
// server runs with --no-notifications.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newLibrary, startServerWithUsers, uploadTo, type TestServer } from '../helpers/server.js';

type Call = Awaited<ReturnType<typeof startServerWithUsers>>['admin'];
interface Msg {
  type: string;
  content: Record<string, string>;
}

/** a websocket to the server's /notification, with the messages it got */
async function socket(url: string): Promise<{ ws: WebSocket; got: Msg[]; next: (type: string) => Promise<Msg> }> {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/notification');
  const got: Msg[] = [];
  const waiters: { type: string; resolve: (m: Msg) => void }[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString()) as Msg;
    got.push(m);
    for (const w of waiters.splice(0)) {
      if (w.type === m.type) w.resolve(m);
      else waiters.push(w);
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = (type: string) =>
    new Promise<Msg>((resolve, reject) => {
      const seen = got.find((m) => m.type === type);
      if (seen) {
        got.splice(got.indexOf(seen), 1);
        return resolve(seen);
      }
      const t = setTimeout(() => reject(new Error(`no ${type} within 10 s; got ${JSON.stringify(got)}`)), 10_000);
      waiters.push({
        type,
        resolve: (m) => {
          clearTimeout(t);
          got.splice(got.indexOf(m), 1);
          resolve(m);
        },
      });
    });
  return { ws, got, next };
}

const subscribe = (ws: WebSocket, repos: [string, string][]) =>
  ws.send(
    JSON.stringify({ type: 'subscribe', content: { repos: repos.map(([id, jwt_token]) => ({ id, jwt_token })) } }),
  );

describe('seafs serve: the notification server', () => {
  let server: TestServer;
  let admin: Call;
  let other: Call;
  let repo: string;
  let quiet: string;
  beforeAll(async () => {
    ({
      server,
      admin,
      users: [other],
    } = await startServerWithUsers([{ email: 'o@seafs.test', password: 'o-pw' }]));
    repo = await newLibrary(admin, 'Watched');
    quiet = await newLibrary(admin, 'Quiet');
  });
  afterAll(() => server?.stop());

  it('answers its ping, and hands tokens only for libraries the user reaches', async () => {
    const ping = await fetch(`${server.url}/notification/ping/`);
    expect(ping.status).toBe(200);
    expect(await ping.json()).toEqual({ ret: 'pong' });
    const mine = await admin('GET', `/api/v2.1/repos/${repo}/repo-notification-jwt-token/`);
    expect(mine.status).toBe(200);
    expect((mine.json as { token: string }).token.split('.')).toHaveLength(3);
    expect((await other('GET', `/api/v2.1/repos/${repo}/repo-notification-jwt-token/`)).status).toBe(404);
    // the fileserver's way: the sync token download-info gives
    const info = (await admin('GET', `/api2/repos/${repo}/download-info/`)).json as { token: string };
    const fs = await fetch(`${server.url}/seafhttp/repo/${repo}/jwt-token`, {
      headers: { 'Seafile-Repo-Token': info.token },
    });
    expect(fs.status).toBe(200);
    expect(((await fs.json()) as { jwt_token: string }).jwt_token.split('.')).toHaveLength(3);
    const forged = await fetch(`${server.url}/seafhttp/repo/${quiet}/jwt-token`, {
      headers: { 'Seafile-Repo-Token': info.token },
    });
    expect(forged.status).toBe(403);
  });

  it('tells subscribers of commits and locks, and refuses tokens of another library or forged ones', async () => {
    const token = async (id: string) =>
      ((await admin('GET', `/api/v2.1/repos/${id}/repo-notification-jwt-token/`)).json as { token: string }).token;
    const s = await socket(server.url);
    try {
      const t = await token(repo);
      const [h, b] = t.split('.');
      subscribe(s.ws, [
        [repo, t],
        [quiet, t], // a token of another library
        [quiet, `${h}.${b}.${Buffer.alloc(32).toString('base64url')}`], // forged
      ]);
      expect((await s.next('jwt-expired')).content).toEqual({ repo_id: quiet });
      expect((await s.next('jwt-expired')).content).toEqual({ repo_id: quiet });

      const link = (await admin('GET', `/api2/repos/${repo}/upload-link/`, { query: { p: '/' } })).json as string;
      expect((await uploadTo(link, '/', { 'a.txt': 'a' })).status).toBe(200);
      const update = await s.next('repo-update');
      const head = ((await admin('GET', `/api2/repos/${repo}/`)).json as { head_commit_id: string }).head_commit_id;
      expect(update.content).toEqual({ repo_id: repo, commit_id: head });

      expect(
        (await admin('PUT', `/api2/repos/${repo}/file/`, { form: { p: '/a.txt', operation: 'lock' } })).status,
      ).toBe(200);
      expect((await s.next('file-lock-changed')).content).toEqual({
        repo_id: repo,
        path: '/a.txt',
        change_event: 'locked',
        lock_user: 'admin@seafs.test',
      });
      // a commit to a library not subscribed tells nothing
      const quietLink = (await admin('GET', `/api2/repos/${quiet}/upload-link/`, { query: { p: '/' } })).json as string;
      expect((await uploadTo(quietLink, '/', { 'q.txt': 'q' })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      expect(s.got.filter((m) => m.content.repo_id === quiet)).toEqual([]);
    } finally {
      s.ws.terminate();
    }
  });

  it('--no-notifications: no ping, no tokens, no websocket', async () => {
    const off = await startServerWithUsers([], { extraArgs: ['--no-notifications'] });
    try {
      const id = await newLibrary(off.admin, 'L');
      expect((await fetch(`${off.server.url}/notification/ping/`)).status).toBe(404);
      expect((await off.admin('GET', `/api/v2.1/repos/${id}/repo-notification-jwt-token/`)).status).toBe(404);
      const ws = new WebSocket(off.server.url.replace(/^http/, 'ws') + '/notification');
      const refused = await new Promise<string>((resolve) => {
        ws.once('open', () => resolve('open'));
        ws.once('error', (e) => resolve(e.message));
      });
      expect(refused).toMatch(/404/);
    } finally {
      await off.server.stop();
    }
  });
});
