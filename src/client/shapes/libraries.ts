// The shapes of libraries as the client returns them: the list and one
// library's details, a new library, and a library's history and trash.

export type LibraryType = 'mine' | 'shared' | 'group' | 'org';

export interface Library {
  id: string;
  name: string;
  owner: string;
  permission: 'r' | 'rw';
  encrypted: boolean;
  mtime: number; // epoch seconds
  size: number;
  type: 'repo' | 'srepo' | 'grepo';
  root?: string;
  head_commit_id?: string;
  [extra: string]: unknown;
}

export interface LibraryInfo {
  id: string;
  name: string;
  /** "self" or "share" (whose it is, from the caller's side), not an e-mail: the list's `owner` is the e-mail */
  owner: string;
  size: number;
  root?: string;
  encrypted: boolean;
  mtime: number | null;
  permission?: 'r' | 'rw';
  [extra: string]: unknown;
}

export interface CommitRecord {
  id: string;
  parent_id: string | null;
  second_parent_id: string | null;
  root_id: string;
  repo_id: string;
  creator: string;
  creator_name: string;
  ctime: number;
  desc: string;
  rev_file_id?: string | null;
  rev_file_size?: number;
  rev_renamed_old_path?: string | null;
  [extra: string]: unknown;
}

export interface HistoryEntryV21 {
  commit_id: string;
  time: string;
  description: string;
  creator: string;
}

export interface TrashEntry {
  commit_id: string;
  obj_id: string;
  obj_name: string;
  is_dir: boolean;
  parent_dir: string;
  size: number;
  deleted_time: string;
  scan_stat: string | null;
}

/** What POST /api2/repos/ answers. */
export interface CreatedLibrary {
  repo_id: string;
  repo_name: string;
  encrypted: boolean | string | number;
  [extra: string]: unknown;
}

/** GET /api2/repos/{id}/history/ (V2). */
export interface LibraryHistory {
  commits: CommitRecord[];
  page_next: boolean;
}

/** GET /api/v2.1/repos/{id}/history/. */
export interface LibraryHistoryPage {
  data: HistoryEntryV21[];
  more: boolean;
}

/** GET /api/v2.1/repos/{id}/trash/: pass `scan_stat` back to get the next page. */
export interface TrashPage {
  data: TrashEntry[];
  scan_stat: string | null;
  more: boolean;
}
