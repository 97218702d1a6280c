// What a password login tells the server about this machine, so that the
// server gives the mount a token of its own (seahub's TokenV2), listed with
// the account's devices in the web interface and revocable there, instead of
// the account's one token shared by every login without device fields.
//
// Seahub wants a 40-character device_id for desktop platforms (get_token_v2)
// and gives the same token to the same (account, platform, device_id): the id
// must stay the same for this machine and account. It is derived, never
// stored per account: an HMAC of /etc/machine-id (which machine-id(5) asks
// applications not to show as it is) keyed per server and account; a machine
// without one gets a random key kept once in the user's config folder (0600).
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LoginDevice } from '../../client/types.js';
import { configDir } from './store.js';

/** seafs's version, from its package.json (src/cli/accounts and dist/cli/accounts are both three levels down) */
function clientVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return `seafs ${pkg.version ?? ''}`.trim();
  } catch {
    return 'seafs';
  }
}

export interface DeviceSources {
  /** files holding the machine's id, the first readable wins */
  machineIdFiles?: string[];
  /** where a key of our own is kept when there is no machine id */
  configDir?: string;
  hostname?: string;
}

/** the machine's secret: its machine id, or a random key made once and kept (0600) */
function machineKey(src: DeviceSources): string {
  for (const f of src.machineIdFiles ?? ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = readFileSync(f, 'utf8').trim();
      if (id) return id;
    } catch {
      /* not there: the next one */
    }
  }
  const dir = src.configDir ?? configDir();
  const file = path.join(dir, 'device-key');
  try {
    const k = readFileSync(file, 'utf8').trim();
    if (k) return k;
  } catch {
    /* made below */
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    // 'wx': two mounts starting at once keep the first key
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return readFileSync(file, 'utf8').trim();
}

/** The device fields of a login of `username` at `serverUrl` from this machine. */
export function loginDevice(serverUrl: string, username: string, src: DeviceSources = {}): LoginDevice {
  let server = serverUrl;
  try {
    server = new URL(serverUrl).origin;
  } catch {
    /* kept as given */
  }
  const deviceId = createHmac('sha1', machineKey(src))
    .update(`seafs device\u0000${server}\u0000${username.trim().toLowerCase()}`)
    .digest('hex');
  // seahub's TokenV2 columns hold 40 characters of name, 16 of each version (MySQL refuses more)
  return {
    platform: 'linux',
    deviceId,
    deviceName: (src.hostname ?? os.hostname()).slice(0, 40),
    clientVersion: clientVersion().slice(0, 16),
    platformVersion: os.release().slice(0, 16),
  };
}
