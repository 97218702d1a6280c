// A folder rename under a fault on exactly one of its calls (issue 31): the
// vfs over a real client and `seafs serve` behind the fault proxy, with a
// script that fails the rename call or the batch move call once: a 500 after
// the server did it, a reset after it did it, a 500 before it, a 429. The
// client is given no retries of its own (maxRetries 0), as when its budget
// ran out on stalls: the vfs must look (a listing) and either find the call
// done or send it again, so `mv DIR/a/b DIR/moved` succeeds. Files written
// into the folder and not uploaded yet follow it: their journal entries name
// the new path, so a later mount (the same cache dir) uploads them there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { Vfs } from '../../src/vfs/vfs.js';
import { adminClient } from '../helpers/client-setup.js';
import { writeWhole } from '../helpers/fake-api.js';
import { startFaultProxy, type FaultProxy, type ScriptedFault } from '../helpers/fault-proxy.js';
import { startTestServer, uploadTo, type TestServer } from '../helpers/server.js';

let server: TestServer;
let direct: SeafileClient;
const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  server = await startTestServer();
  direct = await adminClient(server);
});

afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  await direct?.close();
  await server?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Call = 'rename folder' | 'batch move';

const isCall = (call: Call, r: { method: string; url: string; body: string }) =>
  r.method === 'POST' &&
  (call === 'batch move'
    ? r.url.includes('/sync-batch-move-item/')
    : r.url.includes('/dir/?p=') && r.body.includes('operation=rename'));

async function names(repo: string, dir: string): Promise<string[]> {
  const l = await direct.listDir(repo, dir, {});
  return l.uptodate ? [] : l.entries.map((e) => e.name).sort();
}

async function vfsOver(api: SeafileClient, library: string, cacheDir: string, log: string[]): Promise<Vfs> {
  const vfs = await Vfs.create(api, {
    library,
    cacheDir,
    durableJournal: false,
    log: (m) => log.push(m),
    // new files wait: still in the journal when the folder moves
    writeBack: { newFileDelayMs: 60_000, retryBaseMs: 20 },
  });
  closers.push(async () => vfs.close());
  return vfs;
}

describe('folder rename with a fault on exactly one call', () => {
  const cases: [Call, ScriptedFault][] = [];
  for (const call of ['rename folder', 'batch move'] as const)
    for (const fault of ['error500After', 'resetAfter', 'error500', 'throttle429'] as const) cases.push([call, fault]);

  it.each(cases)(
    '%s answered %s: mv a/b moved succeeds, the server holds it once, pending files follow',
    async (call, fault) => {
      const lib = `${call} ${fault}`;
      const repo = (await direct.createLibrary(lib)).repo_id;
      await direct.mkdir(repo, '/t/a/b', { createParents: true });
      const seeded: Record<string, string> = {};
      for (let i = 0; i < 5; i++) seeded[`s${i}.txt`] = `seeded ${i}\n`;
      const up = await uploadTo(await direct.uploadLink(repo, '/t/a/b'), '/t/a/b', seeded);
      expect(up.status, up.text).toBe(200);

      let armed = false;
      const proxy: FaultProxy = await startFaultProxy({
        target: server.url,
        seed: 1,
        retryAfterSec: 0.2,
        script: (r) => {
          if (!armed || !isCall(call, r)) return null;
          armed = false;
          return fault;
        },
      });
      closers.push(() => proxy.close());
      const api = new SeafileClient({ baseUrl: proxy.url, token: direct.token, maxRetries: 0, timeoutMs: 10_000 });
      closers.push(() => api.close());
      const cacheDir = mkdtempSync(join(tmpdir(), 'seafs-it-rename-'));
      dirs.push(cacheDir);
      const log: string[] = [];
      const vfs = await vfsOver(api, lib, cacheDir, log);

      expect((await vfs.readdir('/t/a/b')).sort()).toEqual(Object.keys(seeded));
      for (let i = 0; i < 3; i++) await writeWhole(vfs, `/t/a/b/new${i}.txt`, `new ${i}\n`);
      expect(vfs.pendingUploads()).toHaveLength(3);

      armed = true;
      await vfs.rename('/t/a/b', '/t/moved');
      expect(proxy.counts.scripted, 'the fault was injected once').toBe(1);
      expect(await names(repo, '/t')).toEqual(['a', 'moved']);
      expect(await names(repo, '/t/a')).toEqual([]);
      expect(await names(repo, '/t/moved')).toEqual(Object.keys(seeded));
      const all = [...Object.keys(seeded), 'new0.txt', 'new1.txt', 'new2.txt'].sort();
      expect((await vfs.readdir('/t/moved')).sort()).toEqual(all);
      expect(
        vfs
          .pendingUploads()
          .map((p) => p.path)
          .sort(),
      ).toEqual(['/t/moved/new0.txt', '/t/moved/new1.txt', '/t/moved/new2.txt']);

      // the mount ends before the uploads: the next one (same cache dir) takes them from the journal
      vfs.close();
      const again = await vfsOver(direct, lib, cacheDir, log);
      expect(await again.drain()).toEqual([]);
      expect(await names(repo, '/t/moved')).toEqual(all);
      expect(await names(repo, '/t')).toEqual(['a', 'moved']);
      for (let i = 0; i < 3; i++) {
        const link = await direct.downloadLink(repo, `/t/moved/new${i}.txt`);
        expect(await (await fetch(link.url)).text()).toBe(`new ${i}\n`);
      }
    },
  );
});
