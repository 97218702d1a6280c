// Library changes shared by the V2 and V2.1 endpoints and the file server:
// each runs under the library lock and ends in one commit.
// Over 400 lines: every change of a library's tree (create, rename, move,
// copy, delete, restore) in one place, so each shares the lock and commit rules.
import type { Ctx } from '../context.js';
import type { User } from './db.js';
import { HttpError } from '../http.js';
import { canonicalDir, checkName, uniqueName } from './names.js';
import { ZERO_ID } from './objects.js';
import { lookup, readDir, splitPath, TreeNotFound, updateDir, type DirEnt } from './tree.js';

export const nowSec = () => Math.floor(Date.now() / 1000);

function folderMissing(comps: string[]): HttpError {
  return new HttpError(404, `Folder /${comps.join('/')}${comps.length ? '/' : ''} not found.`);
}

/** Maps a TreeNotFound on the way to `dir` to the 404 real servers give. */
export async function guard<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof TreeNotFound) throw folderMissing(e.missing);
    throw e;
  }
}

export async function headRoot(ctx: Ctx, repoId: string): Promise<string> {
  return (await ctx.heads.get(repoId)).root_id;
}

export async function getEntry(ctx: Ctx, repoId: string, p: string): Promise<DirEnt | null> {
  return lookup(ctx.store, await headRoot(ctx, repoId), splitPath(p));
}

export async function listFolder(
  ctx: Ctx,
  rootId: string,
  comps: string[],
  rawPath: string,
): Promise<{ id: string; entries: DirEnt[] }> {
  const ent = await lookup(ctx.store, rootId, comps);
  if (ent?.type !== 'dir') throw new HttpError(404, `Folder ${rawPath} not found.`);
  return { id: ent.id, entries: await readDir(ctx.store, ent.id) };
}

/** mkdir; returns the path created (auto-renamed on a clash unless createParents). */
export async function makeDir(
  ctx: Ctx,
  user: User,
  repoId: string,
  p: string,
  createParents: boolean,
): Promise<string> {
  let comps = splitPath(createParents ? canonicalDir(p) : p);
  if (comps.length === 0) throw new HttpError(400, 'Path invalid.');
  // the new folders' names are stored NFC; an existing parent is looked up as given (seahub)
  comps = comps.map((c, i) => (createParents || i === comps.length - 1 ? checkName(c) : c));
  ctx.checkDirentName(comps[comps.length - 1]);
  const now = nowSec();
  return guard(() =>
    ctx.heads.change(repoId, user.email, async (roots) => {
      const root = roots.get(repoId)!;
      if (createParents) {
        const existing = await lookup(ctx.store, root, comps);
        if (existing) {
          if (existing.type !== 'dir') throw new HttpError(400, 'A file with that name already exists.');
          return { root, desc: '', result: '/' + comps.join('/') };
        }
        const newRoot = await updateDir(ctx.store, root, comps, (e) => e, {
          now,
          modifier: user.email,
          createParents: true,
        });
        return { root: newRoot, desc: `Added directory "${comps[comps.length - 1]}"`, result: '/' + comps.join('/') };
      }
      const parent = comps.slice(0, -1);
      let name = comps[comps.length - 1];
      const newRoot = await updateDir(
        ctx.store,
        root,
        parent,
        (entries) => {
          name = uniqueName(entries, name);
          return [...entries, { name, type: 'dir', id: ZERO_ID, mtime: now, size: 0, modifier: user.email }];
        },
        { now, modifier: user.email },
      );
      return { root: newRoot, desc: `Added directory "${name}"`, result: '/' + [...parent, name].join('/') };
    }),
  );
}

export interface RenameResult {
  name: string;
  entry: DirEnt;
}

/** Renames the entry at `p`; an existing target name is auto-renamed. Same name: returns null. */
export async function renameEntry(
  ctx: Ctx,
  user: User,
  repoId: string,
  p: string,
  newName: string,
  want?: 'file' | 'dir',
): Promise<RenameResult | null> {
  const comps = splitPath(p);
  if (comps.length === 0) throw new HttpError(400, 'Path invalid.');
  newName = ctx.checkDirentName(checkName(newName));
  const oldName = comps[comps.length - 1];
  const parent = comps.slice(0, -1);
  const now = nowSec();
  return guard(() =>
    ctx.heads.change(repoId, user.email, async (roots) => {
      const root = roots.get(repoId)!;
      const ent = await lookup(ctx.store, root, comps);
      if (!ent || (want && ent.type !== want))
        throw new HttpError(404, want === 'dir' ? 'Folder not found.' : 'File not found.');
      ctx.checkNotLocked(user, repoId, '/' + comps.join('/'));
      if (newName === oldName) return { root, desc: '', result: null };
      let finalName = newName;
      let moved: DirEnt = ent;
      const newRoot = await updateDir(
        ctx.store,
        root,
        parent,
        (entries) => {
          const rest = entries.filter((e) => e.name !== oldName);
          finalName = uniqueName(rest, newName);
          moved = { ...ent, name: finalName };
          return [...rest, moved];
        },
        { now, modifier: user.email },
      );
      moveLocksAndStars(ctx, repoId, '/' + comps.join('/'), repoId, '/' + [...parent, finalName].join('/'));
      return {
        root: newRoot,
        desc: `Renamed "${oldName}" to "${finalName}"`,
        result: { name: finalName, entry: moved },
      };
    }),
  );
}

