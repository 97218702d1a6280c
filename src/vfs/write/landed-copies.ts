// Copies an upload may have left on the server unbeknown to the mount: the
// upload stored the file but its answer was lost, and before a retry could
// tell, the file was deleted or renamed through the mount. Such a copy would
// stay on the server under the old name. It is removed once the server shows
// it there as ours (the size and a time of one of those attempts): at once
// when the server answers, else retried in the background. A file made again
// at that path through the mount takes the question over instead: its own
// upload recognises the copy as ours and replaces it.
import type { SeafileApi } from '../../client/types.js';
import { baseOf, parentOf } from '../common/paths.js';
import type { Attempt } from './file-state.js';
import { stateKey } from './file-state.js';
import { mayBeOurs, type VersionCheck } from './version-check.js';

interface Doubt {
  repo: string;
  path: string;
  attempts: Attempt[];
  tries: number;
}

/** retries of one path before it is left (with a line in the log): about 20 minutes with the backoff */
const MAX_TRIES = 12;

export class LandedCopies {
  private readonly doubts = new Map<string, Doubt>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly check: VersionCheck,
    private readonly api: Pick<SeafileApi, 'deleteFile'>,
    private readonly log: (msg: string) => void,
    private readonly retryBaseMs: number,
  ) {}

  /** Attempts at (repo, path) may have stored a copy: remove it if the server has it (resolves once tried once). */
  async drop(repo: string, path: string, attempts: readonly Attempt[]): Promise<void> {
    if (attempts.length === 0) return;
    const d: Doubt = { repo, path, attempts: [...attempts], tries: 0 };
    this.doubts.set(stateKey(repo, path), d);
    await this.attempt(d);
  }

  /** A new file at (repo, path): the attempts in doubt there become its own (its upload then replaces the copy). */
  takeOver(repo: string, path: string): Attempt[] {
    const k = stateKey(repo, path);
    const d = this.doubts.get(k);
    if (!d) return [];
    this.doubts.delete(k);
    return d.attempts;
  }

  /** paths still in doubt (for tests and status) */
  get size(): number {
    return this.doubts.size;
  }

  /** Try every path in doubt again until none is left or `ms` have passed (before an unmount). */
  async settle(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (this.doubts.size > 0 && Date.now() < until) {
      await Promise.all([...this.doubts.values()].map((d) => this.attempt(d, false)));
      if (this.doubts.size > 0) await new Promise((r) => setTimeout(r, 250));
    }
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** One look (and delete) for `d`; on failure another later when `retry` (settle loops on its own). */
  private async attempt(d: Doubt, retry = true): Promise<void> {
    const k = stateKey(d.repo, d.path);
    if (this.doubts.get(k) !== d) return; // taken over by a new file, or settled
    if (retry) d.tries++;
    try {
      const entries = await this.check.folder(d.repo, parentOf(d.path), Date.now());
      const e = entries?.get(baseOf(d.path));
      if (this.doubts.get(k) !== d) return;
      if (e?.type === 'file' && mayBeOurs(d.attempts, e)) await this.api.deleteFile(d.repo, d.path);
      if (this.doubts.get(k) === d) this.doubts.delete(k);
    } catch (err) {
      if (this.doubts.get(k) !== d || !retry) return;
      if (d.tries >= MAX_TRIES) {
        this.doubts.delete(k);
        this.log(`gave up checking whether an interrupted upload left a copy at ${d.path}: ${(err as Error).message}`);
        return;
      }
      const t = setTimeout(
        () => {
          this.timers.delete(t);
          void this.attempt(d);
        },
        Math.min(this.retryBaseMs * 2 ** (d.tries - 1), 5 * 60_000),
      );
      t.unref();
      this.timers.add(t);
    }
  }
}
