// The shapes of folders and files as the client returns them: listings and
// their entries, a file's details and thumbnail, share and upload links,
// starred files and search results.

/** The id the service gives every empty file and empty folder (no content object behind it). */
export const ZERO_ID = '0000000000000000000000000000000000000000';

export interface DirEntry {
  type: 'file' | 'dir';
  name: string;
  id: string;
  mtime: number; // epoch seconds
  size?: number; // files only
  permission?: 'r' | 'rw';
  parent_dir?: string; // recursive listings only, normalised to '/a/b' (no trailing slash except root)
  /** servers with locking: the file is locked, by whom, and whether by this account */
  is_locked?: boolean;
  lock_owner?: string;
  locked_by_me?: boolean;
  [extra: string]: unknown;
}

/** Result of a folder listing. `uptodate` means the `oid` passed in is still current. */
export type DirListing = { uptodate: false; oid: string | null; entries: DirEntry[] } | { uptodate: true; oid: string };

/** a picture's thumbnail as the server sent it */
export interface Thumbnail {
  /** the media type of the answer ('image/png' from seahub) */
  type: string;
  bytes: Buffer;
}

export interface FileDetail {
  type: 'file';
  id: string;
  name: string;
  mtime: number;
  size: number;
  permission?: 'r' | 'rw';
  [extra: string]: unknown;
}

export interface ShareLink {
  username: string;
  repo_id: string;
  ctime: string;
  expire_date: string | null;
  token: string;
  view_cnt: number;
  link: string;
  path: string;
  is_expired: boolean;
  obj_name?: string;
  is_dir?: boolean;
  repo_name?: string;
}

export interface UploadLinkShare {
  username: string;
  repo_id: string;
  ctime: string;
  token: string;
  link: string;
  path: string;
}

export interface StarredFile {
  repo: string;
  mtime: number;
  org: number;
  path: string;
  dir: boolean;
  size: number;
}

export interface SearchResult {
  total: number;
  has_more: boolean;
  results: { repo_id: string; name: string; oid: string; fullpath: string; size: number; last_modified: number }[];
}
