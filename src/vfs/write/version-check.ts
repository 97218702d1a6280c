// The conflict check: before an upload replaces anything, the mount looks at
// what the server holds at the path now and compares it with the version the
// local data started from (FileState.baseId). One listing of the folder answers
// for every file of it being uploaded at that moment (concurrent checks of one
// folder share a request), so a batch of new files costs one listing.
//
// The window left open is the time between this listing and the moment the
// upload commits on the server (one round trip plus the body); a change by
// someone else inside it is overwritten as before (the server keeps it in the
// file's history).
import { isApiError } from '../../client/errors.js';
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { Attempt, FileState } from './file-state.js';

export type Verdict =
  /** the server holds the version the local data started from (or our own last upload): replace it */
  | { kind: 'base' }
  /** nothing at the path (new file, or deleted or moved away on the server): upload under the name */
  | { kind: 'free' }
  /** someone else's version is there: keep it, save ours beside it */
  | { kind: 'changed'; entry: DirEntry; names: Set<string> }
  /** the folder itself is gone on the server: recreate it, then upload */
  | { kind: 'no-folder' };

/** seconds the server's clock may be behind the mount's when an attempt's outcome is judged */
const LANDED_CLOCK_SLACK_S = 60;

interface Listing {
  startedAt: number;
  entries: Promise<Map<string, DirEntry> | null>;
}

export class VersionCheck {
  private readonly inflight = new Map<string, Listing>();
  /** listings made for checks (for status and tests) */
  requests = 0;

  constructor(
    private readonly api: SeafileApi,
    /** a listing answered after `ms` (the server's round trip, and its load) */
    private readonly onRoundTrip: (ms: number) => void = () => {},
  ) {}

  /**
   * The folder's entries as the server has them now (null: no such folder).
   * A listing already in flight is joined when it started after `notBefore`.
   */
  folder(repo: string, dir: string, notBefore = 0): Promise<Map<string, DirEntry> | null> {
    const k = `${repo}\u0000${dir}`;
    const have = this.inflight.get(k);
    if (have && have.startedAt >= notBefore) return have.entries;
    const startedAt = Date.now();
    this.requests++;
    const entries = (async () => {
      try {
        const l = await this.api.listDir(repo, dir);
        this.onRoundTrip(Date.now() - startedAt);
        if (l.uptodate) throw new Error('listing answered up to date without a base');
        return new Map(l.entries.map((e) => [e.name, e]));
      } catch (e) {
        if (isApiError(e, 'not_found')) return null;
        throw e;
      }
    })();
    const mine: Listing = { startedAt, entries };
    this.inflight.set(k, mine);
    void entries.then(
      () => this.inflight.get(k) === mine && this.inflight.delete(k),
      () => this.inflight.get(k) === mine && this.inflight.delete(k),
    );
    return entries;
  }

  /** What an upload of `s` to (repo, path) would meet on the server. */
  async verdict(s: FileState, repo: string, path: string): Promise<Verdict> {
    const entries = await this.folder(repo, parentOf(path), s.uploadedAt);
    if (!entries) return { kind: 'no-folder' };
    const e = entries.get(baseOf(path));
    if (!e) return { kind: 'free' };
    if (e.type === 'file' && isOurs(s, path, e)) return { kind: 'base' };
    return { kind: 'changed', entry: e, names: new Set(entries.keys()) };
  }
}

/** Whether the server's entry is the version the local data started from, or our own upload of it. */
function isOurs(s: FileState, path: string, e: DirEntry): boolean {
  if (s.baseId !== null) {
    if (e.id === s.baseId) return true;
  } else if (s.remotePath === path) {
    // uploaded before, but the server named no id: nothing to compare with
    return true;
  }
  return mayBeOurs(s.maybeLanded, e);
}

/**
 * Whether `e` may be one of these attempts of ours, landed although its answer
 * was lost (or the mount died before it could note it), maybe of content written
 * over since: its size, and the modification time it sent (last_modify) or one
 * the server gave it since that attempt began (a minute's leeway for the server's clock).
 */
export function mayBeOurs(attempts: readonly Attempt[], e: DirEntry): boolean {
  return attempts.some(
    (a) =>
      e.size === a.size &&
      (e.mtime === Math.floor(a.mtime / 1000) || e.mtime >= Math.floor(a.since / 1000) - LANDED_CLOCK_SLACK_S),
  );
}
