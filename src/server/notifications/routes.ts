// The notification server's HTTP side: its ping, and the two ways a client
// gets a token to subscribe with: seahub's repo-notification-jwt-token (12.0
// and later) and the fileserver's jwt-token, which takes the library's sync
// token (from download-info) in Seafile-Repo-Token, as seaf-server 10.0 does.
// The websocket itself: notifications/hub.ts. Off (--no-notifications): 404s.
import type { Ctx } from '../context.js';
import { FileServerError, HttpError, sendJson } from '../http.js';
import type { Route } from '../router.js';

function hubOf(ctx: Ctx) {
  if (!ctx.notifications) throw new HttpError(404, '', { detail: 'Not found.' });
  return ctx.notifications;
}

export const notificationRoutes: Route[] = [
  {
    method: 'GET',
    path: '/notification/ping',
    auth: 'none',
    handler: async (ctx, r) => {
      hubOf(ctx);
      sendJson(r.res, 200, { ret: 'pong' });
    },
  },
  {
    method: 'GET',
    path: '/api/v2.1/repos/:repo/repo-notification-jwt-token',
    auth: 'user',
    handler: async (ctx, r) => {
      if (!ctx.behaviour.notificationTokenView) throw new HttpError(404, '', { detail: 'Not found.' });
      const hub = hubOf(ctx);
      const { repo } = ctx.repoFor(r.user!, r.params[0]);
      sendJson(r.res, 200, { token: hub.token(repo.id, r.user!.email) });
    },
  },
  {
    method: 'GET',
    path: '/seafhttp/repo/:repo/jwt-token',
    auth: 'none',
    handler: async (ctx, r) => {
      const token = r.raw.headers['seafile-repo-token'];
      const held = typeof token === 'string' ? ctx.syncTokens.get(token) : undefined;
      if (!held || held.repo !== r.params[0]) throw new FileServerError(403, 'Bad repo token.');
      const user = ctx.db.user(held.user);
      const repo = ctx.db.repo(held.repo);
      if (!user?.isActive || !repo || !ctx.permission(user, repo)) throw new FileServerError(403, 'Bad repo token.');
      if (!ctx.notifications) throw new FileServerError(404, '');
      sendJson(r.res, 200, { jwt_token: ctx.notifications.token(repo.id, user.email) });
    },
  },
];
