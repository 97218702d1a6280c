// Shares of a sub-folder of a library (`dir/shared_items/?p=/sub`), kept by
// the Db (store/db.ts) in the same db.json. seahub makes a virtual library of the
// folder for its recipient; this server keeps the record (listed by
// shared_items and /api/v2.1/shared-folders/) but gives the recipient no
// access through it: a recipient who needs the files gets the library shared.

export interface FolderShare {
  repoId: string;
  path: string; // '/a/b', never '/'
  from: string;
  /** an e-mail (share_type user) or a group id (share_type group) */
  to: string | number;
  permission: 'r' | 'rw';
}

export interface FolderSharesFile {
  folderShares?: FolderShare[];
}

export class FolderShares {
  private list: FolderShare[] = [];

  load(d: FolderSharesFile): void {
    this.list = d.folderShares ?? [];
  }

  toFile(): Required<FolderSharesFile> {
    return { folderShares: this.list };
  }

  of(repoId: string, path: string): FolderShare[] {
    return this.list.filter((s) => s.repoId === repoId && s.path === path);
  }

  /** Every folder share of libraries `owner` made. */
  by(owner: string): FolderShare[] {
    return this.list.filter((s) => s.from === owner);
  }

  set(s: FolderShare): void {
    const old = this.list.find((x) => x.repoId === s.repoId && x.path === s.path && x.to === s.to);
    if (old) old.permission = s.permission;
    else this.list.push(s);
  }

  /** True when there was one. */
  remove(repoId: string, path: string, to: string | number): boolean {
    const before = this.list.length;
    this.list = this.list.filter((s) => !(s.repoId === repoId && s.path === path && s.to === to));
    return before !== this.list.length;
  }

  forgetRepo(repoId: string): void {
    this.list = this.list.filter((s) => s.repoId !== repoId);
  }

  forgetUser(email: string): void {
    this.list = this.list.filter((s) => s.from !== email && s.to !== email);
  }

  forgetGroup(id: number): void {
    this.list = this.list.filter((s) => s.to !== id);
  }
}
