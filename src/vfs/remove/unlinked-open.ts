// Files unlinked while still open. libfuse renames such a file to
// .fuse_hiddenNNN and unlinks that name at the last close; the server's copy
// is deleted at once (remove/unlink.ts), and the mount shows the hidden name
// with the size and time the file had until then.
export interface Unlinked {
  size: number;
  mtimeMs: number;
}

export class UnlinkedOpen {
  private readonly files = new Map<string, Unlinked>();

  get(repo: string, path: string): Unlinked | undefined {
    return this.files.get(`${repo}\u0000${path}`);
  }

  has(repo: string, path: string): boolean {
    return this.files.has(`${repo}\u0000${path}`);
  }

  set(repo: string, path: string, f: Unlinked): void {
    this.files.set(`${repo}\u0000${path}`, f);
  }

  /** forget the name (its unlink at the last close); false when it was not one */
  delete(repo: string, path: string): boolean {
    return this.files.delete(`${repo}\u0000${path}`);
  }
}
