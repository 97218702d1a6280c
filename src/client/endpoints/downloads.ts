// Download endpoints: a file's download link, and the GET of such a link
// (optionally one range) through the HTTP core, its body streamed with
// transport failures turned into ApiError. The bare-socket streaming GET
// is raw-get.ts.
import { Readable } from 'node:stream';
import type { TokenBucket } from '../bandwidth.js';
import { header, protocolError, transportError, type HttpCore } from '../http.js';
import type { DownloadLink, RangeDownload } from '../types.js';
import { expectString } from './expect.js';
import { q, repoPath } from './paths.js';

/** A download URL; with reuse it serves many requests for about an hour, without it only one. */
export async function downloadLink(
  http: HttpCore,
  repoId: string,
  path: string,
  opts: { reuse?: boolean },
): Promise<DownloadLink> {
  const op = 'download link';
  const r = await http.json({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'file/'),
    query: { p: q(path), reuse: opts.reuse ? 1 : undefined },
    retry: 'read',
  });
  return { url: expectString(op, r.value), oid: header(r.headers, 'oid') };
}

/**
 * GET of a download URL with an optional single range; the body streams.
 * `repoId`: the file's library, unlocked again when the file server refuses
 * for want of its password.
 */
export async function download(
  http: HttpCore,
  url: string,
  range?: { start: number; end?: number },
  opts: { repoId?: string; auth?: boolean } = {},
): Promise<RangeDownload> {
  const op = 'download';
  const headers: Record<string, string> = {};
  if (range) headers.range = `bytes=${range.start}-${range.end ?? ''}`;
  const res = await http.send({
    op,
    method: 'GET',
    url,
    headers: { ...headers, accept: '*/*' },
    retry: 'read',
    ctx: 'download',
    repo: opts.repoId,
    transfer: 'download',
    accept: [416],
    // a direct download (12.0+) takes the API token; a link carries its own
    auth: opts.auth ?? false,
  });
  const etag =
    header(res.headers, 'etag')
      ?.replace(/^W\//, '')
      .replace(/^"(.*)"$/, '$1') ?? null;
  const contentRange = header(res.headers, 'content-range');
  if (res.status === 416) {
    await res.body.dump().catch(() => undefined);
    const total = /\/(\d+)\s*$/.exec(contentRange ?? '');
    return {
      status: 416,
      start: range?.start ?? 0,
      totalSize: total ? Number(total[1]) : null,
      etag,
      body: Readable.from([]),
    };
  }
  let start = 0;
  let totalSize: number | null = null;
  if (res.status === 206) {
    const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(contentRange ?? '');
    if (!m) {
      res.body.destroy();
      throw protocolError(op, `206 without a usable Content-Range: ${contentRange}`, 206);
    }
    start = Number(m[1]);
    totalSize = m[3] === '*' ? null : Number(m[3]);
  } else {
    // 200: the whole file, whatever was asked (encrypted libraries ignore Range)
    const len = header(res.headers, 'content-length');
    totalSize = len !== null && /^\d+$/.test(len) ? Number(len) : null;
  }
  return { status: res.status, start, totalSize, etag, body: new DownloadBody(res.body, op, http.bandwidth.down) };
}

/**
 * The response body with its failures (timeouts, resets) turned into
 * ApiError, read as the download limit allows (the source is paused while the
 * bucket is in debt); destroying it destroys the connection's body at once.
 */
class DownloadBody extends Readable {
  /** the reader wants more (no backpressure) */
  private wanted = true;
  /** waiting for the download limit */
  private held = false;

  constructor(
    private readonly src: Readable,
    op: string,
    bucket: TokenBucket,
  ) {
    super({ highWaterMark: 256 * 1024 });
    src.on('data', (chunk: Buffer) => {
      bucket.spend(chunk.length);
      if (!this.push(chunk)) this.wanted = false;
      const wait = this.held ? null : bucket.ready();
      if (wait) {
        this.held = true;
        void wait.then(() => {
          this.held = false;
          if (this.wanted && !this.destroyed) src.resume();
        });
      }
      if (!this.wanted || this.held) src.pause();
    });
    src.on('end', () => this.push(null));
    src.on('error', (e) => this.destroy(transportError(e, op)));
  }

  override _read(): void {
    this.wanted = true;
    if (!this.held) this.src.resume();
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    if (!this.src.destroyed) this.src.destroy();
    cb(err);
  }
}
