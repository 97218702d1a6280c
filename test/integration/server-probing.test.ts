// Another user's library, and the paths and commits in it, cannot be probed
// through `seafs serve`: for a caller who cannot see a library, each endpoint
// answers exactly as for a library that does not exist, whatever path or
// commit the request names. (Some answered 403 for what existed and 404 for
// what did not.) Library ids in the answers are replaced before comparing:
// the messages name the id they were asked about.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, newLibrary, startServerWithUsers, BOB, type ApiResponse, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: ReturnType<typeof apiAs>;
let bob: ReturnType<typeof apiAs>;
/** the admin's library, which bob cannot see: /dir/file.txt, and a commit of it */
let theirs: string;
let commit: string;
/** bob's own library, with /mine.txt */
let mine: string;
const missing = randomUUID();
const noCommit = 'f'.repeat(40);

beforeAll(async () => {
  ({
    server,
    admin,
    users: [bob],
  } = await startServerWithUsers([BOB]));
  theirs = await newLibrary(admin, 'private');
  await admin('POST', `/api2/repos/${theirs}/dir/`, { query: { p: '/dir' }, form: { operation: 'mkdir' } });
  expect(
    (
      await admin('POST', `/api2/repos/${theirs}/file/`, {
        query: { p: '/dir/file.txt' },
        form: { operation: 'create' },
      })
    ).status,
  ).toBe(201);
  commit = (await admin('GET', `/api/v2.1/repos/${theirs}/history/`)).json.data[0].commit_id;
  mine = await newLibrary(bob, 'mine', { 'mine.txt': 'm' });
});

afterAll(async () => {
  await server?.stop();
});

const shape = (res: ApiResponse) => ({
  status: res.status,
  body: res.text.split(theirs).join('<repo>').split(missing).join('<repo>'),
});

/**
 * Bob's answers to `probe` for the admin's library with what exists in it,
 * with what does not, and for a library that does not exist: all alike, and
 * what a missing library gets (a 4xx; `missingIsSuccess`: seahub's success
 * for deleting what is not there).
 */
async function sameAnswers(
  probe: (repo: string, exists: boolean) => Promise<ApiResponse>,
  missingIsSuccess = false,
): Promise<void> {
  const existing = shape(await probe(theirs, true));
  const absent = shape(await probe(theirs, false));
  const nowhere = shape(await probe(missing, true));
  expect({ existing, absent }).toEqual({ existing: nowhere, absent: nowhere });
  if (missingIsSuccess) expect(nowhere.status).toBe(200);
  else expect(nowhere.status).toBeGreaterThanOrEqual(400);
}

const dir = (exists: boolean) => (exists ? '/dir' : '/no-such-dir');

