// Sending blocks: asking the server which blocks it lacks (upload-blks-link
// with blklist; a server without the path turns blocks off), and sending
// those to the raw URL, several per request and a few requests at once. A
// request the server finds too large (442/413) halves the request size for
// every later one; one cut off or failed is retried after asking again what
// is still lacking.
//
// The bytes: a piece carries `data` (hashed with `keep`: a pooled buffer,
// common/block-hasher.ts) or names a range of the temp file, read here as it is sent. A
// pooled buffer goes back to the hasher once the request that carried it
// has answered, or as soon as the server is found to hold its block; after
// a failed request it is kept for the retry, or, when none follows, left to
// the collector. Callers give back what they hold and do not hand over.
import { ApiError } from '../../../client/errors.js';
import type { BlockPiece, BlocksLink, SeafileApi } from '../../../client/types.js';
import { retryable } from '../../errors.js';
import type { BlockMap } from './block-map.js';
import { NoBlocks, type BlockSupport } from './block-support.js';
import type { Hashed, Hasher } from '../../common/block-hasher.js';

/** what `seafs status` shows of a file going by blocks */
export interface BlockProgress {
  /** bytes of the blocks the server lacks */
  toSend: number;
  /** of those, bytes sent */
  sent: number;
  /** blocks the server already holds */
  onServer: number;
  blocks: number;
}

export interface BlockStats {
  uploads: number;
  blocksSent: number;
  bytesSent: number;
  /** blocks the server already held (not sent) */
  blocksSkipped: number;
  fallbacks: number;
  hashedBytes: number;
}

/** a link of upload-blks-link and the folder it was asked for */
export type Link = BlocksLink & { dir: string };

/** a block changed while it was sent: the upload is tried again (the file is dirty anyway) */
class Changed extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class BlockSender {
  /** a request of raw blocks carries at most this many bytes (halved after a 442/413) */
  private perRequest: number;
  /** requests of blocks at once (per send, and groups on their way from the pump) */
  readonly concurrency: number;

  constructor(
    private readonly api: SeafileApi,
    private readonly hasher: Hasher,
    private readonly support: BlockSupport,
    private readonly stats: BlockStats,
    private readonly blockSize: number,
    o: { maxRequestBytes?: number; concurrency?: number },
  ) {
    this.perRequest = Math.max(blockSize, o.maxRequestBytes ?? 32 * 1024 * 1024);
    this.concurrency = o.concurrency ?? 2;
  }

  /** blocks per request */
  group(): number {
    return Math.max(1, Math.floor(this.perRequest / this.blockSize));
  }

  /** Hashes blocks `idx` of the temp file `tmp`, keeping their bytes (pooled: see the header). */
  async hashKept(tmp: string, m: BlockMap, idx: number[], size: number): Promise<Hashed[]> {
    const hashed = await Promise.all(
      idx.map((i) => this.hasher.hash(tmp, i * this.blockSize, m.lengthOf(i, size), true)),
    );
    this.stats.hashedBytes += hashed.reduce((n, h) => n + (h.data?.length ?? 0), 0);
    return hashed;
  }

  /** Asks the server which of `pieces` it lacks and sends those (the others' bytes go back). */
  async askAndSend(
    repo: string,
    dir: string,
    pieces: BlockPiece[],
    m: BlockMap,
    progress: BlockProgress | null,
  ): Promise<void> {
    const link = await this.ask(
      repo,
      dir,
      pieces.map((p) => p.id),
    );
    await this.send(link, this.lacking(link, pieces, m), repo, m, progress);
  }

  /**
   * Of `pieces` (asked about with `link`), those the server lacks; the
   * others are noted as on the server and their bytes given back.
   */
  private lacking(link: Link, pieces: BlockPiece[], m: BlockMap): BlockPiece[] {
    const lacking = new Set(link.missing);
    const out: BlockPiece[] = [];
    for (const p of pieces)
      if (lacking.has(p.id)) out.push(p);
      else {
        m.onServer.add(p.id);
        this.hasher.release(p.data);
      }
    return out;
  }

  /** upload-blks-link: which of `ids` the server lacks; a server without the path turns blocks off */
  async ask(repo: string, dir: string, ids: string[]): Promise<Link> {
    if (this.support.off) throw new NoBlocks();
    try {
      return { ...(await this.api.blocksLink!(repo, dir, ids)), dir };
    } catch (e) {
      if (e instanceof ApiError) {
        const absent =
          e.status === 405 ||
          e.status === 501 ||
          (e.status === 404 && !/folder|library|repo/i.test(e.serverMessage)) ||
          e.kind === 'protocol';
        if (absent) {
          this.support.turnOff(`upload-blks-link answered ${e.status || e.kind}`);
          throw new NoBlocks();
        }
        // seahub gives block links only for plain 'rw' (not custom permissions): the whole upload may still go
        if (e.status === 403) throw new NoBlocks();
      }
      throw e;
    }
  }

  /**
   * Sends `pieces` to the link's raw URL: several per request (up to the
   * request size), `concurrency` requests at once. Blocks read from the temp
   * file are hashed again as they are read: a block written since it was
   * hashed would be refused by the server (its id is checked), so the upload
   * stops and is tried again.
   */
  async send(
    link: Link,
    pieces: BlockPiece[],
    repo: string,
    m: BlockMap,
    progress: BlockProgress | null,
  ): Promise<void> {
    const queue = [...pieces];
    let failures = 0;
    const worker = async () => {
      while (queue.length > 0) {
        const batch: BlockPiece[] = [];
        let bytes = 0;
        while (queue.length > 0 && (batch.length === 0 || bytes + queue[0].length <= this.perRequest)) {
          const p = queue.shift()!;
          batch.push(p);
          bytes += p.length;
        }
        const ready = await Promise.all(batch.map((p) => this.bytesOf(p)));
        try {
          await this.api.uploadBlocks!(link.rawUrl, ready, { repoId: repo });
        } catch (e) {
          if (e instanceof ApiError && (e.status === 442 || e.status === 413) && batch.length > 1) {
            // larger than the server takes in one request: fewer blocks per request from now on
            this.perRequest = Math.max(this.blockSize, Math.floor(this.perRequest / 2));
            queue.unshift(...batch);
            continue;
          }
          // cut off (or failed): the server may hold some of them; ask, and send only the rest
          if (!retryable(e) || ++failures > 4) throw e;
          await sleep(Math.min(8000, 250 * 2 ** failures));
          const again = await this.ask(
            repo,
            link.dir,
            batch.map((p) => p.id),
          );
          const lacking = new Set(again.missing);
          for (const p of batch) if (!lacking.has(p.id)) m.onServer.add(p.id);
          queue.unshift(...batch.filter((p) => lacking.has(p.id)));
          continue;
        }
        for (const p of ready) {
          m.onServer.add(p.id);
          m.sent.add(p.id);
          // answered: the request holds the bytes no more
          this.hasher.release(p.data);
        }
        this.stats.blocksSent += batch.length;
        this.stats.bytesSent += bytes;
        if (progress) progress.sent += bytes;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, pieces.length) }, worker));
  }

  /** the bytes of a piece, read and checked against its id when they come from the temp file */
  private async bytesOf(p: BlockPiece): Promise<BlockPiece> {
    if (p.data) return p;
    const h = await this.hasher.hash(p.path!, p.offset, p.length, true);
    this.stats.hashedBytes += p.length;
    if (h.id !== p.id) throw new Changed('a block changed while it was uploaded');
    return { id: p.id, offset: 0, length: p.length, data: h.data };
  }
}
