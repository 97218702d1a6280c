// A download server for the reader's stress test: serves seeded files with
// Range, and misbehaves on purpose: latency before the header, a body
// written in odd pieces, a body that stalls midway, a connection dropped
// midway, links that expire (403), and optionally a server that ignores
// Range. Each fault hits a given (file, range start) at most once, so a
// reader that retries from where it stopped always gets through.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { prng as mulberry32 } from '../../helpers/tree.js';
export { mulberry32 };

/** `n` pseudo-random bytes from `seed` */
export function seededBytes(seed: number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n + 3);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b.writeUInt32LE(x >>> 0, i);
  }
  return b.subarray(0, n);
}

export interface Faults {
  /** most delay before the response header */
  latencyMs: number;
  /** chance that a response stops midway for up to `stallMs` */
  stallProb: number;
  stallMs: number;
  /** chance that a response's connection is closed midway */
  dropProb: number;
  /** links live this long (a random age in [min, max]), then answer 403 */
  linkLifeMs: [number, number];
  /** answer 200 with the whole file, whatever the Range */
  ignoreRange: boolean;
  /** largest single write of the body */
  maxPiece: number;
}

/** a server without faults (links that outlive the test), with `over` set */
export function faultsOf(over: Partial<Faults> = {}): Faults {
  const none: Faults = {
    latencyMs: 0,
    stallProb: 0,
    stallMs: 0,
    dropProb: 0,
    linkLifeMs: [60_000, 60_000],
    ignoreRange: false,
    maxPiece: 64 * 1024,
  };
  return { ...none, ...over };
}

export class StressServer {
  /** bodyBytes: what the server wrote of bodies, whether or not the reader took it (socket buffers) */
  readonly stats = { requests: 0, stalls: 0, drops: 0, refused: 0, linkRequests: 0, bodyBytes: 0 };
  url = '';
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly links = new Map<string, { name: string; expires: number }>();
  private readonly faulted = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private tokens = 0;

  constructor(
    private readonly files: Map<string, Buffer>,
    private readonly faults: Faults,
    private readonly rng: () => number,
  ) {
    this.server = http.createServer((req, res) => void this.answer(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** a fresh download link for a file */
  link(name: string): string {
    this.stats.linkRequests++;
    const [lo, hi] = this.faults.linkLifeMs;
    const token = `t${++this.tokens}`;
    this.links.set(token, { name, expires: Date.now() + lo + this.rng() * (hi - lo) });
    return `${this.url}/d/${token}/${encodeURIComponent(name)}`;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        r();
      }, ms);
      this.timers.add(t);
    });
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.stats.requests++;
    const m = /^\/d\/([^/]+)\/(.+)$/.exec(req.url ?? '');
    const link = m ? this.links.get(m[1]) : undefined;
    if (!m || !link || link.expires < Date.now()) {
      this.stats.refused++;
      res.writeHead(403, { 'Content-Type': 'text/plain' }).end('Bad access token');
      return;
    }
    const data = this.files.get(link.name)!;
    const r = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let start = 0;
    let end = data.length - 1;
    let status = 200;
    if (r && !this.faults.ignoreRange) {
      start = Number(r[1]);
      if (r[2]) end = Math.min(end, Number(r[2]));
      status = 206;
    }
    await this.sleep(this.rng() * this.faults.latencyMs);
    const headers: http.OutgoingHttpHeaders = {
      'Content-Length': end - start + 1,
      'Content-Type': 'application/octet-stream',
    };
    if (status === 206) headers['Content-Range'] = `bytes ${start}-${end}/${data.length}`;
    res.writeHead(status, headers);
    // at most one fault per (file, asked start), at a random point of the body
    const key = `${link.name}@${r?.[1] ?? 0}`;
    let stallAt = -1;
    let dropAt = -1;
    if (!this.faulted.has(key)) {
      const x = this.rng();
      if (x < this.faults.dropProb) dropAt = start + Math.floor(this.rng() * (end - start + 1));
      else if (x < this.faults.dropProb + this.faults.stallProb)
        stallAt = start + Math.floor(this.rng() * (end - start + 1));
      if (dropAt >= 0 || stallAt >= 0) this.faulted.add(key);
    }
    let closed = false;
    res.on('close', () => (closed = true));
    let off = start;
    while (off <= end && !closed) {
      if (dropAt >= 0 && off >= dropAt) {
        this.stats.drops++;
        res.socket?.destroy();
        return;
      }
      if (stallAt >= 0 && off >= stallAt) {
        this.stats.stalls++;
        stallAt = -1;
        await this.sleep(this.rng() * this.faults.stallMs);
        continue;
      }
      let n = Math.min(end + 1 - off, 1 + Math.floor(this.rng() * this.faults.maxPiece));
      if (dropAt > off) n = Math.min(n, dropAt - off);
      if (stallAt > off) n = Math.min(n, stallAt - off);
      const more = res.write(data.subarray(off, off + n));
      off += n;
      this.stats.bodyBytes += n;
      if (!more && !closed) {
        await new Promise<void>((resolve) => {
          const go = () => {
            res.off('drain', go);
            res.off('close', go);
            resolve();
          };
          res.on('drain', go);
          res.on('close', go);
        });
      }
    }
    if (!closed) res.end();
  }
}
