// The file server's direct download of Seafile 12.0 and later:
//   GET {file server}/repos/{repo}/files/{path}?op=download
// with the API token in the Authorization header, no download link first (one
// seahub round trip fewer per file opened). The file server's address is
// learned from a download link the server gave (`{file server}/files/{token}/
// {name}`), so the token goes only to the file server this server named.
// The URL names a path, not a version: every answer's ETag (the file id) is
// compared with the version the caller reads (the reader does), and a file
// whose ETag differs is read through a download link again.

export class DirectDownloads {
  private root: string | null = null;

  /** learns the file server's address from a download link's URL */
  noteLink(url: string): void {
    const i = url.indexOf('/files/');
    if (i > 0 && /^https?:\/\//.test(url)) this.root = url.slice(0, i);
  }

  /** the direct URL of `path` in `repoId`, or null while the file server's address is not known */
  urlFor(repoId: string, path: string): string | null {
    if (!this.root) return null;
    const p = path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
    return `${this.root}/repos/${repoId}/files/${p}?op=download`;
  }

  /** whether `url` is a direct URL of this file server (it takes the API token) */
  isDirect(url: string): boolean {
    return this.root !== null && url.startsWith(`${this.root}/repos/`);
  }
}
