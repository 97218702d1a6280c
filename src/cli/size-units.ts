// Sizes and rates as the user writes them, for every option that takes one
// (flags, fstab -o, control commands, environment switches): a number with
// an optional binary unit, B, K, M, G or T (1K = 1024 B; KB, KiB and Ki and
// lower case mean the same), fractions allowed (0.5G). A bare number keeps
// the unit each option always had (--cache-max-size MiB, --read-ahead KiB),
// so existing command lines and fstab entries mean what they meant (serve's
// --max-upload-size, once --max-upload-mb: decimal MB).
// Bandwidth limits follow rclone's --bwlimit: RATE for both directions or
// UP:DOWN, each `off` (or 0) or a rate in bytes per second whose bare number
// means KiB/s.
import type { RateLimits } from '../client/bandwidth.js';
import { UserError } from './user-error.js';

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;
const TiB = 1024 * GiB;

/** unit spellings (lower case) -> bytes: B; K, KB, KiB, Ki; the same for M, G, T */
const UNITS = new Map<string, number>([['b', 1]]);
for (const [letter, bytes] of [
  ['k', KiB],
  ['m', MiB],
  ['g', GiB],
  ['t', TiB],
] as const)
  for (const spelling of [letter, `${letter}b`, `${letter}ib`, `${letter}i`]) UNITS.set(spelling, bytes);
const UNIT_NAMES: Record<number, string> = {
  1: 'bytes',
  [KiB]: 'KiB',
  [MiB]: 'MiB',
  [GiB]: 'GiB',
  1_000_000: 'MB (1,000,000 bytes)',
};

/** The forms a size takes, for error messages. */
export const SIZE_FORMS =
  'a number with an optional unit B, K, M, G or T (binary: 1K = 1024 B), e.g. 10G, 512M, 100k, 4096B';

/** bytes of `text`, or null when it is not a size */
function sizeOf(text: string, bareUnit: number): number | null {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$/i.exec(text);
  if (!m) return null;
  const unit = m[2] === '' ? bareUnit : UNITS.get(m[2].toLowerCase());
  if (unit === undefined) return null;
  const n = Math.round(Number(m[1]) * unit);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * A size in bytes. `option` names it in the error (`--cache-max-size`, `-o cache_max_size`);
 * `bareUnit`: the bytes a number without a unit stands for (default 1: bytes).
 */
export function parseSize(value: string | number, option: string, bareUnit = 1): number {
  const n = sizeOf(String(value), bareUnit);
  if (n === null) {
    const bare = UNIT_NAMES[bareUnit] ?? `${bareUnit}-byte units`;
    throw new UserError(`${option} takes a size: ${SIZE_FORMS}; a plain number is ${bare} (got "${value}")`);
  }
  return n;
}

/** The forms of a bandwidth limit, for error messages. */
export const BWLIMIT_FORMS =
  'off, a rate in bytes per second for both directions (10M, 512k, 1.5M; a plain number is KiB/s), or UP:DOWN (1M:off, 512k:4M)';

/** One direction's rate: null for off (or 0). */
function rateOf(text: string): number | null | undefined {
  if (/^\s*off\s*$/i.test(text)) return null;
  const n = sizeOf(text, KiB);
  if (n === null) return undefined;
  return n === 0 ? null : n;
}

/** `--bwlimit RATE` or `UP:DOWN`, as rclone writes it. */
export function parseBwLimit(value: string, option = '--bwlimit'): RateLimits {
  const parts = String(value).split(':');
  const rates = parts.map(rateOf);
  if ((parts.length !== 1 && parts.length !== 2) || rates.some((r) => r === undefined))
    throw new UserError(`${option} takes ${BWLIMIT_FORMS} (got "${value}")`);
  const [up, down] = rates as (number | null)[];
  return parts.length === 1 ? { up, down: up } : { up, down };
}

/** A size in the largest binary unit it fills, without needless decimals: 1 MiB, 1.5 GiB, 100 KiB, 700 B. */
export function fmtSize(n: number): string {
  for (const [unit, name] of [
    [TiB, 'TiB'],
    [GiB, 'GiB'],
    [MiB, 'MiB'],
    [KiB, 'KiB'],
  ] as const) {
    if (n >= unit) return `${Number((n / unit).toFixed(2))} ${name}`;
  }
  return `${n} B`;
}

/** `up 1 MiB/s, down off` */
export function fmtBandwidth(l: RateLimits): string {
  const one = (r: number | null) => (r === null ? 'off' : `${fmtSize(r)}/s`);
  return `up ${one(l.up)}, down ${one(l.down)}`;
}
