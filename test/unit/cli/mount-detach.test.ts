// The detach watch and the wait for a detached predecessor (src/cli/mount/detach-watch.ts), with stand-ins for
// findmnt (small shell scripts), the mount table and the control socket; test/e2e/lifecycle.test.ts runs the
// real thing (umount, then a new mount at once).
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processAlive } from '../../../src/vfs/common/process-alive.js';
import { waitForDetached, watchDetach, type DetachWatch } from '../../../src/cli/mount/detach-watch.js';

const HOUR = 3_600_000;
const dirs: string[] = [];
const watches: DetachWatch[] = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** a findmnt stand-in: appends its arguments to a log, runs `body` */
function fakeFindmnt(body: string): { bin: string; calls: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'seafs-detach-'));
  dirs.push(dir);
  const bin = join(dir, 'findmnt');
  const log = join(dir, 'calls');
  writeFileSync(log, '');
  writeFileSync(bin, `#!/bin/sh\necho "$*" >> '${log}'\n${body}\n`);
  chmodSync(bin, 0o755);
  return { bin, calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

function watch(...a: Parameters<typeof watchDetach>): DetachWatch {
  const w = watchDetach(...a);
  watches.push(w);
  return w;
}

describe('noticing a detach from outside', () => {
  it('findmnt exiting 0 (the mount point was unmounted) is acted on at once, without the fallback poll', async () => {
    const f = fakeFindmnt('sleep 0.2; exit 0');
    let mounted = true;
    setTimeout(() => (mounted = false), 100);
    const fired: string[] = [];
    await new Promise<void>((resolve) =>
      watch('/mnt/x', () => (fired.push('detached'), resolve()), {
        findmnt: f.bin,
        everyMs: HOUR,
        mounted: async () => mounted,
      }).arm(),
    );
    expect(fired).toEqual(['detached']);
    expect(f.calls()).toEqual(['--poll=umount --first-only --noheadings --mountpoint /mnt/x']);
  });

  it('nothing fires before arm() (the mount is not up yet); an answer that came before is acted on then', async () => {
    const f = fakeFindmnt('exit 0');
    let fired = 0;
    const w = watch('/mnt/x', () => fired++, { findmnt: f.bin, everyMs: 10, mounted: async () => false });
    for (let i = 0; i < 100 && f.calls().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    expect(fired).toBe(0);
    w.arm();
    for (let i = 0; i < 100 && fired === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(fired).toBe(1);
  });

  it('an answer while still mounted (something over the mount point came and went) leaves the poll, with no second findmnt', async () => {
    const f = fakeFindmnt('exit 0');
    let checks = 0;
    await new Promise<void>((resolve) =>
      // still mounted when findmnt returns, gone at the poll's second look
      watch('/mnt/x', resolve, { findmnt: f.bin, everyMs: 50, mounted: async () => ++checks <= 2 }).arm(),
    );
    expect(f.calls()).toHaveLength(1);
  });

  it('without findmnt the poll still notices, once', async () => {
    let n = 0;
    await new Promise<void>((resolve) =>
      watch('/mnt/x', () => (n++, resolve()), {
        findmnt: '/nonexistent/findmnt',
        everyMs: 20,
        mounted: async () => false,
      }).arm(),
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(n).toBe(1);
  });

  it('close() ends a findmnt still waiting, and nothing fires after it', async () => {
    const f = fakeFindmnt('echo $$ > "$(dirname "$0")/pid"; exec sleep 30');
    let fired = false;
    const w = watch('/mnt/x', () => (fired = true), { findmnt: f.bin, everyMs: 20, mounted: async () => true });
    w.arm();
    const pidFile = join(f.bin, '..', 'pid');
    for (let i = 0; i < 200 && !readFileSafe(pidFile); i++) await new Promise((r) => setTimeout(r, 20));
    const pid = Number(readFileSafe(pidFile));
    expect(pid).toBeGreaterThan(0);
    w.close();
    for (let i = 0; i < 200 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(processAlive(pid)).toBe(false);
    expect(fired).toBe(false);
  });
});

describe('a new mount where a detached seafs is still uploading', () => {
  it('waits for that process to exit, saying so in one line', async () => {
    const lines: string[] = [];
    let aliveChecks = 0;
    const busy = await waitForDetached('/mnt/x', (l) => lines.push(l), {
      stepMs: 10,
      alive: async () => ++aliveChecks < 5,
      mounted: async () => false,
      pid: async () => null,
    });
    expect(busy).toBeNull();
    expect(aliveChecks).toBe(5);
    expect(lines).toEqual(['waiting up to 10 s for the seafs process detached from /mnt/x to finish its uploads']);
  });

  it('refuses with the reason when it is still there after the wait', async () => {
    const lines: string[] = [];
    const busy = await waitForDetached('/mnt/x', (l) => lines.push(l), {
      waitMs: 100,
      stepMs: 10,
      alive: async () => true,
      mounted: async () => false,
      pid: async () => process.pid,
    });
    expect(lines).toEqual([
      `waiting up to 0.1 s for the seafs process (pid ${process.pid}) detached from /mnt/x to finish its uploads`,
    ]);
    expect(busy).toBe(
      `the seafs process (pid ${process.pid}) detached from /mnt/x is still uploading what was written there: mount again once it has exited (its log says when)`,
    );
  });

  it('neither waits nor says anything when no seafs answers, or when its mount is still attached', async () => {
    const lines: string[] = [];
    const say = (l: string) => lines.push(l);
    expect(await waitForDetached('/mnt/x', say, { alive: async () => false, mounted: async () => false })).toBeNull();
    expect(await waitForDetached('/mnt/x', say, { alive: async () => true, mounted: async () => true })).toBeNull();
    expect(lines).toEqual([]);
  });
});

function readFileSafe(p: string): string {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return '';
  }
}