describe('a library bob cannot see answers as one that does not exist, whatever he names in it', () => {
  it('smart-link (a path)', async () => {
    await sameAnswers((repo, exists) =>
      bob('GET', '/api/v2.1/smart-link/', {
        query: { repo_id: repo, path: exists ? '/dir/file.txt' : '/dir/none.txt', is_dir: 'false' },
      }),
    );
  });

  for (const kind of ['async', 'sync'])
    for (const op of ['copy', 'move'])
      it(`${kind}-batch-${op}-item, from it and into it (a folder)`, async () => {
        const url = `/api/v2.1/repos/${kind}-batch-${op}-item/`;
        await sameAnswers((repo, exists) =>
          bob('POST', url, {
            json: {
              src_repo_id: repo,
              src_parent_dir: dir(exists),
              src_dirents: ['file.txt'],
              dst_repo_id: mine,
              dst_parent_dir: '/',
            },
          }),
        );
        await sameAnswers((repo, exists) =>
          bob('POST', url, {
            json: {
              src_repo_id: mine,
              src_parent_dir: '/',
              src_dirents: ['mine.txt'],
              dst_repo_id: repo,
              dst_parent_dir: dir(exists),
            },
          }),
        );
      });

  it('batch-delete-item (a folder)', async () => {
    await sameAnswers((repo, exists) =>
      bob('DELETE', '/api/v2.1/repos/batch-delete-item/', {
        json: { repo_id: repo, parent_dir: dir(exists), dirents: ['file.txt'] },
      }),
    );
  });

  it('repos/{id}/ of api2 and of v2.1: read, delete, rename, password, owner', async () => {
    for (const [method, api, opts] of [
      ['GET', 'api2', {}],
      ['DELETE', 'api2', {}],
      ['POST', 'api2', { query: { op: 'rename' }, form: { repo_name: 'taken' } }],
      ['POST', 'api2', { form: { password: 'guess-123' } }],
      ['GET', 'api/v2.1', {}],
    ] as const)
      await sameAnswers((repo) => bob(method, `/${api}/repos/${repo}/`, opts));
    await sameAnswers((repo) => bob('DELETE', `/api/v2.1/repos/${repo}/`), true);
    await sameAnswers((repo) => bob('GET', `/api2/repos/${repo}/owner/`));
    await sameAnswers((repo) => bob('PUT', `/api2/repos/${repo}/owner/`, { form: { owner: BOB.email } }));
    await sameAnswers((repo) => bob('GET', `/api2/repos/${repo}/history-limit/`));
    await sameAnswers((repo) => bob('GET', `/api/v2.1/repos/${repo}/share-links/`));
    await sameAnswers((repo) =>
      bob('DELETE', `/api/v2.1/shared-repos/${repo}/`, { query: { share_type: 'personal', user: BOB.email } }),
    );
  });

  it('set-password: to unlock, and to change it', async () => {
    await sameAnswers((repo) =>
      bob('POST', `/api/v2.1/repos/${repo}/set-password/`, { json: { password: 'guess-123' } }),
    );
    await sameAnswers((repo) =>
      bob('PUT', `/api/v2.1/repos/${repo}/set-password/`, {
        json: { old_password: 'guess-123', new_password: 'other-123' },
      }),
    );
  });

  it('trash/revert-dirents (a commit and a path)', async () => {
    await sameAnswers((repo, exists) =>
      bob('POST', `/api/v2.1/repos/${repo}/trash/revert-dirents/`, {
        json: { path: [exists ? '/dir/file.txt' : '/none.txt'], commit_id: exists ? commit : noCommit },
      }),
    );
  });

  it('commits/{id}/revert (a commit)', async () => {
    await sameAnswers((repo, exists) =>
      bob('POST', `/api/v2.1/repos/${repo}/commits/${exists ? commit : noCommit}/revert/`),
    );
  });

  it('search-file and starred-items (a path)', async () => {
    await sameAnswers((repo, exists) =>
      bob('GET', '/api/v2.1/search-file/', { query: { repo_id: repo, q: exists ? 'file' : 'none' } }),
    );
    await sameAnswers((repo, exists) =>
      bob('POST', '/api/v2.1/starred-items/', { json: { repo_id: repo, path: exists ? '/dir/file.txt' : '/none' } }),
    );
  });

  it('and nothing of the library changed meanwhile', async () => {
    const listing = await admin('GET', `/api2/repos/${theirs}/dir/`, { query: { p: '/dir' } });
    expect(listing.json.map((e: { name: string }) => e.name)).toEqual(['file.txt']);
    expect((await admin('GET', `/api2/repos/${theirs}/`)).json.name).toBe('private');
    expect((await admin('GET', `/api/v2.1/repos/${theirs}/history/`)).json.data[0].commit_id).toBe(commit);
  });
});

describe('a library bob may read but not change still answers 403 where he may not act', () => {
  it('delete, revert, batch delete: Permission denied', async () => {
    const shared = await newLibrary(admin, 'shared-r', { 'r.txt': 'r' });
    await admin('PUT', `/api2/shared-repos/${shared}/`, {
      query: { share_type: 'personal', user: BOB.email, permission: 'r' },
    });
    const head = (await admin('GET', `/api/v2.1/repos/${shared}/history/`)).json.data[0].commit_id;
    for (const res of [
      await bob('DELETE', `/api2/repos/${shared}/`),
      await bob('POST', `/api/v2.1/repos/${shared}/commits/${head}/revert/`),
      await bob('DELETE', '/api/v2.1/repos/batch-delete-item/', {
        json: { repo_id: shared, parent_dir: '/', dirents: ['r.txt'] },
      }),
    ])
      expect({ status: res.status, body: res.json }).toEqual({
        status: 403,
        body: { error_msg: 'Permission denied.' },
      });
  });
});
