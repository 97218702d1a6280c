// Per-device API tokens, as seahub's TokenV2: a login that names its
// platform, device_id and device_name gets a token of its own for that
// (account, platform, device), the same one at every later login from that
// device (name and versions updated), listed by GET /api2/devices/ and
// revoked by DELETE /api2/devices/ (platform, device_id). A login without
// those fields keeps the account's one token (seahub's v1 token).
import { randomBytes } from 'node:crypto';
import { HttpError } from '../http.js';
import type { SecretBox } from './secret-box.js';
import { tokenHash } from './secret-box.js';

export interface DeviceToken {
  user: string;
  platform: string;
  deviceId: string;
  deviceName: string;
  clientVersion: string;
  platformVersion: string;
  tokenHash: string;
  tokenSealed: string;
  lastAccessed: number; // epoch ms
  lastLoginIp: string;
}

export interface DevicesFile {
  devices?: DeviceToken[];
}

export interface DeviceLogin {
  platform: string;
  deviceId: string;
  deviceName: string;
  clientVersion: string;
  platformVersion: string;
}

const DESKTOP = ['windows', 'linux', 'mac'];

/**
 * The device fields of a login form: null when none is given (a v1 login).
 * Some but not all, or a device id that does not fit its platform, is the
 * 400 seahub's AuthTokenSerializer / get_token_v2 give.
 */
export function deviceLogin(form: Map<string, string> | { get(k: string): string | undefined }): DeviceLogin | null {
  const platform = form.get('platform');
  const deviceId = form.get('device_id');
  const deviceName = form.get('device_name');
  const given = [platform, deviceId, deviceName].filter((v) => v !== undefined).length;
  if (given === 0) return null;
  const refuse = (msg: string) => new HttpError(400, '', { non_field_errors: [msg] });
  if (given < 3) throw refuse('invalid params');
  const id = deviceId!;
  if (DESKTOP.includes(platform!)) {
    if (id.length !== 40) throw refuse('invalid device id');
  } else if (platform === 'android') {
    if (!/^[a-f0-9]{1,16}$/.test(id.toLowerCase())) throw refuse('invalid device id');
  } else if (platform === 'ios') {
    if (id.length !== 36) throw refuse('invalid device id');
  } else {
    throw refuse('invalid platform');
  }
  return {
    platform: platform!,
    deviceId: id,
    deviceName: deviceName!,
    clientVersion: form.get('client_version') ?? '',
    platformVersion: form.get('platform_version') ?? '',
  };
}

export class Devices {
  private list: DeviceToken[] = [];
  private byHash = new Map<string, DeviceToken>();

  load(d: DevicesFile): void {
    this.list = d.devices ?? [];
    this.reindex();
  }

  toFile(): Required<DevicesFile> {
    return { devices: this.list };
  }

  private reindex(): void {
    this.byHash = new Map(this.list.map((t) => [t.tokenHash, t]));
  }

  /** the device token with this token (its last access noted) */
  byToken(token: string): DeviceToken | undefined {
    const t = this.byHash.get(tokenHash(token));
    if (t) t.lastAccessed = Date.now();
    return t;
  }

  /** The device's token for `user`: the existing one (its name and versions updated) or a new one. */
  tokenFor(user: string, d: DeviceLogin, ip: string, box: SecretBox): string {
    let t = this.list.find((x) => x.user === user && x.platform === d.platform && x.deviceId === d.deviceId);
    if (!t) {
      const token = randomBytes(20).toString('hex');
      t = { user, ...d, tokenHash: tokenHash(token), tokenSealed: box.seal(token), lastAccessed: 0, lastLoginIp: '' };
      this.list.push(t);
      this.byHash.set(t.tokenHash, t);
    }
    Object.assign(t, {
      deviceName: d.deviceName,
      clientVersion: d.clientVersion,
      platformVersion: d.platformVersion,
      lastAccessed: Date.now(),
      lastLoginIp: ip,
    });
    return box.unseal(t.tokenSealed);
  }

  of(user: string): DeviceToken[] {
    return this.list.filter((t) => t.user === user).sort((a, b) => b.lastAccessed - a.lastAccessed);
  }

  /** revoke a device's token (nothing when there is none, as seahub answers) */
  remove(user: string, platform: string, deviceId: string): void {
    this.list = this.list.filter((t) => !(t.user === user && t.platform === platform && t.deviceId === deviceId));
    this.reindex();
  }

  /** revoke the device whose token this is */
  removeToken(token: string): void {
    const h = tokenHash(token);
    this.list = this.list.filter((t) => t.tokenHash !== h);
    this.reindex();
  }

  forgetUser(user: string): void {
    this.list = this.list.filter((t) => t.user !== user);
    this.reindex();
  }
}
