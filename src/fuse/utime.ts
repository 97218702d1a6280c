// The times utimens receives from the binding. The fixed fuse-native
// (scripts/fix-fuse-native.mjs) passes utimensat's UTIME_NOW and UTIME_OMIT as
// two values no real time takes; a binding fixed before that passes both as
// the same 1073 ms (tv_sec 0, tv_nsec about 2^30), which cannot be told apart
// and so leaves the time alone, as those builds always did.

/** UTIME_OMIT: leave this time as it is */
export const UTIME_OMIT_MS = Number.MAX_SAFE_INTEGER;
/** UTIME_NOW: the current time */
export const UTIME_NOW_MS = Number.MAX_SAFE_INTEGER - 1;
/** either special value through a binding without the utime-special fix */
const AMBIGUOUS_MS = 1073;

/** The modification time to set, in ms, or null to leave it as it is. */
export function requestedMtime(raw: number, now = Date.now()): number | null {
  if (raw === UTIME_NOW_MS) return now;
  if (raw === UTIME_OMIT_MS || raw === AMBIGUOUS_MS) return null;
  return raw;
}
