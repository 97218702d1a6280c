// The client's change feed (src/client/notification-feed.ts) against `seafs
// serve`'s notification server, in this process so that its tokens can be
// made to run out within a second: a commit is told; an expired token is
// renewed and changes keep coming (one resubscription said); the server gone
// turns the mode to polling, and back it subscribes again by itself; a server
// without a notification server stays in polling.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import type { ChangeMode, ServerChange } from '../../src/client/types.js';
import { pollUntil } from '../helpers/poll.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/index.js';

const ADMIN = { adminEmail: 'admin@feed.test', adminPassword: 'feed-admin-pw' };
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function serve(opts: Partial<ServerOptions> = {}, dataDir?: string): Promise<RunningServer> {
  const dir = dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'seafs-feed-'));
  if (!dataDir) cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const s = await startServer({ dataDir: dir, ...ADMIN, ...opts });
  cleanups.push(() => s.close());
  return s;
}

async function follow(url: string, name: string) {
  const { client } = await SeafileClient.login(
    { baseUrl: url, notifications: { recheckMs: 200, retryMinMs: 100 } },
    ADMIN.adminEmail,
    ADMIN.adminPassword,
  );
  cleanups.push(() => client.close());
  const repo = (await client.createLibrary(name)).repo_id;
  const seen = { changes: [] as ServerChange[], modes: [] as ChangeMode[], resubscribed: 0, log: [] as string[] };
  const feed = client.watchChanges!([repo], {
    onChange: (c) => seen.changes.push(c),
    onResubscribed: () => seen.resubscribed++,
    onMode: (m) => seen.modes.push(m),
    log: (l) => seen.log.push(l),
  });
  cleanups.push(async () => feed.close());
  return { client, repo, feed, seen };
}

const until = async (ok: () => boolean, ms = 10_000) => (await pollUntil(ok, ms, 20)) !== null;

describe('the change feed against the notification server', () => {
  it('tells a commit; renews an expired token and goes on', async () => {
    const s = await serve({ notificationTokenTtlSec: 1, notificationExpiryCheckMs: 200 });
    const { client, repo, feed, seen } = await follow(s.url, 'Feed');
    expect(await until(() => feed.mode === 'notification')).toBe(true);
    await client.mkdir(repo, '/one');
    expect(await until(() => seen.changes.some((c) => c.kind === 'repo-update'))).toBe(true);
    expect(seen.changes[0]).toMatchObject({ repo, kind: 'repo-update' });
    // the token runs out after a second: the server says jwt-expired, the feed takes a new one
    expect(await until(() => seen.resubscribed > 0)).toBe(true);
    const before = seen.changes.length;
    await client.mkdir(repo, '/two');
    expect(await until(() => seen.changes.length > before)).toBe(true);
    expect(feed.mode).toBe('notification');
  });

  it('polls while the server is gone and subscribes again once it is back', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-feed-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const first = await serve({}, dir);
    const port = first.port;
    const { client, repo, feed, seen } = await follow(first.url, 'Away');
    expect(await until(() => feed.mode === 'notification')).toBe(true);
    await first.close();
    expect(await until(() => feed.mode === 'polling')).toBe(true);
    await serve({ port }, dir);
    expect(await until(() => feed.mode === 'notification', 20_000)).toBe(true);
    expect(seen.resubscribed).toBeGreaterThan(0);
    const before = seen.changes.length;
    await client.mkdir(repo, '/after');
    expect(await until(() => seen.changes.length > before)).toBe(true);
  });

  it('a server without a notification server: polling, asked again now and then', async () => {
    const s = await serve({ notifications: false });
    const { feed, seen } = await follow(s.url, 'Quiet');
    await new Promise((r) => setTimeout(r, 600));
    expect(feed.mode).toBe('polling');
    expect(seen.modes).not.toContain('notification');
  });
});
