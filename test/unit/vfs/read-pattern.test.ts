// The read classifier (src/vfs/read/pattern.ts), one row per kind of read the
// kernel sends: what the window becomes, where the handle's reads have got
// to, and whether the read counts toward fetching the whole file.
import { describe, expect, it } from 'vitest';
import { classifyRead, type PatternState, type PatternStep } from '../../../src/vfs/read/pattern.js';

const KiB = 1024;
const MiB = 1024 * KiB;
// the reader's defaults
const params = { chunk: 128 * KiB, initialWindow: 512 * KiB, maxWindow: 16 * MiB, jumpAhead: 8 * MiB };

interface Row {
  what: string;
  pat: PatternState;
  offset: number;
  len: number;
  size: number;
  want: PatternStep;
}

const rows: Row[] = [
  {
    what: 'a fresh handle reading from the start opens the initial window',
    pat: { next: 0, window: 0 },
    offset: 0,
    len: 128 * KiB,
    size: 100 * MiB,
    want: { window: 512 * KiB, next: 128 * KiB, random: false },
  },
  {
    what: 'the next read in order doubles the window',
    pat: { next: 128 * KiB, window: 512 * KiB, started: true },
    offset: 128 * KiB,
    len: 128 * KiB,
    size: 100 * MiB,
    want: { window: 1 * MiB, next: 256 * KiB, random: false },
  },
  {
    what: 'the window stops growing at the maximum',
    pat: { next: 64 * MiB, window: 16 * MiB, started: true },
    offset: 64 * MiB,
    len: 128 * KiB,
    size: 1024 * MiB,
    want: { window: 16 * MiB, next: 64 * MiB + 128 * KiB, random: false },
  },
  {
    what: 'a read arriving out of order behind the last one, within the window, is still sequential and does not move the position back',
    pat: { next: 1 * MiB, window: 1 * MiB, started: true },
    offset: 512 * KiB,
    len: 128 * KiB,
    size: 100 * MiB,
    want: { window: 2 * MiB, next: 1 * MiB, random: false },
  },
  {
    what: 'a fresh handle starting mid-file is random but does not count toward a whole-file fill',
    pat: { next: 0, window: 0 },
    offset: 10 * MiB,
    len: 128 * KiB,
    size: 100 * MiB,
    want: { window: 0, next: 10 * MiB + 128 * KiB, random: false },
  },
  {
    what: 'a handle that has read before jumping back far counts as random',
    pat: { next: 50 * MiB, window: 0, started: true },
    offset: 10 * MiB,
    len: 4 * KiB,
    size: 100 * MiB,
    want: { window: 0, next: 10 * MiB + 4 * KiB, random: true },
  },
  {
    what: 'a random reader stepping forward by under 1/64 of the file (page-cache holes in order) becomes sequential',
    pat: { next: 10 * MiB, window: 0, started: true },
    offset: 10 * MiB + 1200 * KiB,
    len: 4 * KiB,
    size: 100 * MiB,
    want: { window: 512 * KiB, next: 10 * MiB + 1204 * KiB, random: false },
  },
  {
    what: 'a random reader stepping forward by more than 1/64 of the file stays random, without counting toward a fill',
    pat: { next: 10 * MiB, window: 0, started: true },
    offset: 20 * MiB,
    len: 4 * KiB,
    size: 100 * MiB,
    want: { window: 0, next: 20 * MiB + 4 * KiB, random: false },
  },
  {
    what: 'a sequential reader jumping far ahead (the page cache lost a stretch) restarts with the initial window',
    pat: { next: 10 * MiB, window: 4 * MiB, started: true },
    offset: 30 * MiB,
    len: 128 * KiB,
    size: 1024 * MiB,
    want: { window: 512 * KiB, next: 30 * MiB + 128 * KiB, random: false },
  },
  {
    what: 'a sequential reader skipping ahead within the jump limit keeps growing its window',
    pat: { next: 10 * MiB, window: 1 * MiB, started: true },
    offset: 14 * MiB,
    len: 128 * KiB,
    size: 1024 * MiB,
    want: { window: 2 * MiB, next: 14 * MiB + 128 * KiB, random: false },
  },
  {
    what: 'a sequential reader jumping far back becomes random and counts toward a fill',
    pat: { next: 500 * MiB, window: 4 * MiB, started: true },
    offset: 10 * MiB,
    len: 128 * KiB,
    size: 1024 * MiB,
    want: { window: 0, next: 10 * MiB + 128 * KiB, random: true },
  },
  {
    what: 'a random reader stepping a little back (within 1 MiB) stays random without counting',
    pat: { next: 5 * MiB, window: 0, started: true },
    offset: 4 * MiB + 512 * KiB,
    len: 4 * KiB,
    size: 100 * MiB,
    want: { window: 0, next: 4 * MiB + 516 * KiB, random: false },
  },
  {
    what: 'a handle re-reading from offset 0 opens the initial window again',
    pat: { next: 40 * MiB, window: 0, started: true },
    offset: 0,
    len: 128 * KiB,
    size: 100 * MiB,
    want: { window: 512 * KiB, next: 40 * MiB, random: false },
  },
];

describe('read pattern classifier', () => {
  for (const r of rows) {
    it(r.what, () => {
      const before = { ...r.pat };
      expect(classifyRead(r.pat, r.offset, Math.min(r.size, r.offset + r.len), r.size, params)).toEqual(r.want);
      // a pure function: the handle's state is the caller's to update
      expect(r.pat).toEqual(before);
    });
  }
});
