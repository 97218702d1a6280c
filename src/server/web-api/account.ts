// Session, server and account endpoints: ping, auth-token (with two-factor),
// server-info, account info, and the administrator's /api2/accounts/.
import type { Ctx, Req } from '../context.js';
import { checkPassword, hashPassword } from '../store/db.js';
import { deviceLogin } from '../auth/devices.js';
import { HttpError, isoTime, sendJson } from '../http.js';
import type { Route } from '../router.js';
import { base32Decode, verifyTotp } from '../auth/totp.js';

/** The e-mail path segment of /api2/accounts/{email}/ (400 when not decodable). */
function emailParam(r: Req): string {
  try {
    return decodeURIComponent(r.params[0]);
  } catch {
    throw new HttpError(400, 'Email invalid.');
  }
}

async function authToken(ctx: Ctx, r: Req): Promise<void> {
  const form = await r.form({ json: true });
  const username = form.get('username') ?? form.get('login_id') ?? form.get('email');
  const password = form.get('password');
  const device = deviceLogin(form);
  if (!username) throw new HttpError(400, '', { username: ['This field is required.'] });
  if (!password) throw new HttpError(400, '', { password: ['This field is required.'] });
  const accountKey = `user:${username.toLowerCase()}`;
  const keys = [accountKey, `ip:${r.raw.socket.remoteAddress}`];
  ctx.loginGuard.check(keys);
  const user = ctx.db.user(username);
  if (!user?.isActive || !checkPassword(password, user.passwordHash)) {
    ctx.loginGuard.failed(keys);
    throw new HttpError(400, '', { non_field_errors: ['Unable to login with provided credentials.'] });
  }
  if (user.totpSecret) {
    const otp = (r.raw.headers['x-seafile-otp'] ?? r.raw.headers['x-service-otp']) as string | undefined;
    if (!otp) {
      throw new HttpError(
        400,
        '',
        { non_field_errors: ['Two factor auth token is missing.'] },
        { 'X-Seafile-OTP': 'required' },
      );
    }
    const step = verifyTotp(user.totpSecret, otp, Date.now(), user.totpLastStep ?? -1);
    if (step === null) {
      ctx.loginGuard.failed(keys);
      throw new HttpError(
        400,
        '',
        { non_field_errors: ['Two factor auth token is invalid.'] },
        { 'X-Seafile-OTP': 'required' },
      );
    }
    user.totpLastStep = step;
    await ctx.db.save();
  }
  ctx.loginGuard.succeeded(accountKey);
  if (!device) return sendJson(r.res, 200, { token: ctx.db.tokenOf(user) });
  const token = ctx.db.deviceToken(user, device, r.raw.socket.remoteAddress ?? '');
  await ctx.db.save();
  sendJson(r.res, 200, { token });
}

async function accountInfo(ctx: Ctx, r: Req): Promise<void> {
  const u = r.user!;
  const usage = await ctx.usage(u.email);
  const total = u.quota < 0 ? -2 : u.quota;
  sendJson(r.res, 200, {
    usage,
    total,
    email: u.email,
    name: u.name,
    login_id: '',
    // from 11.0 `email` is the account's virtual id and this the e-mail it logs in with
    contact_email: u.contactEmail ?? u.email,
    institution: '',
    is_staff: u.isStaff,
    avatar_url: `${r.base}/media/avatars/default.png`,
    space_usage: total > 0 ? `${((usage / total) * 100).toFixed(2)}%` : '0%',
    // seahub's e-mail notice settings (this server sends no mail) and department (it has none)
    department: '',
    file_updates_email_interval: 0,
    collaborate_email_interval: 0,
  });
}

function accountDetail(ctx: Ctx, email: string, usage: number) {
  const u = ctx.db.user(email)!;
  return {
    id: u.id,
    email: u.email,
    // 11.0 and later, where `email` is the virtual id; seahub 10's admin view has no such field
    ...(u.contactEmail ? { contact_email: u.contactEmail } : {}),
    name: u.name,
    note: u.note,
    is_staff: u.isStaff,
    is_active: u.isActive,
    create_time: u.createTime,
    usage,
    total: u.quota < 0 ? -2 : u.quota,
    two_factor_auth_enabled: !!u.totpSecret,
    // what seahub's account detail also names: this server has no departments, institutions or login ids
    department: '',
    institution: '',
    login_id: '',
    list_in_address_book: false,
  };
}

