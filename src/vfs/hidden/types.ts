// What the hidden folders (.seafile-history, .seafile-trash) need from the
// vfs, and what they answer for a path: a read-only folder with a listing, or
// a read-only file read through the reader as an earlier version.
import type { DirEntry, SeafileApi } from '../../client/types.js';
import type { Attr, AttrShaper } from '../common/stat-attrs.js';
import type { Loc } from '../libraries/library-paths.js';
import type { RemoteFile } from '../read/types.js';

export interface HiddenDeps {
  api: SeafileApi;
  attrs: AttrShaper;
  /** how long a listing of versions or of the trash is kept (the mount's dir-cache-time) */
  ttlMs: number;
  resolve(p: string): Promise<Loc>;
  /** the current entry at a library path (null: none), from the listing cache */
  lookup(repo: string, path: string): Promise<DirEntry | null>;
  /** the current names of a folder */
  names(repo: string, dir: string): Promise<string[]>;
  /** forget the cached listing of a folder (and with `tree`, of everything beneath) */
  invalidate(repo: string, dir: string, tree?: boolean): void;
  /** an ordinary rename of the mount (mount paths) */
  rename(src: string, dst: string): Promise<void>;
  log(msg: string): void;
}

export type HiddenNode =
  { kind: 'dir'; attr: Attr; list: () => Promise<string[]> } | { kind: 'file'; attr: Attr; remote: RemoteFile };
