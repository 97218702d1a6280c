// The blocks sent raw to a library that no commit of it used yet, as the
// block store keeps them on disk (pending-blocks/<repo>/<id>: a symlink to the
// block's size, its mtime when it came) and in memory: they count against the
// owner's quota until a commit uses them or the sweep removes them. A commit
// under way takes its blocks out of the count, and gives back those it did not
// use if it fails.
import { promises as fsp, lutimesSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';

interface Mark {
  size: number;
  /** when it came (ms) */
  at: number;
}

export class PendingBlocks {
  private readonly made = new Set<string>();
  /** per library, the blocks waiting: size and when they came */
  private readonly marks = new Map<string, Map<string, Mark>>();
  /** `repo\nid` of those taken by commits under way: how many, and whether one of them or another use took it */
  private readonly committing = new Map<string, Mark & { count: number; used: boolean }>();

  constructor(readonly dir: string) {}

  /** Reads the marks an earlier run left (a file that is not one is removed). */
  async load(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const repoId of await fsp.readdir(this.dir)) {
      const marks = new Map<string, Mark>();
      for (const id of await fsp.readdir(path.join(this.dir, repoId))) {
        const at = path.join(this.dir, repoId, id);
        try {
          const st = await fsp.lstat(at);
          marks.set(id, { size: Number(await fsp.readlink(at)) || 0, at: st.mtimeMs });
        } catch {
          await fsp.rm(at, { force: true }); // not a mark of ours
        }
      }
      if (marks.size) this.marks.set(repoId, marks);
    }
  }

  set(repoId: string, id: string, size: number, when = Date.now()): void {
    if (!this.made.has(repoId)) {
      mkdirSync(path.join(this.dir, repoId), { recursive: true, mode: 0o700 });
      this.made.add(repoId);
    }
    const at = path.join(this.dir, repoId, id);
    rmSync(at, { force: true }); // a block sent again starts its grace period again
    symlinkSync(String(size), at);
    lutimesSync(at, when / 1000, when / 1000);
    let marks = this.marks.get(repoId);
    if (!marks) this.marks.set(repoId, (marks = new Map()));
    marks.set(id, { size, at: when });
  }

  clear(repoId: string, id: string): void {
    const marks = this.marks.get(repoId);
    if (!marks?.has(id)) return;
    rmSync(path.join(this.dir, repoId, id), { force: true });
    marks.delete(id);
    if (marks.size === 0) this.marks.delete(repoId);
  }

  has(repoId: string, id: string): boolean {
    return this.marks.get(repoId)?.has(id) ?? false;
  }

  /** `repoId` now uses block `id` for a file of its own: it waits no more, and a commit that took it keeps it */
  used(repoId: string, id: string): void {
    this.clear(repoId, id);
    const c = this.committing.get(`${repoId}\n${id}`);
    if (c) c.used = true;
  }

  /** Bytes of the blocks waiting for `repoId`. */
  bytes(repoId: string): number {
    let n = 0;
    for (const m of this.marks.get(repoId)?.values() ?? []) n += m.size;
    return n;
  }

  /** Of those, the bytes of the distinct `ids`. */
  bytesOf(repoId: string, ids: string[]): number {
    const marks = this.marks.get(repoId);
    if (!marks) return 0;
    let n = 0;
    for (const id of new Set(ids)) n += marks.get(id)?.size ?? 0;
    return n;
  }

  /**
   * Those of `ids` that wait stop waiting (and counting) while a commit runs; the answer, `done(false)`
   * for a commit that failed, makes them wait again unless another use of them came meanwhile and
   * `stillHeld` says the library still holds the block.
   */
  take(repoId: string, ids: string[], stillHeld: (id: string) => boolean): (ok: boolean) => void {
    const taken: string[] = [];
    for (const id of new Set(ids)) {
      const key = `${repoId}\n${id}`;
      const running = this.committing.get(key);
      const m = this.marks.get(repoId)?.get(id);
      if (running) running.count++;
      else if (m) {
        this.clear(repoId, id);
        this.committing.set(key, { ...m, count: 1, used: false });
      } else continue;
      taken.push(id);
    }
    return (ok: boolean) => {
      for (const id of taken) {
        const key = `${repoId}\n${id}`;
        const c = this.committing.get(key)!;
        c.used ||= ok;
        if (--c.count > 0) continue;
        this.committing.delete(key);
        if (!c.used && stillHeld(id)) this.set(repoId, id, c.size, c.at);
      }
    };
  }

  /** The blocks that came before `cutoff` (ms) and wait still, as [library, block id]. */
  expired(cutoff: number): [string, string][] {
    const out: [string, string][] = [];
    for (const [repoId, marks] of this.marks) for (const [id, m] of marks) if (m.at <= cutoff) out.push([repoId, id]);
    return out;
  }
}
