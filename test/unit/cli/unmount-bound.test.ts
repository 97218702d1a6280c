import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { UnmountBound, unmountWaitMs, type UploadProgress } from '../../../src/cli/mount/unmount-wait.js';

describe('how long an unmount waits for its uploads', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** a bound on a fake clock: `at(ms, progress)` looks once at that time */
  function setup() {
    const dir = mkdtempSync(join(tmpdir(), 'seafs-bound-'));
    dirs.push(dir);
    let now = 0;
    let p: UploadProgress = { landed: 0, failures: 0, offline: false };
    const b = new UnmountBound({ waitMs: 30_000, cacheDir: dir, sample: () => p, now: () => now });
    const at = (ms: number, next: Partial<UploadProgress> = {}) => {
      now = ms;
      p = { ...p, ...next };
      b.tick();
      return b.stopped;
    };
    return { b, at, dir };
  }

  it('gives up 30 s after the last file landed once the server is offline', async () => {
    const { b, at } = setup();
    expect(at(1_000, { offline: true })).toBeNull();
    expect(at(29_000)).toBeNull();
    expect(at(30_000)).toMatch(/server is unreachable and nothing was uploaded for 30 s/);
    await expect(b.gaveUp).resolves.toMatch(/unreachable/);
  });

  it('waits as long as files land (a slow server), and counts from the last one', () => {
    const { at } = setup();
    for (let t = 10_000; t <= 120_000; t += 10_000)
      expect(at(t, { landed: t / 10_000, failures: t / 10_000 })).toBeNull();
    expect(at(149_000, { failures: 99 })).toBeNull();
    expect(at(150_000)).toMatch(/every upload failed for 30 s/);
  });

  it('a long upload without failures is not given up (the server answers, slowly)', () => {
    const { at } = setup();
    expect(at(300_000)).toBeNull();
    // a frozen server: the attempt fails only after --timeout; then nothing landed for long: at once
    expect(at(330_000, { failures: 1 })).toMatch(/every upload failed/);
  });

  it('a cache folder removed gives up at once, with a line that says so', () => {
    const { at, dir } = setup();
    expect(at(100)).toBeNull();
    rmSync(dir, { recursive: true });
    expect(at(200)).toMatch(/the cache folder .* was removed/);
  });

  it('a second signal gives up at once; the reason is kept', async () => {
    const { b, at } = setup();
    b.abort('a second SIGTERM');
    await expect(b.gaveUp).resolves.toBe('a second SIGTERM');
    expect(at(100_000, { offline: true })).toBe('a second SIGTERM');
  });

  it('SEAFS_UNMOUNT_WAIT_MS sets the wait; anything else is 30 s', () => {
    expect(unmountWaitMs({ SEAFS_UNMOUNT_WAIT_MS: '2000' })).toBe(2000);
    expect(unmountWaitMs({ SEAFS_UNMOUNT_WAIT_MS: 'x' })).toBe(30_000);
    expect(unmountWaitMs({})).toBe(30_000);
  });
});
