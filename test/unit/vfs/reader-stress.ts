// The reader's randomized stress run: RemoteReader called the way the FUSE
// adapter calls it (no FUSE), against StressServer's faults, with a small
// memory budget, a small disk cache and short timers, by several kernel-like
// readers at once. Every byte a read returns is checked against the seeded
// content. One seed = one reproducible configuration (timing aside).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SeafileClient } from '../../../src/client/client.js';
import type { SeafileApi } from '../../../src/client/types.js';
import { ChunkCache } from '../../../src/vfs/read/chunk-cache/chunk-cache.js';
import { RemoteReader, type ReaderOptions, type ReadPattern, type RemoteFile } from '../../../src/vfs/read/reader.js';
import { mulberry32, seededBytes, StressServer, type Faults } from './reader-stress-server.js';

/** what the stress run needs of a reader (lets an older reader be run for comparison) */
export interface StressReader {
  read(f: RemoteFile, target: Buffer, len: number, offset: number, pat: ReadPattern): number | Promise<number>;
  closePattern(f: RemoteFile, pat: ReadPattern): void;
  readonly stats: Record<string, number>;
}

export type MakeReader = (api: SeafileApi, opts: ReaderOptions, disk: ChunkCache | null) => StressReader;

export interface StressResult {
  seed: number;
  config: string;
  reads: number;
  bytes: number;
  /** reads that returned other bytes than the file's (the bug hunted) */
  wrong: string[];
  /** reads that failed or hung */
  failed: string[];
  server: StressServer['stats'];
  reader: Record<string, number>;
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runStress(
  seed: number,
  opts: { makeReader?: MakeReader; faults?: Partial<Faults>; reader?: Partial<ReaderOptions>; scale?: number } = {},
): Promise<StressResult> {
  const rng = mulberry32(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rng() * xs.length)];
  const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
  const scale = opts.scale ?? 1;
  const t0 = Date.now();

  const chunk = pick([16, 32, 64, 128]) * 1024;
  // the stream over a bare socket or through undici: the client's choice (its rawStreams option)
  const { rawStreams, ...ropts }: ReaderOptions & { rawStreams: boolean } = {
    chunkSize: chunk,
    memoryBytes: chunk * pick([1, 2, 3, 6, 12, 24]),
    initialWindow: chunk * int(1, 4),
    maxWindow: chunk * int(4, 40),
    segmentSize: chunk * int(1, 8),
    maxSegmentsPerFile: int(1, 4),
    streamMinBytes: pick([0, 256 * 1024, 2 * 1024 * 1024]),
    fillAfterRandomReads: int(3, 20),
    rawStreams: rng() < 0.75,
    streamIdleMs: int(150, 400),
    stallMs: 700,
    linkTtlMs: 60_000,
    ...opts.reader,
  };
  const faults: Faults = {
    latencyMs: pick([0, 2, 10]),
    stallProb: pick([0, 0.05, 0.15]),
    stallMs: 1200,
    dropProb: pick([0, 0.05, 0.15]),
    linkLifeMs: pick([
      [60_000, 60_000],
      [150, 600],
    ] as [number, number][]),
    ignoreRange: rng() < 0.1,
    maxPiece: pick([1500, 16 * 1024, 100 * 1024]),
    ...opts.faults,
  };
  const diskBytes = pick([0, 2, 8]) * 1024 * 1024;

  // files of a few chunks up to several MiB, odd sizes
  const files = new Map<string, Buffer>();
  const nFiles = int(2, 4);
  for (let i = 0; i < nFiles; i++) {
    const size = Math.max(
      1,
      Math.floor(pick([3 * chunk, 700 * 1024, 3 * 1024 * 1024, 6 * 1024 * 1024]) * scale) + int(-999, 999),
    );
    files.set(`/f${i}.bin`, seededBytes(seed * 31 + i, size));
  }
  const config = `chunk=${chunk / 1024}K mem=${ropts.memoryBytes! / chunk}ch win=${ropts.initialWindow! / chunk}-${ropts.maxWindow! / chunk}ch seg=${ropts.segmentSize! / chunk}ch segs=${ropts.maxSegmentsPerFile} streamMin=${ropts.streamMinBytes} fillAfter=${ropts.fillAfterRandomReads} raw=${rawStreams} idle=${ropts.streamIdleMs} disk=${diskBytes >> 20}M faults=${JSON.stringify(faults)} files=${[...files.values()].map((b) => b.length).join(',')}`;

