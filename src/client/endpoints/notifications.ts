// What a client needs of the notification server over plain HTTP: whether the
// server has one (its ping, through the web front at /notification/ping), and
// a token to subscribe to a library with: seahub's repo-notification-jwt-token
// (12.0 and later), else the fileserver's jwt-token, which takes the library's
// sync token from download-info in a Seafile-Repo-Token header (10.0 and 11.0).
// A 10.0 seahub without its web UI answers unknown URLs 500 (its 404 page fails
// to render): that too sends the client to the fileserver, without retrying.
import type { ClientOptions } from '../client-options.js';
import { isApiError } from '../errors.js';
import type { HttpCore } from '../http.js';
import { NotificationFeed, notificationUrl, type ClientOptionsOfWs } from '../notification-feed.js';
import type { ChangeFeed, ChangeFeedHooks } from '../types.js';

/** whether the server answers the notification server's ping (false: it has none, or it is down) */
export async function notificationPing(http: HttpCore): Promise<boolean> {
  try {
    const r = await http.json<{ ret?: unknown }>({
      op: 'notification ping',
      method: 'GET',
      url: '/notification/ping/',
      auth: false,
      retry: 'never',
    });
    return r.value?.ret === 'pong';
  } catch {
    return false;
  }
}

/** a JWT for subscribing to `repo` */
export async function notificationToken(http: HttpCore, repo: string): Promise<string> {
  const op = 'notification token';
  const r = encodeURIComponent(repo);
  try {
    const v2 = await http.json<{ token?: unknown }>({
      op,
      method: 'GET',
      url: `/api/v2.1/repos/${r}/repo-notification-jwt-token/`,
      retry: 'never',
    });
    if (typeof v2.value?.token === 'string' && v2.value.token) return v2.value.token;
  } catch (e) {
    // before 12.0 seahub has no such endpoint: the fileserver's below
    if (!isApiError(e) || (e.status !== 404 && e.status !== 405 && e.status !== 500)) throw e;
  }
  const info = await http.json<{ token?: unknown; applet_root?: unknown }>({
    op,
    method: 'GET',
    url: `/api2/repos/${r}/download-info/`,
    retry: 'read',
  });
  const sync = info.value?.token;
  if (typeof sync !== 'string' || !sync) throw new Error('the server gave no sync token (download-info)');
  const root = typeof info.value.applet_root === 'string' && info.value.applet_root ? info.value.applet_root : null;
  const url = `${root ?? `${http.base.origin}${http.base.pathname.replace(/\/$/, '')}/seafhttp`}/repo/${r}/jwt-token`;
  const fs = await http.json<{ jwt_token?: unknown }>({
    op,
    method: 'GET',
    url,
    auth: false,
    headers: { 'Seafile-Repo-Token': sync },
    retry: 'read',
  });
  const token = fs.value?.jwt_token;
  if (typeof token !== 'string' || !token) throw new Error('the fileserver gave no notification token');
  return token;
}

/** A client's watchChanges: a notification feed per call, over the client's HTTP core and its TLS trust. */
export function changeWatcher(
  http: HttpCore,
  baseUrl: string,
  notify: Exclude<ClientOptions['notifications'], false>,
): (repos: string[], hooks: ChangeFeedHooks) => ChangeFeed {
  return (repos, hooks) =>
    new NotificationFeed(
      {
        url: notificationUrl(baseUrl),
        repos,
        ping: () => notificationPing(http),
        token: (repo) => notificationToken(http, repo),
        // the same trust as every other connection of this client (tls.ts)
        wsOptions: () =>
          // ws hands its options to tls.connect, which takes a secure context
          (baseUrl.startsWith('https:') ? { secureContext: http.tls.context() } : {}) as ClientOptionsOfWs,
        ...notify,
      },
      hooks,
    );
}
