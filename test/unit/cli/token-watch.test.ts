// A running mount whose token the server refuses (src/cli/mount/token-watch.ts):
// said once, every call held as unreachable (the vfs's offline mode keeps
// writes in the journal), a new saved login or the token taken again lets
// calls through once more.
import { describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import { ApiError } from '../../../src/client/errors.js';
import { json, tinyServer } from '../../helpers/client-fixture.js';
import { TokenWatch, type TokenHolder } from '../../../src/cli/mount/token-watch.js';

function holder(token: string, pingOk = false) {
  const h = {
    token: token as string | undefined,
    pings: 0,
    pingOk,
    setToken(t: string) {
      h.token = t;
    },
    async authPing() {
      h.pings++;
      // the watch's own ping is not held
      const held = h.http.hold?.('auth ping');
      if (held) throw held;
      if (!h.pingOk) throw new ApiError({ kind: 'unauthorized', status: 401, operation: 'auth ping' });
    },
    http: {
      tokenRefused: undefined as ((t: string) => void) | undefined,
      hold: undefined as ((op: string) => ApiError | null) | undefined,
    },
  };
  return h satisfies TokenHolder;
}

describe('token watch', () => {
  it('a refusal is said once and every call is then held as unreachable', () => {
    const c = holder('old');
    const logs: string[] = [];
    const w = new TokenWatch(c, { hint: 'log in again: seafs login work', log: (m) => logs.push(m) });
    expect(c.http.hold!('list')).toBeNull();
    c.http.tokenRefused!('old');
    c.http.tokenRefused!('old');
    expect(logs).toEqual([
      "the server refuses the mount's token (revoked or expired): log in again: seafs login work; until then the mount serves what it knows and files written wait in the journal",
    ]);
    const held = c.http.hold!('list folder');
    expect(held).toBeInstanceOf(ApiError);
    expect(held).toMatchObject({ kind: 'network', status: 0 });
    expect(w.state()).toMatchObject({ hint: 'log in again: seafs login work' });
    w.close();
  });

  it('a refusal of a token already replaced is a late answer: ignored', () => {
    const c = holder('new');
    const logs: string[] = [];
    const w = new TokenWatch(c, { hint: 'h', log: (m) => logs.push(m) });
    c.http.tokenRefused!('old');
    expect(logs).toEqual([]);
    expect(w.state()).toBeNull();
    expect(c.http.hold!('x')).toBeNull();
  });

  it('takes a new saved token, lets calls through and retries what waited', async () => {
    const c = holder('old');
    const logs: string[] = [];
    let saved = 'old';
    let back = 0;
    const w = new TokenWatch(c, {
      hint: 'h',
      log: (m) => logs.push(m),
      reload: async () => saved,
      onBack: () => back++,
    });
    c.http.tokenRefused!('old');
    await w.check();
    expect(w.state()).not.toBeNull();
    expect(c.token).toBe('old');
    saved = 'fresh';
    await w.check();
    expect(c.token).toBe('fresh');
    expect(w.state()).toBeNull();
    expect(c.http.hold!('x')).toBeNull();
    expect(back).toBe(1);
    expect(logs.at(-1)).toBe('the account was logged in again: the mount uses its new token; uploading what waited');
  });

  it('without a saved account, a ping now and then finds the token taken again', async () => {
    const c = holder('tok');
    const logs: string[] = [];
    const w = new TokenWatch(c, { hint: 'h', log: (m) => logs.push(m), pingEveryMs: 0 });
    c.http.tokenRefused!('tok');
    await w.check();
    expect(c.pings).toBe(1);
    expect(w.state()).not.toBeNull();
    c.pingOk = true;
    await w.check();
    expect(w.state()).toBeNull();
    expect(logs.at(-1)).toBe("the server takes the mount's token again; uploading what waited");
  });

  it('with a real client: the 401 is told with its token, that call and the next fail as unreachable, none is sent', async () => {
    const srv = await tinyServer((req, res) => {
      if (req.headers.authorization === 'Token revoked') json(res, 401, { detail: 'Invalid token' });
      else json(res, 200, { usage: 0, total: 0, email: 'a@b.c' });
    });
    const client = new SeafileClient({ baseUrl: srv.url, token: 'revoked', retryBaseMs: 1 });
    const logs: string[] = [];
    const w = new TokenWatch(client, { hint: 'h', log: (m) => logs.push(m) });
    try {
      const first = await client.accountInfo().catch((e: unknown) => e);
      expect(first).toMatchObject({ kind: 'network', status: 0 });
      expect(logs.length).toBe(1);
      const sent = srv.seen.length;
      await expect(client.accountInfo()).rejects.toMatchObject({ kind: 'network' });
      expect(srv.seen.length).toBe(sent);
      expect(w.state()).not.toBeNull();
    } finally {
      w.close();
      await client.close();
      await srv.close();
    }
  });
});
