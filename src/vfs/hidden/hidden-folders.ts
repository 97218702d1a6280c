// The two virtual folders at each library's root, .seafile-history and
// .seafile-trash, hidden as ZFS's snapdir=hidden hides .zfs: readdir never
// lists them (so ls -a, find, du, rsync and backups never walk into them),
// yet they answer to their path (cd, ls, cat, cp, mv). Everything in them is
// read-only (EROFS), but a trash entry moved out is restored (trash.ts).
// A real file or folder of the same name in the library wins: it is shown
// and changed as usual, the virtual folder is then unreachable there (logged
// once per library).
import { VfsError } from '../errors.js';
import type { Loc } from '../libraries/library-paths.js';
import { HISTORY_DIR, HistoryView } from './history.js';
import { TRASH_DIR, TrashView } from './trash.js';
import type { HiddenDeps, HiddenNode } from './types.js';

export type { HiddenDeps, HiddenNode } from './types.js';

type Which = { view: 'history' | 'trash'; repo: string; rest: string };

export class HiddenFolders {
  readonly history: HistoryView;
  readonly trash: TrashView;
  private readonly shadowed = new Set<string>();

  constructor(private readonly d: HiddenDeps) {
    this.history = new HistoryView(d);
    this.trash = new TrashView(d);
  }

  /** which hidden folder `loc` is in (null: none, or a real entry of that name holds the path) */
  private async which(loc: Loc): Promise<Which | null> {
    if (loc.repo === null || !loc.path.startsWith('/.seafile-')) return null;
    for (const [view, name] of [
      ['history', HISTORY_DIR],
      ['trash', TRASH_DIR],
    ] as const) {
      const top = `/${name}`;
      if (loc.path !== top && !loc.path.startsWith(`${top}/`)) continue;
      if (await this.d.lookup(loc.repo, top)) {
        const k = `${loc.repo}\u0000${name}`;
        if (!this.shadowed.has(k)) {
          this.shadowed.add(k);
          this.d.log(`the library holds a real ${top}: it is shown instead of the virtual one`);
        }
        return null;
      }
      return { view, repo: loc.repo, rest: loc.path.slice(top.length) || '/' };
    }
    return null;
  }

  /** The hidden node at `loc`; null when `loc` is not in a hidden folder. */
  async at(loc: Loc): Promise<HiddenNode | null> {
    const w = await this.which(loc);
    if (!w) return null;
    return w.view === 'history' ? this.history.at(w.repo, w.rest) : this.trash.at(w.repo, w.rest, loc.readOnly);
  }

  /** EROFS when `loc` is in a hidden folder (a change there: write, create, delete, mkdir, setattr) */
  async refuse(loc: Loc): Promise<void> {
    if (await this.which(loc)) throw new VfsError('EROFS', `${loc.path} is an earlier state, read-only`);
  }

  /**
   * A rename touching a hidden folder (mount paths `src`, `dst`): a trash
   * entry moved out is restored; anything else there is EROFS. Returns false
   * when neither path is hidden (an ordinary rename).
   */
  async rename(src: string, dst: string): Promise<boolean> {
    // a path that does not resolve (the root of every library, a missing library) is the renamer's to refuse
    const loc = (p: string) => this.d.resolve(p).catch(() => null);
    const [sl, dl] = [await loc(src), await loc(dst)];
    const s = sl && (await this.which(sl));
    const d = dl && (await this.which(dl));
    if (!s && !d) return false;
    if (!dl) return false;
    if (d || !s || s.view !== 'trash') throw new VfsError('EROFS', 'earlier versions and the trash are read-only');
    const parts = s.rest.split('/').filter(Boolean);
    if (parts.length !== 1) throw new VfsError('EROFS', 'only an entry of the trash itself can be restored');
    await this.trash.restore(s.repo, parts[0], src, `/${TRASH_DIR}${s.rest}`, dst, dl);
    return true;
  }

  /** something of `repo` was deleted or uploaded: its trash and versions are asked afresh */
  changed(repo: string): void {
    this.trash.forget(repo);
    this.history.forget(repo);
  }
}
