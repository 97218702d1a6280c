// The mass-delete guard: `rm -rf` of a large part of a library is
// the costliest mistake on a drive. When more than `max` files the server
// holds are deleted through the mount within `windowMs` (a sliding window,
// default 60 s), the delete that would pass the limit and every delete after
// it are refused with EPERM (nothing more reaches the server) and the mount
// logs one line saying how to go on; `seafs status` shows the same. The hold
// lasts until the user answers:
// - confirm: deletes go on, uncounted, until a whole window passes without
//   one (the burst is over); then counting starts again from zero. A confirm
//   while nothing is held also lets the next burst through (asked for ahead).
// - cancel: the hold ends and counting starts again from zero (the refused
//   files stay where they are; the next mass delete is caught again).
// What was deleted before the hold is in the library's trash, as any delete.
// Files made here and deleted before their upload count nothing (the server
// never had them), so build and temp-file churn does not trip the guard.
import type { DirEntry } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { joinPath } from '../common/paths.js';

export const DEFAULT_DELETE_GUARD = 1000;
export const DELETE_WINDOW_MS = 60_000;

export interface DeleteGuardOptions {
  /** files within the window above which deletes are held; 0: the guard is off */
  max: number;
  windowMs?: number;
  /** the command that confirms, for the log line (e.g. `seafs confirm-delete /mnt/lib`) */
  confirmHint?: string;
  log?: (msg: string) => void;
  now?: () => number;
}

export interface DeleteGuardStatus {
  max: number;
  windowMs: number;
  /** files counted within the window now */
  recent: number;
  /** deletes are held since this time (ISO), with the files counted then and the deletes refused since */
  held: { since: string; counted: number; refused: number } | null;
  /** a confirm lets deletes through until a window passes without one */
  confirmed: boolean;
}

export class DeleteGuard {
  private readonly windowMs: number;
  private readonly now: () => number;
  /** admitted deletes within the window, oldest first */
  private recent: { at: number; files: number }[] = [];
  private counted = 0;
  private held: { since: number; counted: number; refused: number } | null = null;
  /** confirmed: the time of the last delete let through (or of the confirm) */
  private confirmedAt: number | null = null;

  constructor(private readonly o: DeleteGuardOptions) {
    this.windowMs = o.windowMs ?? DELETE_WINDOW_MS;
    this.now = o.now ?? Date.now;
  }

  get on(): boolean {
    return this.o.max > 0;
  }

  /**
   * A delete of `files` files the server holds (0: a file only here, an empty
   * folder) is about to go: counted, or refused with EPERM while deletes are
   * held or when it would pass the limit. Synchronous, so deletes running at
   * once are counted one after another.
   */
  admit(files: number, what: string): void {
    if (!this.on) return;
    const now = this.now();
    if (this.confirmedAt !== null) {
      if (now - this.confirmedAt < this.windowMs) {
        this.confirmedAt = now;
        return;
      }
      this.confirmedAt = null; // the confirmed burst is over
    }
    if (this.held) {
      this.held.refused++;
      throw new VfsError('EPERM', `deletes are held after a mass delete; ${this.how()}`);
    }
    this.prune(now);
    if (files > 0 && this.counted + files > this.o.max) {
      this.held = { since: now, counted: this.counted, refused: 1 };
      this.o.log?.(
        `mass delete: ${this.counted} file(s) deleted within ${Math.round(this.windowMs / 1000)} s (--delete-guard ${this.o.max}); ` +
          `further deletes are held (EPERM), starting with ${what}: ${this.how()}`,
      );
      throw new VfsError('EPERM', `deletes are held after a mass delete; ${this.how()}`);
    }
    if (files > 0) {
      this.recent.push({ at: now, files });
      this.counted += files;
    }
  }

  /** `seafs confirm-delete`: the held deletes (and the rest of the burst) may go. Returns whether any were held. */
  confirm(): boolean {
    const was = this.held !== null;
    this.held = null;
    this.forget();
    this.confirmedAt = this.now();
    this.o.log?.(
      was
        ? 'mass delete confirmed (seafs confirm-delete): deletes go on'
        : 'deletes confirmed ahead (seafs confirm-delete): the next mass delete is not held',
    );
    return was;
  }

  /** `seafs confirm-delete --cancel`: no more holding, nothing deleted; counting starts again. */
  cancel(): boolean {
    const was = this.held !== null;
    this.held = null;
    this.confirmedAt = null;
    this.forget();
    if (was) this.o.log?.('mass delete cancelled (seafs confirm-delete --cancel): the refused files were kept');
    return was;
  }

  status(): DeleteGuardStatus {
    this.prune(this.now());
    const h = this.held;
    return {
      max: this.o.max,
      windowMs: this.windowMs,
      recent: this.counted,
      held: h ? { since: new Date(h.since).toISOString(), counted: h.counted, refused: h.refused } : null,
      confirmed: this.confirmedAt !== null && this.now() - this.confirmedAt < this.windowMs,
    };
  }

  private how(): string {
    const cmd = this.o.confirmHint ?? 'seafs confirm-delete MOUNTPOINT';
    return `to let them go on run \`${cmd}\`, to keep the files \`${cmd} --cancel\``;
  }

  private forget(): void {
    this.recent = [];
    this.counted = 0;
  }

  private prune(now: number): void {
    let i = 0;
    while (i < this.recent.length && now - this.recent[i].at >= this.windowMs) this.counted -= this.recent[i++].files;
    if (i) this.recent = this.recent.slice(i);
  }
}

/** The files under `dir` that the mount knows from its cached listings (folders never listed count nothing). */
export function knownFilesUnder(
  meta: { peek(repo: string, dir: string): { entries: Map<string, DirEntry> } | undefined },
  repo: string,
  dir: string,
): number {
  let n = 0;
  const todo = [dir];
  for (let d = todo.pop(); d !== undefined; d = todo.pop()) {
    for (const e of meta.peek(repo, d)?.entries.values() ?? []) {
      if (e.type === 'dir') todo.push(joinPath(d, e.name));
      else n++;
    }
  }
  return n;
}
