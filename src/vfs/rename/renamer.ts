// rename(2) on a server whose moves never overwrite and whose name clashes
// are auto-renamed: POSIX replacement of the target, the order of rename and
// move chosen so no clash happens, a check that the result landed under the
// name asked for, files with local data moved under their lock (no upload of
// the old path in flight), folders with pending uploads held meanwhile, and
// the libfuse ".fuse_hidden" rename of a file unlinked while open.
import type { DirEntry, SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';
import { writable, type Loc } from '../libraries/library-paths.js';
import type { LocalMtimes } from '../mtimes/kept-mtimes.js';
import type { Listing, MetaCache } from '../listings/listing-cache.js';
import { baseOf, checkFolderName, checkName, isWithin, joinPath, parentOf } from '../common/paths.js';
import { runStep } from './retried-move.js';
import type { FileState, WriteBack } from '../write/write-back.js';

/** What a rename needs of the rest of the vfs. */
export interface Namespace {
  readonly api: SeafileApi;
  readonly meta: MetaCache;
  readonly wb: WriteBack;
  /** the times this machine keeps follow the files */
  readonly times: Pick<LocalMtimes, 'moved'>;
  /** refuses a name the server's version refuses (server-rules.ts) */
  checkName?(name: string): void;
  resolve(p: string, change: boolean): Promise<Loc>;
  /** the remote entry at a path (null: absent) */
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** the listing of a folder, checking its ancestors */
  dir(repo: string, dir: string): Promise<Listing>;
  /** ENOTEMPTY unless the folder is empty on the server and locally */
  ensureEmpty(repo: string, path: string): Promise<void>;
  /** delete a file (server copy and local data) */
  removeFile(repo: string, path: string, s: FileState | undefined, e: DirEntry | null): Promise<void>;
  /** the file unlinked while open: gone on the server, kept for its handles under `hiddenPath` */
  hide(repo: string, src: string, hiddenPath: string): Promise<void>;
  log(msg: string): void;
}

/**
 * Names seafile-server (10.0) cannot move between folders of one library: its
 * move_file_same_repo writes the moved names into a JSON list with printf and
 * no escaping, so a '"' or '\\' breaks the list and the move fails (HTTP 500,
 * nothing moved). Renames take such names, so they move under a plain
 * temporary name.
 */
const UNMOVABLE = /["\\]/;

export class Renamer {
  constructor(private readonly ns: Namespace) {}

  async rename(src: string, dst: string): Promise<void> {
    const ns = this.ns;
    const a = await ns.resolve(src, true);
    const b = await ns.resolve(dst, true);
    if (a.repo === null || b.repo === null || a.path === '/' || b.path === '/') {
      throw new VfsError('EPERM', 'libraries are renamed on the server, not here');
    }
    writable(a);
    writable(b);
    const aRepo = a.repo;
    const bRepo = b.repo;
    const newName = baseOf(b.path);
    checkName(newName);
    if (aRepo === bRepo && a.path === b.path) return;
    ns.checkName?.(newName);
    if (aRepo === bRepo && isWithin(b.path, a.path)) throw new VfsError('EINVAL', 'a folder cannot move into itself');
    if (aRepo === bRepo && newName.startsWith('.fuse_hidden') && parentOf(a.path) === parentOf(b.path)) {
      const st = ns.wb.get(aRepo, a.path);
      const en = st ? null : await ns.lookup(aRepo, a.path);
      if (st || en?.type === 'file') return ns.hide(aRepo, a.path, b.path);
    }

    const srcState = ns.wb.get(aRepo, a.path);
    const srcEntry = await ns.lookup(aRepo, a.path);
    if (!srcState && !srcEntry) throw new VfsError('ENOENT', src);
    const srcIsDir = !srcState && srcEntry!.type === 'dir';
    if (srcIsDir) checkFolderName(newName);
    await ns.dir(bRepo, parentOf(b.path));

    // POSIX rename replaces the target; the API would auto-rename instead
    const dstState = ns.wb.get(bRepo, b.path);
    const dstEntry = await ns.lookup(bRepo, b.path);
    if (dstState || dstEntry) {
      const dstIsDir = !dstState && dstEntry!.type === 'dir';
      if (srcIsDir && !dstIsDir) throw new VfsError('ENOTDIR', dst);
      if (!srcIsDir && dstIsDir) throw new VfsError('EISDIR', dst);
      if (dstIsDir) {
        await ns.ensureEmpty(bRepo, b.path);
        await ns.api.deleteDir(bRepo, b.path);
        ns.meta.remove(bRepo, parentOf(b.path), newName);
        ns.meta.invalidateTree(bRepo, b.path);
      } else {
        await ns.removeFile(bRepo, b.path, dstState, dstEntry);
      }
    }

    if (srcState) {
      let moved = false;
      await ns.wb.retarget(srcState, bRepo, b.path, async (from) => {
        await this.remoteMove(aRepo, from, bRepo, b.path, false);
        moved = true;
      });
      ns.times.moved(aRepo, a.path, bRepo, b.path);
      // the entry as the upload that may have finished meanwhile recorded it (with the file id)
      const uploaded = ns.meta.peek(aRepo, parentOf(a.path))?.entries.get(baseOf(a.path)) ?? srcEntry;
      ns.meta.remove(aRepo, parentOf(a.path), baseOf(a.path));
      if (moved) {
        const e: DirEntry = uploaded ?? {
          type: 'file',
          name: newName,
          id: '',
          size: srcState.size,
          mtime: Math.floor(srcState.mtime / 1000),
        };
        ns.meta.upsert(bRepo, parentOf(b.path), { ...e, name: newName });
      }
      return;
    }
    const held = srcIsDir ? await ns.wb.holdUnder(aRepo, a.path) : [];
    let ok = false;
    try {
      await this.remoteMove(aRepo, a.path, bRepo, b.path, srcIsDir);
      ok = true;
    } finally {
      await ns.wb.releaseUnder(held, aRepo, a.path, bRepo, b.path, ok);
    }
    ns.times.moved(aRepo, a.path, bRepo, b.path);
    ns.meta.remove(aRepo, parentOf(a.path), baseOf(a.path));
    ns.meta.upsert(bRepo, parentOf(b.path), { ...srcEntry!, name: newName });
    if (srcIsDir) {
      ns.meta.invalidateTree(aRepo, a.path);
      ns.meta.invalidateTree(bRepo, b.path);
    }
  }

  private async holds(repo: string, dir: string, name: string, isDir: boolean): Promise<boolean> {
    const l = await this.ns.api.listDir(repo, dir, {});
    return !l.uptodate && l.entries.some((e) => e.name === name && e.type === (isDir ? 'dir' : 'file'));
  }

  /** rename to a free temporary name, move that, rename it to the name asked for */
  private async viaTemporaryName(
    srcRepo: string,
    src: string,
    dDir: string,
    dName: string,
    isDir: boolean,
    dstRepo = srcRepo,
  ): Promise<void> {
    const tmp = `.seafs-move-${process.pid}-${Date.now().toString(36)}`;
    await this.renameIn(srcRepo, src, tmp, isDir);
    await this.moveTo(srcRepo, joinPath(parentOf(src), tmp), dstRepo, dDir, isDir);
    await this.renameIn(dstRepo, joinPath(dDir, tmp), dName, isDir);
  }

  /** rename within its folder, tried again when it failed and a listing shows it not done (rename/retried-move.ts) */
  private renameIn(repo: string, path: string, to: string, isDir: boolean): Promise<void> {
    const api = this.ns.api;
    const dir = parentOf(path);
    const type = isDir ? 'dir' : 'file';
    return runStep(
      api,
      `rename of ${path} to ${to}`,
      { repo, dir, name: baseOf(path), toRepo: repo, toDir: dir, as: to, type },
      () => (isDir ? api.renameDir(repo, path, to) : api.renameFile(repo, path, to)),
      (m) => this.ns.log(m),
    );
  }

  /** move into (toRepo, toDir) under the same name, tried again as renameIn */
  private moveTo(repo: string, path: string, toRepo: string, toDir: string, isDir: boolean): Promise<void> {
    const api = this.ns.api;
    const name = baseOf(path);
    return runStep(
      api,
      `move of ${path} to ${toDir}`,
      { repo, dir: parentOf(path), name, toRepo, toDir, as: name, type: isDir ? 'dir' : 'file' },
      () =>
        isDir ? api.batchMove(repo, parentOf(path), [name], toRepo, toDir) : api.moveFile(repo, path, toRepo, toDir),
      (m) => this.ns.log(m),
    );
  }

  /**
   * Rename or move a file or folder on the server to exactly (dstRepo, dst),
   * whose name must be free. Moves never overwrite on this API and clash
   * names are auto-renamed, so the order of rename and move is chosen to
   * avoid clashes, and the result is checked.
   */
  private async remoteMove(srcRepo: string, src: string, dstRepo: string, dst: string, isDir: boolean): Promise<void> {
    const ns = this.ns;
    const sDir = parentOf(src);
    const sName = baseOf(src);
    const dDir = parentOf(dst);
    const dName = baseOf(dst);
    const renameIn = (path: string, to: string) => this.renameIn(srcRepo, path, to, isDir);
    const moveTo = (repo: string, path: string) => this.moveTo(repo, path, dstRepo, dDir, isDir);

    if (srcRepo === dstRepo && sDir === dDir) {
      await renameIn(src, dName);
    } else if (srcRepo === dstRepo && (UNMOVABLE.test(sName) || UNMOVABLE.test(dName))) {
      await this.viaTemporaryName(srcRepo, src, dDir, dName, isDir);
    } else if (sName === dName) {
      await moveTo(srcRepo, src);
    } else {
      const srcList = await ns.meta.list(srcRepo, sDir, true);
      const dstList = await ns.meta.list(dstRepo, dDir, true);
      if (!srcList.entries.has(dName) && !ns.wb.get(srcRepo, joinPath(sDir, dName))) {
        await renameIn(src, dName);
        await moveTo(srcRepo, joinPath(sDir, dName));
      } else if (!dstList.entries.has(sName) && !ns.wb.get(dstRepo, joinPath(dDir, sName))) {
        await moveTo(srcRepo, src);
        await this.renameIn(dstRepo, joinPath(dDir, sName), dName, isDir);
      } else {
        await this.viaTemporaryName(srcRepo, src, dDir, dName, isDir, dstRepo);
      }
    }
    // a file renamed within its folder onto a name just checked free needs no check (the common
    // save-then-rename of editors and rsync); otherwise verify the final name, since an
    // auto-renamed "name (1)" would be a silent failure
    if (!isDir && srcRepo === dstRepo && sDir === dDir) return;
    const after = await ns.meta.list(dstRepo, dDir, true);
    // that may be a listing under way since before the move: look once more, with a listing of its own
    if (!after.entries.has(dName) && !(await this.holds(dstRepo, dDir, dName, isDir)))
      throw new VfsError('EIO', `rename to ${dst} did not land under that name`);
    if (srcRepo !== dstRepo || sDir !== dDir) ns.meta.invalidate(srcRepo, sDir);
  }
}
