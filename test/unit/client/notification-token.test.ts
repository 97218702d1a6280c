// Which token the client subscribes with: seahub's repo-notification-jwt-token
// (12.0 and later), else the fileserver's jwt-token with the library's sync
// token (10.0 and 11.0). A real 10.0 seahub built without its web UI answers
// unknown URLs 500 with an HTML page (its 404 page cannot be rendered), not
// 404: that too means "no such endpoint", asked once, not retried.
import { describe, expect, it } from 'vitest';
import { notificationToken } from '../../../src/client/endpoints/notifications.js';
import { clientFixture, json, text } from '../../helpers/client-fixture.js';

const f = clientFixture();
const REPO = '93d434ca-355e-493c-9c8c-8a2ba2a3d8a6';

function older(v21Status: number) {
  return f.setup((req, res) => {
    if (req.url === `/api/v2.1/repos/${REPO}/repo-notification-jwt-token/`)
      return text(res, v21Status, '<!DOCTYPE html><title>Page unavailable</title>', { 'content-type': 'text/html' });
    if (req.url === `/api2/repos/${REPO}/download-info/`) return json(res, 200, { token: 'sync-token', repo_id: REPO });
    if (req.url === `/seafhttp/repo/${REPO}/jwt-token` && req.headers['seafile-repo-token'] === 'sync-token')
      return json(res, 200, { jwt_token: 'h.fileserver.s' });
    text(res, 404, 'no');
  });
}

describe('notification token', () => {
  it('12.0: seahub hands it', async () => {
    const { client } = await f.setup((req, res) =>
      req.url === `/api/v2.1/repos/${REPO}/repo-notification-jwt-token/`
        ? json(res, 200, { token: 'h.seahub.s' })
        : text(res, 404, 'no'),
    );
    expect(await notificationToken(client.http, REPO)).toBe('h.seahub.s');
  });

  it.each([404, 405, 500])('seahub answers %i: the fileserver hands it, seahub asked once', async (status) => {
    const { client, srv } = await older(status);
    expect(await notificationToken(client.http, REPO)).toBe('h.fileserver.s');
    expect(srv.seen.filter((s) => s.url.includes('repo-notification-jwt-token'))).toHaveLength(1);
  });

  it('the fileserver refusing too is an error', async () => {
    const { client } = await f.setup((req, res) =>
      req.url === `/api2/repos/${REPO}/download-info/` ? json(res, 200, { token: 'sync-token' }) : text(res, 403, 'no'),
    );
    await expect(notificationToken(client.http, REPO)).rejects.toThrow(/403/);
  });
});
