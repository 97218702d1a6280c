// Session and account endpoints: the token login and the patient first
// login of a mount, pings, server and account information, and the
// administrators' account calls (used by tests and tools).
import { ApiError } from '../errors.js';
import { protocolError, type HttpCore } from '../http.js';
import { backoffDelay, notSent, sleep } from '../retry.js';
import type { AccountInfo, LoginDevice, ServerInfo } from '../types.js';
import { expectObject, expectString } from './expect.js';

export interface AccountFields {
  password?: string;
  is_staff?: boolean;
  is_active?: boolean;
  name?: string;
  note?: string;
  storage?: number;
  [other: string]: string | number | boolean | undefined;
}

/**
 * Failures of a first login worth waiting out: a server that is there but
 * reset, failed or throttled. A server that cannot be reached at all
 * (refused, unknown host) is only retried by the call's own retries, so a
 * wrong URL is reported within seconds.
 */
function transientLoginFailure(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  if (e.kind === 'network') return !notSent((e as ApiError & { code?: string }).code);
  return e.kind === 'timeout' || e.kind === 'server' || e.kind === 'throttled';
}

/**
 * Runs `attempt` (a login) until it succeeds; a transient failure is tried
 * again with backoff until `retryMs` have passed, unless the login carries a
 * one-time code (it may be spent). On giving up, `close` runs and the last
 * failure is thrown.
 */
export async function loginPatiently(
  http: HttpCore,
  attempt: () => Promise<string>,
  withOtp: boolean,
  retryMs: number,
  close: () => Promise<void>,
): Promise<string> {
  const deadline = Date.now() + retryMs;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      const delay = backoffDelay(n, e instanceof ApiError ? e.retryAfterMs : null, http.opts.backoff);
      if (!withOtp && transientLoginFailure(e) && Date.now() + delay < deadline) {
        await sleep(delay);
        continue;
      }
      await close();
      throw e;
    }
  }
}

/**
 * POST /api2/auth-token/; keeps the token in `http` for later calls and returns it. With `device`,
 * the server gives a token of that device (seahub's TokenV2: listed under the account's devices,
 * revocable there); without, the account's one token shared by every such login.
 */
export async function login(
  http: HttpCore,
  username: string,
  password: string,
  otp?: string,
  device?: LoginDevice,
): Promise<string> {
  const op = 'login';
  // both header spellings: real servers read X-Seafile-OTP, the spec names X-SERVICE-OTP
  const headers: Record<string, string> = otp ? { 'x-seafile-otp': otp, 'x-service-otp': otp } : {};
  const r = await http.json({
    op,
    method: 'POST',
    url: '/api2/auth-token/',
    form: {
      username,
      password,
      ...(device && {
        platform: device.platform,
        device_id: device.deviceId,
        device_name: device.deviceName,
        client_version: device.clientVersion ?? '',
        platform_version: device.platformVersion ?? '',
      }),
    },
    headers,
    auth: false,
    // the same credentials give the same token; a one-time code must not be sent twice
    retry: otp === undefined ? 'idempotent' : 'write',
    ctx: 'auth',
  });
  const o = expectObject<{ token?: unknown }>(op, r.value, 'token');
  const token = expectString(op, o.token);
  http.token = token;
  return token;
}

/** GET /api2/ping/ (no auth). */
export async function ping(http: HttpCore): Promise<void> {
  const r = await http.json({ op: 'ping', method: 'GET', url: '/api2/ping/', auth: false, retry: 'read' });
  if (r.value !== 'pong') throw protocolError('ping', `expected "pong", got ${JSON.stringify(r.value)}`);
}

/** GET /api2/ping/ once, no retry: whether the server answers at all (any status counts) */
export async function reachable(http: HttpCore): Promise<boolean> {
  try {
    await http.json({ op: 'ping', method: 'GET', url: '/api2/ping/', auth: false, retry: 'never' });
    return true;
  } catch (e) {
    return e instanceof ApiError && e.status > 0;
  }
}