/** Deletes the entries `names` of folder `dir` (files or folders). Returns how many existed. */
export async function deleteEntries(
  ctx: Ctx,
  user: User,
  repoId: string,
  dir: string,
  names: string[],
): Promise<number> {
  const parent = splitPath(canonicalDir(dir));
  const now = nowSec();
  return ctx.heads.change(repoId, user.email, async (roots) => {
    const root = roots.get(repoId)!;
    const folder = await lookup(ctx.store, root, parent);
    if (folder?.type !== 'dir') return { root, desc: '', result: 0 };
    const entries = await readDir(ctx.store, folder.id);
    const gone = entries.filter((e) => names.includes(e.name));
    if (gone.length === 0) return { root, desc: '', result: 0 };
    for (const g of gone) ctx.checkNotLocked(user, repoId, '/' + [...parent, g.name].join('/'));
    const newRoot = await updateDir(ctx.store, root, parent, (es) => es.filter((e) => !names.includes(e.name)), {
      now,
      modifier: user.email,
    });
    // locks go with what they lock (only the user's own can be left at this point)
    let dropped = false;
    for (const g of gone) dropped = ctx.db.dropLocksUnder(repoId, '/' + [...parent, g.name].join('/')) || dropped;
    if (dropped) void ctx.db.save();
    const desc =
      gone.length === 1 ? `Deleted "${gone[0].name}"` : `Deleted "${gone[0].name}" and ${gone.length - 1} more files.`;
    return { root: newRoot, desc, kind: 'delete', result: gone.length };
  });
}

/** A move the real server fails with a 500 (see transfer); each endpoint words it its own way. */
export class UnescapedMoveName extends HttpError {
  constructor() {
    super(500, 'Internal Server Error');
  }
}

/**
 * Copies or moves `names` from (srcRepo, srcDir) into (dstRepo, dstDir);
 * clashes in the destination are auto-renamed. Returns the final names.
 */
