// The mount process's V8 flags (src/cli/mount/v8-tuning.ts) are set at run
// time, after the heap exists: these tests check, in a fresh node process,
// that each one still takes effect that way (the young generation's size
// itself would not), and that a process without them behaves otherwise.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { mountNodeFlags, mountProcessEnv, mountReadyV8Flags, mountV8Flags } from '../../../src/cli/mount/v8-tuning.js';

/**
 * runs in a fresh node: sets the given flags at run time, runs a start-up's worth of hot code, sets the flags of a
 * mount that is up, then reports the young generation, the wasm tier and whether hot functions got TurboFan's code
 * (of start-up, and after)
 */
const PROBE = `
const v8 = require('node:v8');
for (const f of JSON.parse(process.argv[1])) v8.setFlagsFromString(f);
function start(a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 3; return s; }
const arr = Array.from({ length: 1000 }, (_, i) => i);
const optimized = (fn) => (%GetOptimizationStatus(fn) & 16) !== 0;
let y = 0;
const startUntil = Date.now() + 1500;
const startRound = () => {
  for (let i = 0; i < 2000; i++) y += start(arr);
  if (!optimized(start) && Date.now() < startUntil) return setTimeout(startRound, 20);
  for (const f of JSON.parse(process.argv[2])) v8.setFlagsFromString(f);
  afterStart();
};
setTimeout(startRound, 0);
function afterStart() {
// allocation with survivors, as a busy mount does: V8 grows the young generation when it may
let keep = [];
for (let i = 0; i < 2e6; i++) { const o = { a: i, b: 'x' + i }; if (i % 3 === 0) keep.push(o); if (keep.length > 100000) keep = []; }
const ns = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
// (module (func (export "f") (param i32) (result i32) local.get 0 i32.const 1 i32.add)), called hot
const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,6,1,96,1,127,1,127,3,2,1,0,7,5,1,1,102,0,0,10,9,1,7,0,32,0,65,1,106,11]);
const { f } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
// a hot JavaScript function, which TurboFan optimizes when it may (status bit 4: optimized)
function hot(a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 2; return s; }
const turbofanned = () => optimized(hot);
// tier-up happens in the background: keep calling (and yielding) for up to 3 s or until both have happened
let x = 0;
const until = Date.now() + 3000;
const round = () => {
  for (let i = 0; i < 1e6; i++) x = f(x);
  for (let i = 0; i < 2000; i++) x += hot(arr);
  if ((%IsLiftoffFunction(f) || !turbofanned()) && Date.now() < until) return setTimeout(round, 20);
  console.log(JSON.stringify({ newSpace: ns.space_size, liftoff: %IsLiftoffFunction(f), startTurbofan: optimized(start), turbofan: turbofanned() }));
};
round();
}
`;

interface Probed {
  newSpace: number;
  liftoff: boolean;
  startTurbofan: boolean;
  turbofan: boolean;
}

function probe(flags: string[], ready: string[] = []): Probed {
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '-e', PROBE, JSON.stringify(flags), JSON.stringify(ready)],
    {
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as Probed;
}

describe('the mount process V8 flags', () => {
  it('set at run time, they keep the young generation at 1 MiB per semi-space, WebAssembly in Liftoff and JavaScript out of TurboFan', () => {
    const tuned = probe(mountV8Flags({}), mountReadyV8Flags({}));
    expect(tuned.newSpace).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(tuned.liftoff).toBe(true);
    expect(tuned.startTurbofan).toBe(false);
    // nor once the mount is up
    expect(tuned.turbofan).toBe(false);
    // the same process without them: V8 grows the young generation and tiers the hot functions up
    const plain = probe([]);
    expect(plain.newSpace).toBeGreaterThan(2 * 1024 * 1024);
    expect(plain.liftoff).toBe(false);
    expect(plain.startTurbofan).toBe(true);
  });

  it('SEAFS_TURBOFAN=1 never turns TurboFan off, =mounted turns it on once the mount is up', () => {
    expect(mountV8Flags({ SEAFS_TURBOFAN: '1' })).not.toContain('--no-turbofan');
    expect(mountReadyV8Flags({ SEAFS_TURBOFAN: '1' })).toEqual([]);
    const later = { SEAFS_TURBOFAN: 'mounted' };
    const probed = probe(mountV8Flags(later), mountReadyV8Flags(later));
    expect(probed.startTurbofan).toBe(false);
    expect(probed.turbofan).toBe(true);
  });

  it('SEAFS_SEMI_SPACE_MB picks a young generation size for the --daemon command line instead of the limit', () => {
    expect(mountV8Flags({ SEAFS_SEMI_SPACE_MB: '8' })).toEqual(['--liftoff-only', '--no-turbofan']);
    expect(mountNodeFlags({ SEAFS_SEMI_SPACE_MB: '8' })).toEqual(['--max-semi-space-size=8']);
    expect(mountNodeFlags({})).toEqual([]);
    expect(mountV8Flags({ SEAFS_SEMI_SPACE_MB: 'lots' })).toContain('--semi-space-growth-factor=1');
  });

  it('a mount process started by this one gets two malloc arenas, unless the environment chose otherwise', () => {
    expect(mountProcessEnv({ HOME: '/h' })).toEqual({ HOME: '/h', MALLOC_ARENA_MAX: '2' });
    expect(mountProcessEnv({ MALLOC_ARENA_MAX: '8' }).MALLOC_ARENA_MAX).toBe('8');
  });
});
