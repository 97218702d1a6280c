// One server call of a rename (a rename within a folder, or a move between
// folders), tried again at the vfs level when the client gave up on it. The
// client already checks a lost answer once within its retry budget
// (client/retry.ts, class 'checked'), but a call whose budget went on stalls
// and 500s ends with the failure, and a rename is one FUSE operation: `mv` of
// a folder would fail with EIO although the server may have done it, or
// could do it a second later. So, as file uploads are retried by their
// queue: after a failure another try could get past (5xx, 429, a connection
// reset after it reached the server; not a timeout or refusal, which take the
// mount offline), fresh listings of both folders
// tell whether the call took effect (the name gone from the source and
// present, of the same type, in the destination: done) or did nothing (the
// name still in the source and absent from the destination: sent again).
// Anything else (both or neither, a listing that fails too) leaves the
// outcome unknown, and the failure is reported as before.
import { ApiError } from '../../client/errors.js';
import type { SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import { retryable } from '../errors.js';

/** What a step changes on the server: `name` of (repo, dir) becomes `as` in (toRepo, toDir). */
export interface StepEffect {
  repo: string;
  dir: string;
  name: string;
  toRepo: string;
  toDir: string;
  as: string;
  type: 'file' | 'dir';
}

/** tries of one step in all, and the wait before each listing that looks whether a failed try took effect */
export const STEP_TRIES = 4;
const WAITS_MS = [300, 1000, 3000];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A failure after which the server may have done the call, or another try may get past it. */
function worthAnotherTry(e: unknown): boolean {
  if (unreachable(e)) return false; // offline: the mount says so, and the rename fails at once
  return retryable(e) || (e instanceof ApiError && e.kind === 'throttled');
}

/** Whether the step took effect: true (done), false (nothing happened), null (neither state: unknown). */
export async function tookEffect(api: Pick<SeafileApi, 'listDir'>, f: StepEffect): Promise<boolean | null> {
  const names = async (repo: string, dir: string) => {
    const l = await api.listDir(repo, dir, {});
    if (l.uptodate) return null;
    return new Map(l.entries.map((e) => [e.name, e.type]));
  };
  const same = f.repo === f.toRepo && f.dir === f.toDir;
  const [src, dst] = await Promise.all([names(f.repo, f.dir), same ? Promise.resolve(null) : names(f.toRepo, f.toDir)]);
  if (!src) return null;
  const there = same ? src : dst;
  if (!there) return null;
  const inSource = src.get(f.name) === f.type;
  const inDest = there.get(f.as) === f.type;
  if (!inSource && inDest) return true;
  if (inSource && !inDest) return false;
  return null;
}

/** Runs `call`; after a failure it may survive, looks whether it took effect and tries again if not. */
export async function runStep(
  api: Pick<SeafileApi, 'listDir'>,
  what: string,
  effect: StepEffect,
  call: () => Promise<void>,
  log: (msg: string) => void,
  waitsMs: readonly number[] = WAITS_MS,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await call();
      return;
    } catch (e) {
      if (!worthAnotherTry(e) || attempt >= STEP_TRIES) throw e;
      await sleep(waitsMs[Math.min(attempt - 1, waitsMs.length - 1)]);
      const done = await tookEffect(api, effect).catch(() => null);
      const why = (e as Error).message;
      if (done === null) throw e;
      if (done) {
        log(`${what}: the call failed (${why}) but the server had done it`);
        return;
      }
      log(`${what} failed (${why}); the server shows nothing done: trying again (${attempt + 1} of ${STEP_TRIES})`);
    }
  }
}
