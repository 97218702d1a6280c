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

  /** A GET of the file (a range of it) through the API client. */
  async get(f: RemoteFile, range?: { start: number; end?: number }): Promise<RangeDownload> {
    const url = await this.link(f);
    this.stats.rangeRequests++;
    try {
      return await this.api.download(url, range, { repoId: f.repo });
    } catch (e) {
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