function bool(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  return ['true', '1', 'yes', 'on'].includes(v.toLowerCase());
}

/**
 * PUT /api2/accounts/{email}/ creates (201, needs `password`) or updates (200).
 * Fields: password, is_staff, is_active, name, note, storage (quota in MB; a
 * negative value means unlimited) and, specific to this server, totp_secret
 * (base32; switches two-factor auth on, empty switches it off).
 */
async function putAccount(ctx: Ctx, r: Req): Promise<void> {
  const email = emailParam(r);
  const form = await r.form({ json: true });
  let user = ctx.db.user(email);
  const created = !user;
  if (!user) {
    const pw = form.get('password');
    // as seahub's serializer words it
    if (!pw) throw new HttpError(400, '', { error_msg: { password: ['This field is required.'] } });
    if (!/^[^@\s/]+@[^@\s/]+$/.test(email)) throw new HttpError(400, 'Email invalid.');
    user = ctx.db.createUser(email, pw, bool(form.get('is_staff')) ?? false);
  } else {
    const known = ['password', 'is_staff', 'is_active', 'name', 'note', 'storage', 'totp_secret'];
    if (!known.some((k) => form.get(k) !== undefined))
      throw new HttpError(400, 'password, is_staff, is_active, name, note or storage required');
    if (form.get('password')) user.passwordHash = hashPassword(form.get('password')!);
    if (form.get('is_staff') !== undefined) user.isStaff = bool(form.get('is_staff'))!;
  }
  if (form.get('is_active') !== undefined) user.isActive = bool(form.get('is_active'))!;
  if (form.get('name') !== undefined) user.name = form.get('name')!;
  if (form.get('note') !== undefined) user.note = form.get('note')!;
  const storage = form.get('storage');
  if (storage !== undefined) {
    const mb = Number(storage);
    if (!Number.isFinite(mb)) throw new HttpError(400, 'storage invalid.');
    user.quota = mb < 0 ? -2 : Math.floor(mb * 1_000_000);
  }
  const secret = form.get('totp_secret');
  if (secret !== undefined) {
    if (secret) {
      try {
        if (base32Decode(secret).length < 10) throw new Error('short');
      } catch {
        throw new HttpError(400, 'totp_secret must be base32 (at least 16 characters).');
      }
    }
    user.totpSecret = secret;
    delete user.totpLastStep;
  }
  await ctx.db.save();
  // seahub answers both with the account as it now is
  const detail = accountDetail(ctx, email, await ctx.usage(email));
  if (created) {
    sendJson(r.res, 201, detail, { Location: `${r.base}/api2/accounts/${encodeURIComponent(email)}/` });
  } else {
    sendJson(r.res, 200, detail);
  }
}

