// Transfer links: the file-server URLs that uploads and updates are sent to,
// cached per (kind, library, folder) since one serves many requests for
// about an hour, and the one rule for a link that stopped working: a 401,
// 403 or 404 from *using* it means expired or spent, so the link is fetched
// afresh once before the failure counts (a failure to get a link is never
// retried here). Built so that the read path's download links (kind
// 'download', keyed by file path) can move in beside them.
import { ApiError } from '../../client/errors.js';
import type { SeafileApi } from '../../client/types.js';

export type TransferKind = 'upload' | 'update';

/** The single "renew the link once" rule: a failure of a transfer that a fresh link may cure. */
export function linkExpired(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false;
  return (
    e.status === 401 || e.status === 403 || e.status === 404 || e.kind === 'forbidden' || e.kind === 'unauthorized'
  );
}

export class TransferLinks {
  private readonly cache = new Map<string, { url: string; at: number }>();
  /** links being asked for: a second caller (a prefetch, then its transfer) joins the request */
  private readonly asking = new Map<string, Promise<string>>();

  constructor(
    private readonly api: Pick<SeafileApi, 'uploadLink' | 'updateLink'>,
    private readonly ttlMs: number,
    /** called for every link asked of the server (for stats) */
    private readonly onRequest: () => void = () => {},
  ) {}

  private key(kind: TransferKind, repo: string, where: string): string {
    return `${kind}\u0000${repo}\u0000${where}`;
  }

  /** A link of `kind` for folder `dir`: cached, or asked of the server (one request at a time per link). */
  async get(kind: TransferKind, repo: string, dir: string): Promise<string> {
    const k = this.key(kind, repo, dir);
    const hit = this.cache.get(k);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.url;
    const asked = this.asking.get(k);
    if (asked) return asked;
    this.onRequest();
    const p = (kind === 'upload' ? this.api.uploadLink(repo, dir) : this.api.updateLink(repo, dir)).then((url) => {
      this.cache.set(k, { url, at: Date.now() });
      return url;
    });
    this.asking.set(k, p);
    const done = () => this.asking.get(k) === p && this.asking.delete(k);
    p.then(done, done);
    return p;
  }

  /**
   * Start getting a link a transfer will need in a moment, beside the
   * transfer's other round trip (the conflict check's listing): on a far
   * server that is one round trip less per folder. A failure is the
   * transfer's to meet when it asks again.
   */
  prefetch(kind: TransferKind, repo: string, dir: string): void {
    this.get(kind, repo, dir).catch(() => {});
  }

  drop(kind: TransferKind, repo: string, dir: string): void {
    const k = this.key(kind, repo, dir);
    this.cache.delete(k);
    this.asking.delete(k);
  }

  /** Runs a transfer with a link; when the link turns out expired, once more with a fresh one. */
  async use<T>(kind: TransferKind, repo: string, dir: string, transfer: (url: string) => Promise<T>): Promise<T> {
    const url = await this.get(kind, repo, dir);
    try {
      return await transfer(url);
    } catch (e) {
      if (!linkExpired(e)) throw e;
      this.drop(kind, repo, dir);
      return transfer(await this.get(kind, repo, dir));
    }
  }
}
