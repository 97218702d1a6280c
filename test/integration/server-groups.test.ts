// Groups in `seafs serve`: create, members, sharing a library to a group, and
// the mount's all-libraries root (the Vfs over the real client) showing a
// group library and writing into it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { Vfs } from '../../src/vfs/vfs.js';
import { apiAs, startServerWithUsers, newLibrary, BOB, CAROL, type TestServer } from '../helpers/server.js';
import { FAST } from '../helpers/client-setup.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;
let carol: ReturnType<typeof apiAs>;
let repo: string;
let groupId: number;

beforeAll(async () => {
  ({
    server,
    admin,
    users: [bob, carol],
  } = await startServerWithUsers([BOB, CAROL]));
  repo = await newLibrary(admin, 'team-lib', { 'plan.txt': 'team plan' });
});

afterAll(async () => {
  await server?.stop();
});

describe('groups', () => {
  it('a user creates a group (V2.1), adds a member, and both see it in the V2 and V2.1 lists; others do not', async () => {
    const g = await admin('POST', '/api/v2.1/groups/', { form: { name: 'team' } });
    expect(g.status).toBe(201);
    expect(g.json).toMatchObject({ name: 'team', owner: server.adminEmail, admins: [server.adminEmail] });
    groupId = g.json.id;
    expect((await admin('POST', '/api/v2.1/groups/', { form: { name: 'team' } })).status).toBe(400);
    const added = await admin('POST', `/api/v2.1/groups/${groupId}/members/`, { form: { email: 'bob@seafs.test' } });
    expect(added.json).toMatchObject({ email: 'bob@seafs.test', is_admin: false });
    expect((await bob('GET', '/api/v2.1/groups/')).json.map((x: { id: number }) => x.id)).toEqual([groupId]);
    expect((await bob('GET', '/api2/groups/')).json).toMatchObject({
      groups: [{ id: groupId, name: 'team', creator: server.adminEmail }],
    });
    const members = (await bob('GET', `/api/v2.1/groups/${groupId}/members/`)).json.map(
      (m: { email: string }) => m.email,
    );
    expect(members.sort()).toEqual([server.adminEmail, 'bob@seafs.test'].sort());
    expect((await carol('GET', '/api/v2.1/groups/')).json).toEqual([]);
    expect((await carol('GET', `/api/v2.1/groups/${groupId}/`)).status).toBe(403);
    // a plain member cannot add members
    expect(
      (await bob('POST', `/api/v2.1/groups/${groupId}/members/`, { form: { email: 'carol@seafs.test' } })).status,
    ).toBe(403);
  });

  it('a library shared to the group is listed to members as grepo with its permission, and is theirs to write', async () => {
    const s = await admin('PUT', `/api2/shared-repos/${repo}/`, {
      query: { share_type: 'group', group_id: String(groupId), permission: 'rw' },
    });
    expect(s.json).toBe('success');
    const libs = (await bob('GET', '/api2/repos/')).json;
    expect(libs).toHaveLength(1);
    expect(libs[0]).toMatchObject({
      id: repo,
      type: 'grepo',
      groupid: groupId,
      permission: 'rw',
      owner: server.adminEmail,
    });
    expect((await bob('GET', '/api2/repos/', { query: { type: 'group' } })).json).toHaveLength(1);
    expect((await bob('GET', '/api2/repos/', { query: { type: 'shared' } })).json).toHaveLength(0);
    expect((await bob('GET', `/api/v2.1/groups/${groupId}/libraries/`)).json[0]).toMatchObject({
      repo_id: repo,
      permission: 'rw',
    });
    expect(
      (await bob('POST', `/api2/repos/${repo}/dir/`, { query: { p: '/by-bob' }, form: { operation: 'mkdir' } })).status,
    ).toBe(201);
    expect((await carol('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).status).toBe(404);
    const items = (
      await admin('GET', `/api2/repos/${repo}/dir/shared_items/`, { query: { p: '/', share_type: 'group' } })
    ).json;
    expect(items).toEqual([{ share_type: 'group', group_info: { id: groupId, name: 'team' }, permission: 'rw' }]);
  });

  it("the mount's all-libraries root shows the group library; a file written there is read back through the API", async () => {
    const { client } = await SeafileClient.login({ baseUrl: server.url, ...FAST }, BOB.email, BOB.password);
    const cacheDir = await mkdtemp(join(tmpdir(), 'seafs-groups-'));
    const vfs = await Vfs.create(client, { durableJournal: false, cacheDir, dirCacheTimeMs: 0 });
    try {
      expect(await vfs.readdir('/')).toEqual(['team-lib']);
      expect((await vfs.readdir('/team-lib')).sort()).toEqual(['by-bob', 'plan.txt']);
      const fh = await vfs.create('/team-lib/from-mount.txt', 0o644);
      const data = Buffer.from('written through the vfs');
      await vfs.write('/team-lib/from-mount.txt', fh, data, data.length, 0);
      await vfs.flush('/team-lib/from-mount.txt', fh);
      await vfs.release('/team-lib/from-mount.txt', fh);
      expect(await vfs.drain()).toEqual([]);
    } finally {
      vfs.close();
      await client.close();
      await rm(cacheDir, { recursive: true, force: true });
    }
    const link = await admin('GET', `/api2/repos/${repo}/file/`, { query: { p: '/from-mount.txt' } });
    expect(link.status).toBe(200);
    expect(await (await fetch(link.json)).text()).toBe('written through the vfs');
  });

  it('leaving the group, or the group share going away, takes the library away', async () => {
    expect((await bob('DELETE', `/api/v2.1/groups/${groupId}/members/bob@seafs.test/`)).json).toEqual({
      success: true,
    });
    expect((await bob('GET', '/api2/repos/')).json).toEqual([]);
    expect((await bob('GET', `/api2/repos/${repo}/dir/`, { query: { p: '/' } })).status).toBe(404);
    await admin('POST', `/api/v2.1/groups/${groupId}/members/`, { form: { email: 'bob@seafs.test' } });
    expect((await bob('GET', '/api2/repos/')).json).toHaveLength(1);
    await admin('DELETE', `/api2/shared-repos/${repo}/`, { query: { share_type: 'group', group_id: String(groupId) } });
    expect((await bob('GET', '/api2/repos/')).json).toEqual([]);
    expect((await admin('DELETE', `/api/v2.1/groups/${groupId}/`)).json).toEqual({ success: true });
    expect((await bob('GET', '/api/v2.1/groups/')).json).toEqual([]);
  });
});
