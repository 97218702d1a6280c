// utimens's special times as the fixed binding passes them (scripts/fix-fuse-native.mjs)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestedMtime, UTIME_NOW_MS, UTIME_OMIT_MS } from '../../../src/fuse/utime.js';

const ROOT = path.join(import.meta.dirname, '..', '..', '..');

describe('utimens times from the binding', () => {
  it('UTIME_NOW is the current time, UTIME_OMIT leaves the time, a real time is itself', () => {
    expect(requestedMtime(UTIME_NOW_MS, 1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(requestedMtime(UTIME_OMIT_MS, 1_700_000_000_123)).toBeNull();
    expect(requestedMtime(981_173_106_000)).toBe(981_173_106_000);
    // touch -d @5: an early time is a time, not a special value
    expect(requestedMtime(5_000)).toBe(5_000);
  });

  it("the C side's values, as the binding joins their two 32-bit halves", () => {
    const c = readFileSync(path.join(ROOT, 'scripts', 'fix-fuse-native.mjs'), 'utf8');
    const value = (name: string) => BigInt(new RegExp(`== ${name}\\) return (\\d+)ULL`).exec(c)![1]);
    const joined = (n: bigint) => Number(n & 0xffffffffn) + Number(n >> 32n) * 4294967296;
    expect(joined(value('UTIME_NOW'))).toBe(UTIME_NOW_MS);
    expect(joined(value('UTIME_OMIT'))).toBe(UTIME_OMIT_MS);
  });

  it('an earlier build passes both as 1073 ms: the time is left alone, as that build always did', () => {
    expect(requestedMtime(1073)).toBeNull();
  });
});