/** GET /api2/auth/ping/: throws `unauthorized` when the token is not valid. */
export async function authPing(http: HttpCore): Promise<void> {
  const r = await http.json({ op: 'auth ping', method: 'GET', url: '/api2/auth/ping/', retry: 'read', ctx: 'auth' });
  if (r.value !== 'pong') throw protocolError('auth ping', `expected "pong", got ${JSON.stringify(r.value)}`);
}

export async function serverInfo(http: HttpCore): Promise<ServerInfo> {
  const op = 'server info';
  const r = await http.json({ op, method: 'GET', url: '/api2/server-info/', auth: false, retry: 'read' });
  const o = expectObject<ServerInfo>(op, r.value, 'version');
  if (!Array.isArray(o.features)) o.features = [];
  return o;
}

export async function accountInfo(http: HttpCore): Promise<AccountInfo> {
  const op = 'account info';
  const r = await http.json({ op, method: 'GET', url: '/api2/account/info/', retry: 'read', ctx: 'auth' });
  return expectObject<AccountInfo>(op, r.value, 'usage');
}

/** PUT /api2/accounts/{email}/ (administrators): creates or updates an account. */
export async function putAccount(http: HttpCore, email: string, fields: AccountFields): Promise<void> {
  await http.done({
    op: 'put account',
    method: 'PUT',
    url: `/api2/accounts/${encodeURIComponent(email)}/`,
    form: fields,
    retry: 'idempotent',
  });
}

export async function deleteAccount(http: HttpCore, email: string): Promise<void> {
  await http.done({
    op: 'delete account',
    method: 'DELETE',
    url: `/api2/accounts/${encodeURIComponent(email)}/`,
    retry: 'idempotent',
    retriedNotFoundIsSuccess: true,
  });
}

/** One of the account's devices, as GET /api2/devices/ lists them (seahub's TokenV2 rows). */
export interface DeviceEntry {
  platform: string;
  device_id: string;
  device_name: string;
  last_accessed?: string;
  [extra: string]: unknown;
}

/** GET /api2/devices/: the account's devices (the web interface's list). */
export async function listDevices(http: HttpCore): Promise<DeviceEntry[]> {
  const op = 'list devices';
  const r = await http.json<unknown>({ op, method: 'GET', url: '/api2/devices/', retry: 'read', ctx: 'auth' });
  if (!Array.isArray(r.value)) throw protocolError(op, 'expected a list of devices');
  return r.value as DeviceEntry[];
}

/**
 * POST /api2/logout-device/: the server deletes the token this call carries (seahub's
 * LogoutDeviceView, what the desktop client calls at logout). Refused (401) when it is gone already.
 */
export async function logoutDevice(http: HttpCore): Promise<void> {
  // not retried: a retry after a lost answer would meet the deleted token's 401
  await http.done({ op: 'logout device', method: 'POST', url: '/api2/logout-device/', retry: 'never', ctx: 'auth' });
}

/** DELETE /api2/devices/ (platform, device_id): unlinks one device of the account (the web interface's "Unlink"). */
export async function unlinkDevice(http: HttpCore, platform: string, deviceId: string): Promise<void> {
  await http.done({
    op: 'unlink device',
    method: 'DELETE',
    url: '/api2/devices/',
    form: { platform, device_id: deviceId },
    retry: 'idempotent',
  });
}

/** GET /api2/default-repo/: the id of the account's default library ("My Library"), or null when it has none. */
export async function defaultLibrary(http: HttpCore): Promise<string | null> {
  const op = 'default library';
  const r = await http.json({ op, method: 'GET', url: '/api2/default-repo/', retry: 'read' });
  const o = expectObject<{ exists?: unknown; repo_id?: unknown }>(op, r.value, 'exists');
  return o.exists === true && typeof o.repo_id === 'string' && o.repo_id ? o.repo_id : null;
}