  const server = new StressServer(files, faults, mulberry32(seed ^ 0x5eed));
  await server.start();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'seafs-stress-'));
  const client = new SeafileClient({
    baseUrl: server.url,
    maxRetries: 2,
    retryBaseMs: 5,
    retryMaxMs: 20,
    timeoutMs: 5_000,
    transferTimeoutMs: 700,
    rawStreams,
  });
  const api = {
    downloadLink: async (_repo: string, p: string) => ({ url: server.link(p), oid: null }),
    download: (url: string, range?: { start: number; end?: number }) => client.download(url, range),
    streamGet: client.streamGet.bind(client),
  } as unknown as SeafileApi;
  let disk: ChunkCache | null = null;
  if (diskBytes > 0) {
    disk = new ChunkCache(path.join(dir, String(process.pid)), chunk, diskBytes);
    await disk.init();
  }
  const make: MakeReader = opts.makeReader ?? ((a, o, d) => new RemoteReader(a, o, d));
  const reader = make(api, ropts, disk);

  const wrong: string[] = [];
  const failed: string[] = [];
  let reads = 0;
  let bytes = 0;
  const names = [...files.keys()];
  const remote = (name: string): RemoteFile => ({
    repo: 'r',
    path: name,
    size: files.get(name)!.length,
    version: `v-${name}`,
  });

  /** one read, checked; a read that takes far longer than any fault could explain counts as hung */
  const check = async (who: string, f: RemoteFile, pat: ReadPattern, off: number, len: number): Promise<void> => {
    const data = files.get(f.path)!;
    const target = Buffer.alloc(len, 0xa5);
    reads++;
    let timer: NodeJS.Timeout | undefined;
    try {
      const r = reader.read(f, target, len, off, pat);
      const n =
        typeof r === 'number'
          ? r
          : await Promise.race([
              r,
              new Promise<never>((_, rej) => {
                timer = setTimeout(() => rej(new Error('read hung for 15 s')), 15_000);
              }),
            ]);
      const want = Math.max(0, Math.min(len, data.length - off));
      if (n !== want) {
        wrong.push(`${who}: ${f.path} read(${off}, ${len}) returned ${n} bytes, want ${want}`);
        return;
      }
      bytes += n;
      if (!target.subarray(0, n).equals(data.subarray(off, off + n))) {
        let k = 0;
        while (target[k] === data[off + k]) k++;
        wrong.push(
          `${who}: ${f.path} read(${off}, ${len}): first wrong byte at file offset ${off + k} (chunk ${Math.floor((off + k) / chunk)}, +${(off + k) % chunk})`,
        );
      }
    } catch (e) {
      failed.push(`${who}: ${f.path} read(${off}, ${len}) failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  };

  /**
   * The kernel reading a file in order: 128 KiB (or smaller) requests, several
   * in flight and answered out of order; now and then a skip ahead, a jump
   * back, a pause longer than the stream's idle timer, or (closeMidway) the
   * handle closed while reads are in flight and the file opened again.
   */
  const sequential = async (who: string, name: string, closeMidway: boolean): Promise<void> => {
    const r = mulberry32(Math.floor(rng() * 2 ** 32));
    const f = remote(name);
    const size = f.size;
    let pat: ReadPattern = { next: 0, window: 0 };
    const req = [128 * 1024, 64 * 1024, 4096][Math.floor(r() * 3)];
    const depth = 1 + Math.floor(r() * 4);
    let off = r() < 0.7 ? 0 : Math.floor((r() * size) / 4096) * 4096;
    const limit = Math.ceil(300 * scale);
    const pending = new Set<Promise<void>>();
    let queued: number[] = [];
    for (let n = 0; n < limit; n++) {
      if (off >= size && !queued.length) {
        // the end: read the file again, as a new open
        await Promise.all(pending);
        reader.closePattern(f, pat);
        pat = { next: 0, window: 0 };
        off = 0;
      }
      while (queued.length < depth + 1 && off < size) {
        queued.push(off);
        off += req;
      }
      // the kernel's readahead requests arrive slightly out of order
      const k = Math.floor(r() * Math.min(queued.length, 2));
      const at = queued[k];
      queued.splice(k, 1);
      const p = check(who, f, pat, at, req).finally(() => pending.delete(p));
      pending.add(p);
      if (pending.size >= depth) await Promise.race(pending);
      const x = r();
      if (x < 0.02) {
        off = Math.min(size, off + Math.floor((r() * 3 * 1024 * 1024) / 4096) * 4096); // skip ahead
        queued = [];
      } else if (x < 0.035) {
        off = Math.floor((r() * off) / 4096) * 4096; // back
        queued = [];
      } else if (x < 0.04 && r() < 0.25) {
        await Promise.all(pending);
        await sleep((ropts.streamIdleMs ?? 5000) + 100); // idle: the stream times out
      } else if (closeMidway && x < 0.06) {
        reader.closePattern(f, pat); // released with reads in flight, then opened again
        pat = { next: 0, window: 0 };
      }
    }
    await Promise.all(pending);
    reader.closePattern(f, pat);
  };

  /** small reads at random places (two at a time), which also start the background fill */
  const random = async (who: string, name: string): Promise<void> => {
    const r = mulberry32(Math.floor(rng() * 2 ** 32));
    const f = remote(name);
    const pat: ReadPattern = { next: 0, window: 0 };
    const n = Math.ceil(60 * scale);
    for (let i = 0; i < n; i += 2) {
      const one = () => {
        const at = r() < 0.5 ? Math.floor(r() * f.size) : Math.floor((r() * f.size) / 4096) * 4096;
        return check(who, f, pat, at, 4096);
      };
      await Promise.all([one(), one()]);
    }
    reader.closePattern(f, pat);
  };

  const workers: Promise<void>[] = [];
  const nWorkers = int(2, 5);
  for (let w = 0; w < nWorkers; w++) {
    const name = pick(names);
    const kind = rng();
    if (kind < 0.45) workers.push(sequential(`seq${w}`, name, false));
    else if (kind < 0.65) workers.push(sequential(`close${w}`, name, true));
    else if (kind < 0.8) {
      // two handles reading one file at the same time
      workers.push(sequential(`twinA${w}`, name, false), sequential(`twinB${w}`, name, false));
    } else workers.push(random(`rand${w}`, name));
  }
  try {
    await Promise.all(workers);
  } finally {
    await server.close();
    await client.close().catch(() => {});
    await disk?.close();
    await rm(dir, { recursive: true, force: true });
  }
  return {
    seed,
    config,
    reads,
    bytes,
    wrong,
    failed,
    server: server.stats,
    reader: { ...reader.stats },
    ms: Date.now() - t0,
  };
}
