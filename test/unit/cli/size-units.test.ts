import { describe, expect, it } from 'vitest';
import { fmtBandwidth, fmtSize, parseBwLimit, parseSize } from '../../../src/cli/size-units.js';
import { parseMountOptions } from '../../../src/cli/mount/fstab-options.js';
import { blockThreshold } from '../../../src/cli/mount/run.js';
import { UserError } from '../../../src/cli/user-error.js';

const K = 1024;
const M = K * K;
const G = K * M;

describe('sizes with units', () => {
  it('reads B, K, M, G, T in any case and with KB/KiB/Ki spellings, binary, fractions allowed', () => {
    expect(parseSize('10G', '--x')).toBe(10 * G);
    expect(parseSize('512M', '--x')).toBe(512 * M);
    expect(parseSize('100k', '--x')).toBe(100 * K);
    expect(parseSize('4096B', '--x')).toBe(4096);
    expect(parseSize('4096b', '--x')).toBe(4096);
    expect(parseSize('1.5G', '--x')).toBe(1.5 * G);
    expect(parseSize('.5M', '--x')).toBe(512 * K);
    expect(parseSize('2KiB', '--x')).toBe(2 * K);
    expect(parseSize('2kb', '--x')).toBe(2 * K);
    expect(parseSize('3Mi', '--x')).toBe(3 * M);
    expect(parseSize('1T', '--x')).toBe(K * G);
    expect(parseSize(' 7 m ', '--x')).toBe(7 * M);
    expect(parseSize('0', '--x')).toBe(0);
  });

  it('a plain number is in the unit the option always had (bytes unless told)', () => {
    expect(parseSize('1000', '--x')).toBe(1000);
    expect(parseSize('4096', '--cache-max-size', M)).toBe(4096 * M);
    expect(parseSize(512, '--read-ahead', K)).toBe(512 * K);
  });

  it('refuses garbage with one line naming the option, the accepted forms and the plain unit', () => {
    for (const bad of ['lots', '', '-1', '10X', '1.2.3', '10 GB extra', 'G', '1e3', 'Bi', '5bb', 'Infinity']) {
      expect(() => parseSize(bad, '--cache-max-size', M), bad).toThrowError(UserError);
    }
    expect(() => parseSize('lots', '--cache-max-size', M)).toThrowError(
      '--cache-max-size takes a size: a number with an optional unit B, K, M, G or T (binary: 1K = 1024 B), e.g. 10G, 512M, 100k, 4096B; a plain number is MiB (got "lots")',
    );
    expect(() => parseSize('9999999999T', '--x')).toThrowError(/--x takes a size/);
  });

  it('formats sizes in the largest unit they fill, without needless decimals', () => {
    expect(fmtSize(700)).toBe('700 B');
    expect(fmtSize(K)).toBe('1 KiB');
    expect(fmtSize(1.5 * M)).toBe('1.5 MiB');
    expect(fmtSize(10 * G)).toBe('10 GiB');
  });
});

describe('bandwidth limits as rclone writes them', () => {
  it('RATE limits both directions; a plain number is KiB/s', () => {
    expect(parseBwLimit('10M')).toEqual({ up: 10 * M, down: 10 * M });
    expect(parseBwLimit('100')).toEqual({ up: 100 * K, down: 100 * K });
    expect(parseBwLimit('0.625M')).toEqual({ up: 640 * K, down: 640 * K });
    expect(parseBwLimit('1000B')).toEqual({ up: 1000, down: 1000 });
  });

  it('UP:DOWN limits each apart; off (or 0) is no limit', () => {
    expect(parseBwLimit('1M:off')).toEqual({ up: M, down: null });
    expect(parseBwLimit('512k:4M')).toEqual({ up: 512 * K, down: 4 * M });
    expect(parseBwLimit('off:256')).toEqual({ up: null, down: 256 * K });
    expect(parseBwLimit('off')).toEqual({ up: null, down: null });
    expect(parseBwLimit('OFF')).toEqual({ up: null, down: null });
    expect(parseBwLimit('0')).toEqual({ up: null, down: null });
  });

  it('refuses anything else, naming the option and the forms', () => {
    for (const bad of ['fast', '1M:2M:3M', ':', '1M:', '-1M', 'on', '']) {
      expect(() => parseBwLimit(bad), bad).toThrowError(UserError);
    }
    expect(() => parseBwLimit('fast', '-o bwlimit')).toThrowError(
      /^-o bwlimit takes off, a rate in bytes per second for both directions \(10M, 512k, 1\.5M; a plain number is KiB\/s\), or UP:DOWN \(1M:off, 512k:4M\) \(got "fast"\)$/,
    );
  });

  it('formats the limits as seafs status shows them', () => {
    expect(fmtBandwidth({ up: M, down: null })).toBe('up 1 MiB/s, down off');
    expect(fmtBandwidth({ up: 512 * K, down: 4 * M })).toBe('up 512 KiB/s, down 4 MiB/s');
  });
});

describe('size and rate options of the mount', () => {
  it('-o cache_max_size, read_ahead and bwlimit take units; plain numbers keep MiB and KiB', () => {
    expect(parseMountOptions(['cache_max_size=10G,read_ahead=1M,bwlimit=1M:off']).settings).toEqual({
      cacheMaxSize: 10 * G,
      readAhead: M,
      bwlimit: '1M:off',
    });
    expect(parseMountOptions(['cache_max_size=4096,read_ahead=512']).settings).toEqual({
      cacheMaxSize: 4096 * M,
      readAhead: 512 * K,
    });
    expect(() => parseMountOptions(['cache_max_size=lots'])).toThrowError(
      /^-o cache_max_size takes a size: .*10G, 512M, 100k, 4096B; a plain number is MiB \(got "lots"\)$/,
    );
    expect(() => parseMountOptions(['bwlimit=fast'])).toThrowError(/^-o bwlimit takes off, /);
  });

  it('SEAFS_BLOCK_UPLOADS takes a size too (a plain number is MiB), off or 0 for never', () => {
    expect(blockThreshold('8', 'SEAFS_BLOCK_UPLOADS')).toBe(8 * M);
    expect(blockThreshold('512k', 'SEAFS_BLOCK_UPLOADS')).toBe(512 * K);
    expect(blockThreshold('off', 'SEAFS_BLOCK_UPLOADS')).toBe(Infinity);
    expect(blockThreshold('0', 'SEAFS_BLOCK_UPLOADS')).toBe(Infinity);
    expect(() => blockThreshold('big', 'SEAFS_BLOCK_UPLOADS')).toThrowError(
      /SEAFS_BLOCK_UPLOADS \(or 'off'\) takes a size/,
    );
  });
});
