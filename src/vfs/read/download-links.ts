// Download links of the read engine: one reusable link per file version,
// renewed before it expires, and a GET on it that asks for a fresh link once
// when the server refuses the old one (expired or spent). An earlier version
// (`commit` set) is read through revision links, which real servers give out
// for one use only: a fresh one per GET.
import { ApiError } from '../../client/errors.js';
import type { RangeDownload, SeafileApi } from '../../client/types.js';
import { VfsError } from '../errors.js';
import type { ReaderStats, RemoteFile } from './types.js';

export class DownloadLinks {
  private readonly links = new Map<string, { url: string; at: number; p?: Promise<string> }>();
  /**
   * the direct URL of a file when the server has one (Seafile 12.0+, unencrypted libraries; set by the
   * mount once it knows): no download link first. Its answers are checked against the version read.
   */
  direct: ((f: RemoteFile) => Promise<string | null>) | null = null;
  /** told once when the direct URL turns out not to be served (404/405): download links from then on */
  directLog: ((line: string) => void) | null = null;
  /** versions whose direct answer named another version: read through download links from then on */
  private readonly notDirect = new Set<string>();

  constructor(
    private readonly api: SeafileApi,
    private readonly ttl: number,
    private readonly stats: ReaderStats,
    /** a file turned out to have changed on the server */
    private readonly onStale?: (f: RemoteFile) => void,
  ) {}

  /** A reusable download link for this version of the file, renewed before it expires. */
  async link(f: RemoteFile, renew = false): Promise<string> {
    if (f.commit) return this.revisionLink(f, f.commit);
    const k = `${f.repo}\u0000${f.path}\u0000${f.version}`;
    if (this.direct && !renew && /^[0-9a-f]{40}$/.test(f.version) && !this.notDirect.has(k)) {
      const url = await this.direct(f);
      if (url) return url;
    }
    const hit = this.links.get(k);
    if (hit && !renew) {
      if (hit.p) return hit.p;
      if (Date.now() - hit.at < this.ttl) return hit.url;
    }
    this.stats.linkRequests++;
    const p = this.api.downloadLink(f.repo, f.path, { reuse: true }).then(
      (l) => {
        this.links.set(k, { url: l.url, at: Date.now() });
        // the path holds another version than the listing said (changed on the server since):
        // key what comes by the version it is, and let the listing be refreshed
        if (l.oid && /^[0-9a-f]{40}$/.test(f.version) && l.oid !== f.version) {
          f.version = l.oid;
          f.sizeUnsure = true;
          this.onStale?.(f);
        }
        return l.url;
      },
      (e) => {
        this.links.delete(k);
        throw e;
      },
    );
    this.links.set(k, { url: '', at: 0, p });
    if (this.links.size > 10_000) this.links.delete(this.links.keys().next().value as string);
    return p;
  }

  private async revisionLink(f: RemoteFile, commit: string): Promise<string> {
    if (!this.api.fileRevisionLink) throw new VfsError('ENOTSUP', 'this server gives no earlier versions');
    this.stats.linkRequests++;
    return this.api.fileRevisionLink(f.repo, f.path, commit);
  }

  /** Whether an answer to `url` is of another version than `f` reads: a direct URL's answer named another. */
  otherVersion(f: RemoteFile, url: string, etag: string | null | undefined): boolean {
    if (!this.isDirect(url) || etag === f.version) return false;
    this.notDirect.add(`${f.repo}\u0000${f.path}\u0000${f.version}`);
    return true;
  }

  private isDirect(url: string): boolean {
    return /\/repos\/[0-9a-f-]{36}\/files\//.test(url);
  }

  /** A failed GET of `url`: a direct URL the server does not route (404/405) turns the direct download off. */
  noteFailure(url: string, e: unknown): void {
    if (!this.direct || !this.isDirect(url) || !(e instanceof ApiError) || (e.status !== 404 && e.status !== 405))
      return;
    this.direct = null;
    this.directLog?.(`the file server does not serve direct downloads (HTTP ${e.status}); using download links`);
  }

  /** A GET of the file (a range of it) through the API client. */
  async get(f: RemoteFile, range?: { start: number; end?: number }): Promise<RangeDownload> {
    const url = await this.link(f);
    this.stats.rangeRequests++;
    try {
      const res = await this.api.download(url, range, { repoId: f.repo });
      if (!this.otherVersion(f, url, res.etag)) return res;
      // the path holds another version now: through a download link, which says which
      res.body.destroy();
      const fresh = await this.link(f, true);
      this.stats.rangeRequests++;
      return this.api.download(fresh, range, { repoId: f.repo });
    } catch (e) {
      this.noteFailure(url, e);
      // an expired or spent link: ask for a new one once
      if (
        e instanceof ApiError &&
        (e.status === 403 || e.status === 404 || e.kind === 'forbidden' || e.kind === 'unauthorized')
      ) {
        const fresh = await this.link(f, true);
        this.stats.rangeRequests++;
        return this.api.download(fresh, range, { repoId: f.repo });
      }
      throw e;
    }
  }
}
