import { afterEach, describe, expect, it, vi } from 'vitest';
import { runtimeDir } from '../../../src/cli/control/control-socket.js';

describe('the control sockets dir', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('is /run/seafs for root whatever XDG_RUNTIME_DIR says, so a boot-time mount and a login shell meet', () => {
    vi.spyOn(process, 'getuid').mockReturnValue(0);
    vi.stubEnv('SEAFS_RUNTIME_DIR', '');
    vi.stubEnv('XDG_RUNTIME_DIR', '/run/user/0');
    expect(runtimeDir()).toBe('/run/seafs');
    vi.stubEnv('XDG_RUNTIME_DIR', '');
    expect(runtimeDir()).toBe('/run/seafs');
  });

  it("is the user's XDG runtime dir for other users, and SEAFS_RUNTIME_DIR wins for everyone", () => {
    vi.spyOn(process, 'getuid').mockReturnValue(1000);
    vi.stubEnv('SEAFS_RUNTIME_DIR', '');
    vi.stubEnv('XDG_RUNTIME_DIR', '/run/user/1000');
    expect(runtimeDir()).toBe('/run/user/1000/seafs');
    vi.stubEnv('SEAFS_RUNTIME_DIR', '/tmp/x');
    expect(runtimeDir()).toBe('/tmp/x');
  });
});
