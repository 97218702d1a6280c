// .seafile-history: earlier versions of the library's files, read-only.
// `.seafile-history/<folder path>/` lists that folder's current children
// (folders as folders, each file as a folder of its versions), so a user can
// walk and tab-complete; `.seafile-history/<file path>/` lists the file's
// versions (the server's file history), each named by its time
// (names.ts) with that version's size and time; reading one reads that
// revision through the reader (revision links, ranged reads, the caches keyed
// by the version's file id). A file's versions are asked again after the
// mount's dir-cache-time.
import { ZERO_ID, type CommitRecord } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { joinPath, parentOf, splitPath } from '../common/paths.js';
import { timeNames } from './names.js';
import type { HiddenDeps, HiddenNode } from './types.js';

export const HISTORY_DIR = '.seafile-history';

interface Version {
  commit: string;
  fileId: string;
  size: number;
  mtimeSec: number;
}

export class HistoryView {
  private readonly cache = new Map<string, { at: number; p: Promise<Map<string, Version>> }>();

  constructor(private readonly d: HiddenDeps) {}

  /** The node at `rest` (the path below .seafile-history, '/' for itself) of library `repo`. */
  async at(repo: string, rest: string): Promise<HiddenNode> {
    const comps = splitPath(rest);
    let cur = '/';
    let mtime = 0;
    for (let i = 0; i < comps.length; i++) {
      const path = joinPath(cur, comps[i]);
      const e = await this.d.lookup(repo, path);
      if (!e) throw new VfsError('ENOENT', `${HISTORY_DIR}${rest}`);
      if (e.type === 'dir') {
        cur = path;
        mtime = e.mtime;
        continue;
      }
      if (i === comps.length - 1) {
        return {
          kind: 'dir',
          attr: this.d.attrs.dir(e.mtime, true),
          list: async () => [...(await this.versions(repo, path)).keys()],
        };
      }
      if (i < comps.length - 2) throw new VfsError('ENOTDIR', `${HISTORY_DIR}${rest}`);
      const v = (await this.versions(repo, path)).get(comps[i + 1]);
      if (!v) throw new VfsError('ENOENT', `${HISTORY_DIR}${rest}`);
      return {
        kind: 'file',
        attr: this.d.attrs.file(v.size, v.mtimeSec * 1000, true),
        remote: { repo, path, size: v.size, version: v.fileId, commit: v.commit },
      };
    }
    const dir = cur;
    return { kind: 'dir', attr: this.d.attrs.dir(mtime, true), list: () => this.d.names(repo, dir) };
  }

  /** the versions of the file at `path`, by name (oldest first) */
  private versions(repo: string, path: string): Promise<Map<string, Version>> {
    const k = `${repo}\u0000${path}`;
    const hit = this.cache.get(k);
    if (hit && Date.now() - hit.at < this.d.ttlMs) return hit.p;
    const p = this.fetch(repo, path);
    this.cache.set(k, { at: Date.now(), p });
    p.catch(() => this.cache.delete(k));
    if (this.cache.size > 1000) this.cache.delete(this.cache.keys().next().value as string);
    return p;
  }

  private async fetch(repo: string, path: string): Promise<Map<string, Version>> {
    if (!this.d.api.fileHistory) throw new VfsError('ENOTSUP', 'this server gives no file history');
    const commits: CommitRecord[] = await this.d.api.fileHistory(repo, path);
    const list = commits
      .map((c) => ({
        commit: c.id,
        fileId: c.rev_file_id || `${repo}:${path}@${c.id}`,
        size: c.rev_file_size ?? 0,
        mtimeSec: c.ctime,
      }))
      .sort((a, b) => a.mtimeSec - b.mtimeSec);
    const base = path.slice(path.lastIndexOf('/') + 1);
    const names = timeNames(list.map((v) => ({ ms: v.mtimeSec * 1000, label: base })));
    return new Map(list.map((v, i) => [names[i], v.fileId === ZERO_ID ? { ...v, size: 0 } : v]));
  }

  /**
   * `seafs restore FILE --at TIME`: the version of the file at `path` that
   * was current at `atMs` (the latest one not after it) becomes current again
   * by the server's revert (a new version, nothing downloaded or uploaded).
   * `current`: it already was, nothing changed.
   */
  async restore(repo: string, path: string, atMs: number): Promise<{ name: string; size: number; current: boolean }> {
    const revert = this.d.api.revertFile;
    if (!revert) throw new VfsError('ENOTSUP', 'this server cannot revert a file');
    this.cache.delete(`${repo}\u0000${path}`); // the versions as they are now
    const all = [...(await this.versions(repo, path)).entries()];
    const upTo = all.filter(([, v]) => v.mtimeSec * 1000 <= atMs);
    const pick = upTo[upTo.length - 1];
    if (!pick) {
      const oldest = all[0] ? `; the oldest version is "${all[0][0]}"` : '';
      throw new VfsError('ENOENT', `${path} has no version at or before that time${oldest}`);
    }
    const [name, v] = pick;
    if (pick === all[all.length - 1]) return { name, size: v.size, current: true };
    await revert.call(this.d.api, repo, path, v.commit);
    this.cache.delete(`${repo}\u0000${path}`);
    this.d.invalidate(repo, parentOf(path));
    return { name, size: v.size, current: false };
  }

  forget(repo: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${repo}\u0000`)) this.cache.delete(k);
  }
}
