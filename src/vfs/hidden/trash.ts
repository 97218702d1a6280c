// .seafile-trash: the library's deleted files and folders (the trash API,
// every page), each named "<deletion time> <former path, / as %2F>"
// (names.ts), shown with its size and deletion time, and with the modes it
// will have once restored (as ZFS snapshots show theirs): a mv out keeps the
// inode, whose attributes the kernel keeps for the attr-timeout, and the mount
// cannot invalidate them (fuse-native has no notify), so read-only modes here
// would show on the restored file for seconds. Changes are refused (EROFS).
// A file reads as it was in the commit it was deleted from (revision links).
// A trashed folder shows
// as a folder whose listing is refused (ENOTSUP): the API gives no listing of
// a folder in an old commit, and an empty listing would lie.
//
// `mv .seafile-trash/<entry> <dest>` restores: the server puts the file
// (file/revert) or folder (dir/revert) back at its former path, then the
// mount moves it to <dest> when that is elsewhere (another library too).
// A folder whose former path is taken comes back beside it as "name (1)"
// (as real servers restore it) and is moved from there. A file whose former
// path is taken (the server would overwrite it), or any entry when the server
// cannot restore, is EXDEV, on which mv copies the file out instead (and then
// reports that it cannot remove it from the read-only trash): nothing at the
// former path is overwritten.
import type { TrashEntry } from '../../client/types.js';
import { isNotFound, VfsError } from '../errors.js';
import type { Loc } from '../libraries/library-paths.js';
import { joinPath, parentOf, splitPath } from '../common/paths.js';
import { flatPath, timeNames } from './names.js';
import type { HiddenDeps, HiddenNode } from './types.js';

export const TRASH_DIR = '.seafile-trash';

/** pages of the trash read at most (100 entries each) */
const MAX_PAGES = 100;

export class TrashView {
  private readonly cache = new Map<string, { at: number; p: Promise<Map<string, TrashEntry>> }>();

  constructor(private readonly d: HiddenDeps) {}

  /** `readOnly`: the library is (restored entries then show without write bits) */
  async at(repo: string, rest: string, readOnly: boolean): Promise<HiddenNode> {
    const comps = splitPath(rest);
    if (comps.length === 0) {
      return { kind: 'dir', attr: this.d.attrs.dir(0, true), list: async () => [...(await this.entries(repo)).keys()] };
    }
    const e = (await this.entries(repo)).get(comps[0]);
    if (!e) throw new VfsError('ENOENT', `${TRASH_DIR}${rest}`);
    const deleted = Date.parse(e.deleted_time) || 0;
    if (e.is_dir) {
      if (comps.length > 1) throw new VfsError('ENOENT', `${TRASH_DIR}${rest}`);
      return {
        kind: 'dir',
        attr: this.d.attrs.dir(Math.floor(deleted / 1000), readOnly),
        list: () => {
          throw new VfsError('ENOTSUP', `a folder in the trash is not listed; mv it out of ${TRASH_DIR} to see it`);
        },
      };
    }
    if (comps.length > 1) throw new VfsError('ENOTDIR', `${TRASH_DIR}${rest}`);
    return {
      kind: 'file',
      attr: this.d.attrs.file(e.size, deleted, readOnly),
      remote: { repo, path: formerPath(e), size: e.size, version: e.obj_id, commit: e.commit_id },
    };
  }

  /**
   * Restore the entry `name` of `repo`'s trash and move it to `dst` (a mount
   * path, resolved as `dstLoc`); `src` is the entry's mount path.
   */
  async restore(repo: string, name: string, src: string, srcRest: string, dst: string, dstLoc: Loc): Promise<void> {
    const e = (await this.entries(repo)).get(name);
    if (!e) throw new VfsError('ENOENT', src);
    const revert = e.is_dir ? this.d.api.revertDir : this.d.api.revertFile;
    if (!revert) throw new VfsError('EXDEV', 'this server cannot restore from the trash: copying');
    if (dstLoc.readOnly) throw new VfsError('EROFS');
    let back = formerPath(e);
    const taken = await this.occupied(repo, back);
    // a file would replace what is there now: copied out instead
    if (taken && !e.is_dir) {
      throw new VfsError('EXDEV', `${back} exists again: copying the trashed version instead of restoring it`);
    }
    const before = taken ? new Set(await this.d.names(repo, parentOf(back))) : null;
    await revert.call(this.d.api, repo, back, e.commit_id);
    // the server creates missing parents: every folder on the way is listed afresh
    for (let dir = parentOf(back); ; dir = parentOf(dir)) {
      this.d.invalidate(repo, dir);
      if (dir === '/') break;
    }
    if (before) {
      // a folder whose name is taken comes back as "name (1)" (real servers' dir/revert)
      const added = (await this.d.names(repo, parentOf(back))).filter((n) => !before.has(n));
      const mine = added.find((n) => n.startsWith(`${e.obj_name} (`));
      if (!mine) throw new VfsError('EEXIST', `${back} is back already`);
      back = joinPath(parentOf(back), mine);
    }
    if (e.is_dir) this.d.invalidate(repo, back, true);
    this.forget(repo);
    this.d.log(`restored ${back} from the trash`);
    // the restored path as a mount path: the entry's mount path less its library path, plus the path
    const prefix = src.slice(0, src.length - srcRest.length);
    if (dstLoc.repo !== repo || dstLoc.path !== back) await this.d.rename(`${prefix}${back}`, dst);
  }

  /** something is at `path` now (asked afresh) */
  private async occupied(repo: string, path: string): Promise<boolean> {
    this.d.invalidate(repo, parentOf(path));
    try {
      return (await this.d.lookup(repo, path)) !== null;
    } catch (e) {
      if (isNotFound(e) || (e instanceof VfsError && e.code === 'ENOTDIR')) return false;
      throw e;
    }
  }

  /** the trash by name, newest last, listed again after the cache time */
  private entries(repo: string): Promise<Map<string, TrashEntry>> {
    const hit = this.cache.get(repo);
    if (hit && Date.now() - hit.at < this.d.ttlMs) return hit.p;
    const p = this.fetch(repo);
    this.cache.set(repo, { at: Date.now(), p });
    p.catch(() => this.cache.delete(repo));
    return p;
  }

  private async fetch(repo: string): Promise<Map<string, TrashEntry>> {
    const api = this.d.api;
    if (!api.libraryTrash) throw new VfsError('ENOTSUP', 'this server gives no trash');
    const all: TrashEntry[] = [];
    let scanStat: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = await api.libraryTrash(repo, { perPage: 100, scanStat });
      all.push(...r.data);
      if (!r.more || !r.scan_stat) break;
      scanStat = r.scan_stat;
    }
    const list = all
      .map((e) => ({ e, ms: Date.parse(e.deleted_time) || 0 }))
      .sort((a, b) => a.ms - b.ms || formerPath(a.e).localeCompare(formerPath(b.e)));
    const names = timeNames(list.map(({ e, ms }) => ({ ms, label: flatPath(formerPath(e)) })));
    return new Map(list.map(({ e }, i) => [names[i], e]));
  }

  /** forget the listing of `repo`'s trash (something was deleted or restored) */
  forget(repo: string): void {
    this.cache.delete(repo);
  }
}

/** where a trash entry was: its folder and name */
export function formerPath(e: TrashEntry): string {
  const dir = '/' + splitPath(e.parent_dir).join('/');
  return joinPath(dir, e.obj_name);
}
