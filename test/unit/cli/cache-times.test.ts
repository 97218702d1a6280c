import { describe, expect, it } from 'vitest';
import { cacheTimes } from '../../../src/cli/mount/cache-times.js';

describe('the lag allowed by --dir-cache-time, split between the listings and the kernel', () => {
  it('by default the kernel keeps attributes for half of the 10 s and listings answer for the other half', () => {
    expect(cacheTimes()).toEqual({ kernelSec: 5, listingMs: 5000 });
  });

  it('a dir-cache-time given alone is split in two halves', () => {
    expect(cacheTimes(30)).toEqual({ kernelSec: 15, listingMs: 15_000 });
    expect(cacheTimes(1)).toEqual({ kernelSec: 0.5, listingMs: 500 });
  });

  it('an attr-timeout given is taken from the dir-cache-time, so their sum stays within it', () => {
    expect(cacheTimes(10, 2)).toEqual({ kernelSec: 2, listingMs: 8000 });
    expect(cacheTimes(undefined, 3)).toEqual({ kernelSec: 3, listingMs: 7000 });
    // no kernel cache: the listings have all of it
    expect(cacheTimes(10, 0)).toEqual({ kernelSec: 0, listingMs: 10_000 });
  });

  it('an attr-timeout above half the dir-cache-time leaves the listings half of it, never nothing', () => {
    expect(cacheTimes(1, 1)).toEqual({ kernelSec: 1, listingMs: 500 });
    expect(cacheTimes(10, 60)).toEqual({ kernelSec: 60, listingMs: 5000 });
    expect(cacheTimes(0, 0)).toEqual({ kernelSec: 0, listingMs: 0 });
  });
});
