// The device a password login names: an id stable for this machine and
// account (40 hex, as seahub wants for desktop platforms), never the machine
// id itself, and a key of our own (0600) where there is no machine id.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loginDevice } from '../../../src/cli/accounts/device.js';

const dirs: string[] = [];
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'seafs-device-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('loginDevice', () => {
  it('derives a 40-hex id from the machine id, the same for the same server and account only', () => {
    const d = scratch();
    const mid = path.join(d, 'machine-id');
    writeFileSync(mid, '0123456789abcdef0123456789abcdef\n');
    const src = { machineIdFiles: [mid], configDir: path.join(d, 'cfg'), hostname: 'box' };
    const a = loginDevice('https://cloud.example.com/', 'Me@Example.com', src);
    expect(a).toMatchObject({ platform: 'linux', deviceName: 'box' });
    expect(a.deviceId).toMatch(/^[0-9a-f]{40}$/);
    expect(a.deviceId).not.toContain('0123456789abcdef');
    expect(loginDevice('https://cloud.example.com', 'me@example.com', src).deviceId).toBe(a.deviceId);
    expect(loginDevice('https://cloud.example.com', 'you@example.com', src).deviceId).not.toBe(a.deviceId);
    expect(loginDevice('https://other.example.com', 'me@example.com', src).deviceId).not.toBe(a.deviceId);
    // another machine
    writeFileSync(mid, 'ffffffffffffffffffffffffffffffff\n');
    expect(loginDevice('https://cloud.example.com', 'me@example.com', src).deviceId).not.toBe(a.deviceId);
    expect(a.clientVersion).toMatch(/^seafs \d+\.\d+\.\d+$/);
    expect(a.platformVersion!.length).toBeLessThanOrEqual(16);
  });

  it('without a machine id, keeps a random key of its own (0600) and reuses it', () => {
    const d = scratch();
    const cfg = path.join(d, 'cfg');
    const src = { machineIdFiles: [path.join(d, 'none')], configDir: cfg, hostname: 'h'.repeat(60) };
    const a = loginDevice('https://cloud.example.com', 'me@example.com', src);
    const key = path.join(cfg, 'device-key');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(loginDevice('https://cloud.example.com', 'me@example.com', src).deviceId).toBe(a.deviceId);
    expect(a.deviceName).toBe('h'.repeat(40)); // seahub's column holds 40
  });
});