export const accountRoutes: Route[] = [
  { method: 'GET', path: '/api2/ping', auth: 'none', handler: async (_c, r) => sendJson(r.res, 200, 'pong') },
  { method: 'GET', path: '/api2/auth/ping', auth: 'user', handler: async (_c, r) => sendJson(r.res, 200, 'pong') },
  { method: 'POST', path: '/api2/auth-token', auth: 'none', handler: authToken },
  {
    method: 'GET',
    path: '/api2/devices',
    auth: 'user',
    handler: async (ctx, r) =>
      sendJson(
        r.res,
        200,
        // seahub also lists each device's token (`key`): left out here
        ctx.db.devices.of(r.user!.email).map((d) => ({
          user: d.user,
          platform: d.platform,
          device_id: d.deviceId,
          device_name: d.deviceName,
          client_version: d.clientVersion,
          platform_version: d.platformVersion,
          last_accessed: isoTime(Math.floor(d.lastAccessed / 1000)),
          last_login_ip: d.lastLoginIp,
          wiped_at: null,
          is_desktop_client: ['windows', 'linux', 'mac'].includes(d.platform),
        })),
      ),
  },
  {
    method: 'DELETE',
    path: '/api2/devices',
    auth: 'user',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const platform = form.get('platform');
      const deviceId = form.get('device_id');
      if (!platform) throw new HttpError(400, 'platform invalid.');
      if (!deviceId) throw new HttpError(400, 'device_id invalid.');
      ctx.db.devices.remove(r.user!.email, platform, deviceId);
      await ctx.db.save();
      sendJson(r.res, 200, { success: true });
    },
  },
  {
    // seahub's LogoutDeviceView: deletes the token the call carries
    method: 'POST',
    path: '/api2/logout-device',
    auth: 'user',
    handler: async (ctx, r) => {
      const token = /^\S+\s+(\S+)/.exec(r.raw.headers.authorization ?? '')?.[1];
      if (token) ctx.db.revokeToken(token);
      await ctx.db.save();
      sendJson(r.res, 200, {});
    },
  },
  {
    method: 'GET',
    path: '/api2/server-info',
    auth: 'none',
    // seahub api2/views_misc.py ServerInfoView: "seafile-pro" only on Pro, search only where it is installed
    handler: async (c, r) =>
      sendJson(r.res, 200, {
        version: c.serverVersion,
        encrypted_library_version: 2,
        features: c.pro ? ['seafile-basic', 'seafile-pro', 'file-search'] : ['seafile-basic'],
      }),
  },
  { method: 'GET', path: '/api2/account/info', auth: 'user', handler: accountInfo },
  {
    method: 'GET',
    path: '/api2/client-login',
    auth: 'user',
    handler: async (ctx, r) => {
      if (r.user!.totpSecret) return sendJson(r.res, 200, {});
      sendJson(r.res, 200, `${r.base}/client-login/?token=${ctx.db.tokenOf(r.user!)}`);
    },
  },
  {
    method: 'GET',
    path: '/api2/accounts',
    auth: 'admin',
    handler: async (ctx, r) => {
      const start = Number(r.query.get('start') ?? 0);
      const limit = Number(r.query.get('limit') ?? 100);
      let users = ctx.db.allUsers();
      if (!(start === -1 && limit === -1))
        users = users.slice(Math.max(0, start), Math.max(0, start) + Math.max(0, limit));
      sendJson(
        r.res,
        200,
        users.map((u) => ({ email: u.email, source: 'DB' })),
      );
    },
  },
  {
    method: 'GET',
    path: '/api2/accounts/:seg',
    auth: 'admin',
    handler: async (ctx, r) => {
      const email = emailParam(r);
      if (!ctx.db.user(email)) throw new HttpError(404, 'User not found.');
      sendJson(r.res, 200, accountDetail(ctx, email, await ctx.usage(email)));
    },
  },
  { method: 'PUT', path: '/api2/accounts/:seg', auth: 'admin', handler: putAccount },
  {
    method: 'POST',
    path: '/api2/accounts/:seg',
    auth: 'admin',
    handler: async (ctx, r) => {
      const form = await r.form({ json: true });
      const email = emailParam(r);
      if (
        form.get('op') !== 'migrate' ||
        !form.get('to_user') ||
        !ctx.db.user(form.get('to_user')!) ||
        !ctx.db.user(email)
      ) {
        throw new HttpError(400, 'Missing or invalid arguments.');
      }
      ctx.db.migrateRepos(email, form.get('to_user')!);
      await ctx.db.save();
      sendJson(r.res, 200, 'success');
    },
  },
  {
    method: 'DELETE',
    path: '/api2/accounts/:seg',
    auth: 'admin',
    handler: async (ctx, r) => {
      const email = emailParam(r);
      const u = ctx.db.user(email);
      if (u) {
        if (u.email === ctx.opts.adminEmail || u.contactEmail === ctx.opts.adminEmail)
          throw new HttpError(403, 'Cannot delete the administrator.');
        const gone = ctx.db.deleteUser(u.email);
        await ctx.db.save();
        for (const id of gone) await ctx.heads.remove(id);
      }
      sendJson(r.res, 200, { success: true });
    },
  },
];