export async function transfer(
  ctx: Ctx,
  user: User,
  op: 'copy' | 'move',
  srcRepo: string,
  srcDir: string,
  names: string[],
  dstRepo: string,
  dstDir: string,
  /**
   * sameFolderRenames: a move into the folder it is in gives each name a free
   * one ("x (1).txt"), as the C server's move does (it adds to the destination
   * before it removes from the source); otherwise such a move changes nothing
   */
  opts: { sameFolderRenames?: boolean } = {},
): Promise<{ name: string; entry: DirEnt }[]> {
  const src = splitPath(srcDir);
  const dst = splitPath(dstDir);
  const now = nowSec();
  // between two libraries the blocks are copied (decrypted, encrypted again): an encrypted one's password
  // is needed first (seafile-server repo-op.c cross_repo_copy); within one library only the tree changes
  if (srcRepo !== dstRepo) {
    for (const id of [srcRepo, dstRepo]) {
      const meta = ctx.db.repo(id);
      if (meta) ctx.requireUnlocked(user, meta);
    }
  }
  const srcOwner = ctx.db.repo(srcRepo)?.owner;
  const dstOwner = ctx.db.repo(dstRepo)?.owner;
  const quotaKey = op === 'copy' || srcOwner !== dstOwner ? dstOwner : undefined;
  return ctx.underQuota(quotaKey, () =>
    guard(() =>
      ctx.heads.change([srcRepo, dstRepo], user.email, async (roots) => {
        const srcRoot = roots.get(srcRepo)!;
        const sources: DirEnt[] = [];
        for (const n of names) {
          const ent = await lookup(ctx.store, srcRoot, [...src, n]);
          if (!ent) throw new HttpError(404, `File ${'/' + [...src, n].join('/')} not found.`);
          if (op === 'move') ctx.checkNotLocked(user, srcRepo, '/' + [...src, n].join('/'));
          if (ent.type === 'dir' && srcRepo === dstRepo) {
            // a folder cannot go inside itself
            const self = [...src, n];
            if (dst.length >= self.length && self.every((c, i) => dst[i] === c)) {
              throw new HttpError(400, 'Cannot copy or move a folder into itself.');
            }
          }
          sources.push(ent);
        }
        const dstFolder = await lookup(ctx.store, roots.get(dstRepo)!, dst);
        if (dstFolder?.type !== 'dir') throw new TreeNotFound(dst);
        // seafile-server 10.0's move within a library (move_file_same_repo) lists the names as JSON
        // with printf and no escaping: a '"' or '\\' in a name breaks it and the move fails, nothing moved
        if (op === 'move' && srcRepo === dstRepo && names.some((n) => /["\\]/.test(n))) throw new UnescapedMoveName();
        const sameFolder = srcRepo === dstRepo && op === 'move' && src.join('/') === dst.join('/');
        if (sameFolder && !opts.sameFolderRenames) {
          return { root: srcRoot, desc: '', result: sources.map((e) => ({ name: e.name, entry: e })) };
        }
        if (dstRepo !== srcRepo || op === 'copy') {
          const added = sources.reduce((s, e) => s + e.size, 0);
          const dstMeta = ctx.db.repo(dstRepo)!;
          const srcMeta = ctx.db.repo(srcRepo)!;
          if (op === 'copy' || dstMeta.owner !== srcMeta.owner) {
            if (added > (await ctx.quotaLeft(dstMeta))) throw new HttpError(443, 'Out of quota.');
          }
        }
        const out: { name: string; entry: DirEnt }[] = [];
        let srcNewRoot = srcRoot;
        if (op === 'move') {
          srcNewRoot = await updateDir(ctx.store, srcRoot, src, (es) => es.filter((e) => !names.includes(e.name)), {
            now,
            modifier: user.email,
          });
        }
        const dstBase = srcRepo === dstRepo ? srcNewRoot : roots.get(dstRepo)!;
        const dstNewRoot = await updateDir(
          ctx.store,
          dstBase,
          dst,
          (es) => {
            const next = [...es];
            for (const s of sources) {
              const name = uniqueName(sameFolder ? [...next, ...sources] : next, s.name);
              const entry: DirEnt = { ...s, name };
              next.push(entry);
              out.push({ name, entry });
            }
            return next;
          },
          { now, modifier: user.email },
        );
        if (op === 'move') {
          for (let i = 0; i < sources.length; i++) {
            moveLocksAndStars(
              ctx,
              srcRepo,
              '/' + [...src, sources[i].name].join('/'),
              dstRepo,
              '/' + [...dst, out[i].name].join('/'),
            );
          }
        }
        const what =
          sources.length === 1 ? `"${sources[0].name}"` : `"${sources[0].name}" and ${sources.length - 1} more files`;
        const verb = op === 'copy' ? 'Copied' : 'Moved';
        const changes = new Map<string, { root: string; desc: string; kind?: string; result: typeof out }>();
        if (srcRepo === dstRepo) {
          changes.set(srcRepo, { root: dstNewRoot, desc: `${verb} ${what}`, result: out });
        } else {
          changes.set(dstRepo, { root: dstNewRoot, desc: `${verb} ${what}`, result: out });
          changes.set(srcRepo, { root: srcNewRoot, desc: `${verb} ${what}`, kind: 'move-out', result: out });
        }
        return changes;
      }),
    ),
  );
}

/** Adds or replaces file entries in a folder (uploads, create, revert). Returns the final names. */
export async function putFiles(
  ctx: Ctx,
  user: User,
  repoId: string,
  dir: string,
  files: { name: string; id: string; size: number; mtime?: number }[],
  opts: { replace: boolean; createParents?: boolean; desc?: string },
): Promise<{ name: string; id: string; size: number }[]> {
  const comps = splitPath(dir);
  const now = nowSec();
  const meta = ctx.db.repo(repoId);
  return ctx.underQuota(meta?.owner, async () => {
    if (meta) {
      // what the files add once those they replace are gone, checked when they are committed
      const folder = await lookup(ctx.store, await headRoot(ctx, repoId), comps);
      const there = folder?.type === 'dir' ? await readDir(ctx.store, folder.id) : [];
      const replaced = (name: string) =>
        opts.replace ? (there.find((e) => e.name === name && e.type === 'file')?.size ?? 0) : 0;
      await ctx.requireQuota(
        meta,
        files.reduce((n, f) => n + f.size - replaced(f.name), 0),
      );
    }
    return putFilesNow(ctx, user, repoId, comps, files, opts, now);
  });
}

async function putFilesNow(
  ctx: Ctx,
  user: User,
  repoId: string,
  comps: string[],
  files: { name: string; id: string; size: number; mtime?: number }[],
  opts: { replace: boolean; createParents?: boolean; desc?: string },
  now: number,
): Promise<{ name: string; id: string; size: number }[]> {
  return guard(() =>
    ctx.heads.change(repoId, user.email, async (roots) => {
      const root = roots.get(repoId)!;
      const out: { name: string; id: string; size: number }[] = [];
      const newRoot = await updateDir(
        ctx.store,
        root,
        comps,
        (entries) => {
          let next = [...entries];
          for (const f of files) {
            let name = f.name;
            const existing = next.find((e) => e.name === name);
            if (existing && opts.replace && existing.type === 'file') {
              ctx.checkNotLocked(user, repoId, '/' + [...comps, name].join('/'));
              // the same content and time: nothing changes (real servers put a new entry, with the upload's
              // time unless last_modify gives one: the same bytes sent again take a new time on 10.0)
              if (existing.id === f.id && existing.mtime === (f.mtime ?? now)) {
                out.push({ name, id: f.id, size: f.size });
                continue;
              }
              next = next.filter((e) => e !== existing);
            } else if (existing) {
              name = uniqueName(next, name);
            }
            next.push({ name, type: 'file', id: f.id, size: f.size, mtime: f.mtime ?? now, modifier: user.email });
            out.push({ name, id: f.id, size: f.size });
          }
          return next;
        },
        { now, modifier: user.email, createParents: opts.createParents },
      );
      const first = out[0]?.name ?? '';
      const desc =
        opts.desc ?? (out.length > 1 ? `Added "${first}" and ${out.length - 1} more files.` : `Added "${first}"`);
      return { root: newRoot, desc, result: out };
    }),
  );
}

/** Replaces the content of an existing file (update link). Null when the target is missing. */
export async function updateFile(
  ctx: Ctx,
  user: User,
  repoId: string,
  p: string,
  file: { id: string; size: number; mtime?: number },
): Promise<string | null> {
  const comps = splitPath(p);
  if (comps.length === 0) return null;
  const now = nowSec();
  const meta = ctx.db.repo(repoId);
  return ctx.underQuota(meta?.owner, async () => {
    const old = await lookup(ctx.store, await headRoot(ctx, repoId), comps);
    if (meta && old?.type === 'file') await ctx.requireQuota(meta, file.size - old.size);
    return updateFileNow(ctx, user, repoId, comps, file, now);
  });
}

async function updateFileNow(
  ctx: Ctx,
  user: User,
  repoId: string,
  comps: string[],
  file: { id: string; size: number; mtime?: number },
  now: number,
): Promise<string | null> {
  const parent = comps.slice(0, -1);
  const name = comps[comps.length - 1];
  return ctx.heads.change(repoId, user.email, async (roots) => {
    const root = roots.get(repoId)!;
    const ent = await lookup(ctx.store, root, comps);
    if (ent?.type !== 'file') return { root, desc: '', result: null };
    ctx.checkNotLocked(user, repoId, '/' + comps.join('/'));
    // the same content: nothing to commit, unless the client sent another time (touch -d of a clean file)
    if (ent.id === file.id && (file.mtime === undefined || file.mtime === ent.mtime))
      return { root, desc: '', result: file.id };
    const newRoot = await updateDir(
      ctx.store,
      root,
      parent,
      (es) =>
        es.map((e) =>
          e.name === name ? { ...e, id: file.id, size: file.size, mtime: file.mtime ?? now, modifier: user.email } : e,
        ),
      { now, modifier: user.email },
    );
    return { root: newRoot, desc: `Modified "${name}"`, result: file.id };
  });
}

/** Locks and stars follow a renamed or moved file. */
function moveLocksAndStars(ctx: Ctx, fromRepo: string, fromPath: string, toRepo: string, toPath: string): void {
  if (ctx.db.moveMarks(fromRepo, fromPath, toRepo, toPath)) void ctx.db.save();
}

/** Puts a folder of an old commit back into `dir` (its parents created, its name auto-renamed on a clash). */
export async function restoreDir(ctx: Ctx, user: User, repoId: string, dir: string, ent: DirEnt): Promise<string> {
  const comps = splitPath(dir);
  const now = nowSec();
  const meta = ctx.db.repo(repoId);
  return ctx.underQuota(meta?.owner, async () => {
    if (meta) await ctx.requireQuota(meta, ent.size);
    return guard(() =>
      ctx.heads.change(repoId, user.email, async (roots) => {
        let name = ent.name;
        const root = await updateDir(
          ctx.store,
          roots.get(repoId)!,
          comps,
          (entries) => {
            // as real servers: the same folder back already changes nothing; a name taken otherwise gets " (n)" (after any dot)
            if (entries.some((e) => e.name === ent.name && e.type === 'dir' && e.id === ent.id)) return entries;
            const taken = new Set(entries.map((e) => e.name));
            for (let i = 1; taken.has(name); i++) name = `${ent.name} (${i})`;
            return [...entries, { ...ent, name }];
          },
          { now, modifier: user.email, createParents: true },
        );
        return { root, desc: `Recovered deleted directory "${name}"`, result: '/' + [...comps, name].join('/') };
      }),
    );
  });
}
