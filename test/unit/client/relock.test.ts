// The client against a server that forgets encrypted-library passwords as the
// real one does: the web API keeps answering, only the file server refuses
// (download 400 "Repo is encrypted. Please provide password to view it.",
// C upload/update 500 "Internal error", Go upload 400). File-server calls
// given their library's id unlock again and are resent once; the password is
// also sent again on a timer.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../../src/client/client.js';
import { ApiError } from '../../../src/client/errors.js';
import type { UnlockEvent } from '../../../src/client/library-passwords.js';
import type { StreamSink } from '../../../src/client/types.js';
import { failure, json, text, tinyServer, type TinyServer } from '../../helpers/client-fixture.js';

const C_REFUSAL = 'Repo is encrypted. Please provide password to view it.\n';
const ID = 'a'.repeat(40);

/** A file server with one encrypted library "enc" (password "pw") that forgets the password when told. */
class Forgetful {
  unlocked = false;
  unlocks = 0;
  /** how uploads are refused while locked: the C file server (500) or Go (400) */
  flavour: 'c' | 'go' = 'c';
  /** answer every upload with 500 even when unlocked (a real server error) */
  broken = false;
  /** the library's password (changed on the server: unlocks with the old one are refused) */
  password = 'pw';

  handle = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void => {
    const url = req.url ?? '';
    if (req.method === 'POST' && url === '/api2/repos/enc/') {
      this.unlocks++;
      this.unlocked = body.toString() === `password=${this.password}`;
      return json(res, this.unlocked ? 200 : 400, this.unlocked ? 'success' : { error_msg: 'Incorrect password' });
    }
    if (url.startsWith('/files/')) {
      if (!this.unlocked) return text(res, 400, C_REFUSAL);
      const m = /bytes=(\d+)-/.exec(req.headers.range ?? '');
      const start = m ? Number(m[1]) : 0;
      const data = Buffer.from('hello, encrypted world').subarray(start);
      res.writeHead(m ? 206 : 200, {
        'content-length': data.length,
        ...(m ? { 'content-range': `bytes ${start}-${start + data.length - 1}/${data.length + start}` } : {}),
      });
      return void res.end(data);
    }
    if (url.startsWith('/upload-api/') || url.startsWith('/update-api/')) {
      if (!this.unlocked || this.broken) {
        if (this.flavour === 'go' && !this.broken) return json(res, 400, { error: C_REFUSAL.trim() });
        // the C file server's answer: a raw newline inside the JSON string
        res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
        return void res.end('{"error": "Internal error\n"}');
      }
      return json(res, 200, [{ name: 'f', id: ID, size: 5 }]);
    }
    json(res, 404, { error_msg: 'not here' });
  };
}

let srv: TinyServer;
let fs: Forgetful;
const servers: TinyServer[] = [];
const clients: SeafileClient[] = [];
let dir: string;
let local: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'seafs-relock-'));
  local = join(dir, 'f');
  writeFileSync(local, 'hello');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((x) => x.close()));
});

async function setup(opts: Partial<ConstructorParameters<typeof SeafileClient>[0]> = {}) {
  fs = new Forgetful();
  const f = fs;
  srv = await tinyServer((req, res, body) => f.handle(req, res, body));
  servers.push(srv);
  const client = new SeafileClient({
    baseUrl: srv.url,
    token: 'tok',
    retryBaseMs: 5,
    retryMaxMs: 20,
    timeoutMs: 2000,
    ...opts,
  });
  clients.push(client);
  return client;
}

/** the requests the server saw, as "METHOD /path-head" */
const seen = () => srv.seen.map((s) => `${s.method} ${s.url.split('?')[0].replace(/^(\/[a-z0-9-]+\/).*$/, '$1')}`);

/** A streaming GET into plain buffers: resolves with status and body, rejects with the failure. */
function streamAll(client: SeafileClient, url: string, repoId?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const parts: Buffer[] = [];
    let cur = Buffer.alloc(0);
    let status = 0;
    const sink: StreamSink = {
      head: (st) => (status = st),
      space: () => (cur = Buffer.alloc(7)),
      wrote: (n) => parts.push(Buffer.from(cur.subarray(0, n))),
      end: (err) => (err ? reject(err) : resolve({ status, body: Buffer.concat(parts).toString() })),
    };
    client.streamGet(url, 0, sink, { repoId });
  });
}

describe('downloads from a file server that forgot the password', () => {
  it('unlock again and read on, when given the library id', async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false; // the hour is over, or the server restarted
    const r = await client.download(`${srv.url}/files/t/f`, { start: 7 }, { repoId: 'enc' });
    expect(await r.body.toArray().then((b) => Buffer.concat(b).toString())).toBe('encrypted world');
    expect(seen()).toEqual(['POST /api2/', 'GET /files/', 'POST /api2/', 'GET /files/']);
  });

  it('without a library id, or without a password held, the refusal comes through with its message', async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    const e = await failure(client.download(`${srv.url}/files/t/f`));
    expect(e.kind).toBe('password_required');
    expect(e.serverMessage).toBe(C_REFUSAL.trim());
    client.forgetLibraryPassword('enc');
    expect((await failure(client.download(`${srv.url}/files/t/f`, undefined, { repoId: 'enc' }))).kind).toBe(
      'password_required',
    );
    expect(fs.unlocks).toBe(1);
  });

  it('concurrent refusals share one unlock', async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    const reads = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => client.download(`${srv.url}/files/t${i}/f`, { start: i }, { repoId: 'enc' })),
    );
    expect(reads.every((r) => r.status === 206)).toBe(true);
    await Promise.all(reads.map((r) => r.body.toArray()));
    expect(fs.unlocks).toBe(2); // the first unlock and one again
  });

  it('the streaming GET keeps the refusal message and, with the library id, unlocks again and streams', async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    const e = await streamAll(client, `${srv.url}/files/t/f`).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).kind).toBe('password_required');
    expect((e as ApiError).status).toBe(400);
    expect((e as ApiError).serverMessage).toBe(C_REFUSAL.trim());
    expect(fs.unlocks).toBe(1);
    const r = await streamAll(client, `${srv.url}/files/t/f`, 'enc');
    expect(r).toEqual({ status: 206, body: 'hello, encrypted world' });
    expect(fs.unlocks).toBe(2);
  });

  it('a streaming GET whose unlock again is refused ends once, with the refusal', async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    fs.password = 'changed on the server';
    let ends = 0;
    const e = await new Promise<unknown>((resolve) => {
      client.streamGet(
        `${srv.url}/files/t/f`,
        0,
        {
          head: () => {},
          space: () => Buffer.alloc(64),
          wrote: () => {},
          end: (err) => {
            ends++;
            resolve(err);
          },
        },
        { repoId: 'enc' },
      );
    });
    expect((e as ApiError).kind).toBe('password_required');
    expect(fs.unlocks).toBe(2);
    expect(ends).toBe(1);
  });
});

describe('uploads to a file server that forgot the password', () => {
  it("C's 500 into a library whose password is held: unlock again, the upload lands, once", async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    const up = await client.upload(`${srv.url}/upload-api/t`, '/', local, 'f', { replace: true, repoId: 'enc' });
    expect(up).toEqual([{ name: 'f', id: ID, size: 5 }]);
    expect(seen()).toEqual(['POST /api2/', 'POST /upload-api/', 'POST /api2/', 'POST /upload-api/']);
    fs.unlocked = false;
    expect(await client.update(`${srv.url}/update-api/t`, '/f', local, { repoId: 'enc' })).toBe(ID);
    expect(fs.unlocks).toBe(3);
  });

  it("Go's 400 is the same refusal", async () => {
    const client = await setup();
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    fs.flavour = 'go';
    expect(await client.update(`${srv.url}/update-api/t`, '/f', local, { repoId: 'enc' })).toBe(ID);
    expect(fs.unlocks).toBe(2);
  });

  it('a 500 that stays after the unlock is a server error (one unlock, then the ordinary retries)', async () => {
    const client = await setup({ maxRetries: 2 });
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    fs.broken = true;
    const e = await failure(client.update(`${srv.url}/update-api/t`, '/f', local, { repoId: 'enc' }));
    expect(e.kind).toBe('server');
    expect(e.status).toBe(500);
    expect(fs.unlocks).toBe(2);
    // 1 refused + 1 after the unlock + 2 ordinary retries
    expect(seen().filter((s) => s === 'POST /update-api/')).toHaveLength(4);
  });

  it('a 500 into a library this client holds no password for unlocks nothing', async () => {
    const client = await setup({ maxRetries: 1 });
    const e = await failure(client.update(`${srv.url}/update-api/t`, '/f', local, { repoId: 'enc' }));
    expect(e.kind).toBe('server');
    expect(fs.unlocks).toBe(0);
  });

  it('the multi-file upload (bare socket and undici alike) unlocks again and lands', async () => {
    for (const rawUploads of [true, false]) {
      const client = await setup({ rawUploads });
      await client.unlockLibrary('enc', 'pw');
      fs.unlocked = false;
      const files = [{ path: local, name: 'f' }];
      const out = await client.uploadBatch(`${srv.url}/upload-api/t`, '/', files, { replace: true, repoId: 'enc' });
      expect(out.map((f) => f.id)).toEqual([ID]);
      expect(fs.unlocks).toBe(2);
      // without the library id the refusal comes through
      fs.unlocked = false;
      const e = await failure(client.uploadBatch(`${srv.url}/upload-api/t`, '/', files, { replace: true }));
      expect(e.status).toBe(500);
    }
  });
});

describe('the password sent again on a timer', () => {
  it(
    're-sends each held password every unlockRefreshMs, tells onUnlockAgain, and stops when closed',
    { timeout: 10_000 },
    async () => {
      const events: UnlockEvent[] = [];
      let timerFired!: () => void;
      const fired = new Promise<void>((r) => (timerFired = r));
      const client = await setup({
        unlockRefreshMs: 30,
        onUnlockAgain: (ev) => {
          events.push(ev);
          if (events.length === 2) timerFired();
        },
      });
      await client.unlockLibrary('enc', 'pw');
      fs.unlocked = false;
      await fired;
      expect(events).toEqual([
        { repo: 'enc', reason: 'timer' },
        { repo: 'enc', reason: 'timer' },
      ]);
      expect(fs.unlocked).toBe(true);
      clients.splice(clients.indexOf(client), 1);
      await client.close();
      const after = fs.unlocks;
      await new Promise((r) => setTimeout(r, 100));
      expect(fs.unlocks).toBe(after);
    },
  );

  it('a refusal answered by an unlock again is told as "refused"', async () => {
    const events: UnlockEvent[] = [];
    const client = await setup({ onUnlockAgain: (ev) => events.push(ev) });
    await client.unlockLibrary('enc', 'pw');
    fs.unlocked = false;
    await client.download(`${srv.url}/files/t/f`, undefined, { repoId: 'enc' });
    expect(events).toEqual([{ repo: 'enc', reason: 'refused' }]);
  });
});
