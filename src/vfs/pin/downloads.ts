// The downloads of pinned files: a queue worked a few files at a time
// (fetch.ts brings each whole into the disk cache), marking each file whole
// once it is, and noting the ones that failed (the server unreachable: until
// it answers again; else: until the next refresh).
import type { SeafileApi } from '../../client/types.js';
import { unreachable } from '../common/connectivity.js';
import type { ChunkCache } from '../read/chunk-cache/chunk-cache.js';
import type { BlockReuse } from '../read/block-reuse.js';
import { DownloadLinks } from '../read/download-links.js';
import { newReaderStats, type ReaderStats } from '../read/types.js';
import { fetchWhole } from './fetch.js';
import { msgOf } from './log-format.js';
import { pinKey, splitKey, type PinState } from './state.js';
import type { PinnedFile } from './store.js';

export interface DownloadDeps {
  api: SeafileApi;
  disk: ChunkCache | null;
  /** blocks of other cached versions taken instead of downloaded (the reader's; null: off) */
  reuse?: BlockReuse | null;
  log(msg: string): void;
  /** files fetched at once (default 3, as the reader fills a file with three ranges at a time) */
  concurrency?: number;
  /** a file changed on the server while it was fetched: the pins want a refresh now */
  onChanged(): void;
}

export class PinDownloads {
  private readonly queue: { repo: string; path: string }[] = [];
  private readonly queued = new Set<string>();
  private readonly active = new Map<string, { id: string; bytes: number }>();
  private readonly links: DownloadLinks;
  private readonly linkStats: ReaderStats = newReaderStats();

  constructor(
    private readonly s: PinState,
    private readonly d: DownloadDeps,
  ) {
    this.links = new DownloadLinks(d.api, 50 * 60_000, this.linkStats);
  }

  enqueue(repo: string, path: string): void {
    const k = pinKey(repo, path);
    // no disk cache (--cache-max-size 0): the pins are kept for a later mount with one, nothing is fetched
    if (this.s.closed || this.queued.has(k) || !this.d.disk) return;
    this.queued.add(k);
    this.queue.push({ repo, path });
    this.pump();
  }

  /** Queues the failed files again: all of them, or only those that waited for the server. */
  retryFailed(offlineOnly: boolean): void {
    for (const [k, f] of [...this.s.failed]) {
      if (offlineOnly && !f.offline) continue;
      const [repo, path] = splitKey(k);
      this.enqueue(repo, path);
    }
  }

  private pump(): void {
    const max = this.d.concurrency ?? 3;
    while (!this.s.closed && this.active.size < max && this.queue.length) {
      const t = this.queue.shift()!;
      const k = pinKey(t.repo, t.path);
      this.queued.delete(k);
      const f = this.s.libs.get(t.repo)?.files.get(t.path);
      if (!f || this.active.has(k)) continue;
      if (this.s.isWhole(t.repo, t.path, f)) continue;
      void this.fetch(t.repo, t.path, f);
    }
  }

  private async fetch(repo: string, path: string, f: PinnedFile): Promise<void> {
    const s = this.s;
    const k = pinKey(repo, path);
    const a = { id: f.id, bytes: 0 };
    this.active.set(k, a);
    const remote = { repo, path, size: f.size, version: f.id };
    const current = () => s.libs.get(repo)?.files.get(path)?.id === f.id;
    try {
      const ok = await fetchWhole(
        this.d.disk!,
        this.links,
        remote,
        {
          stopped: () => s.closed || !current(),
          onResume: (have, of) => this.d.log(`pinned ${path}: resuming its download (${have} of ${of} chunks here)`),
          onBytes: (n) => {
            a.bytes += n;
            s.stats.fetchedBytes += n;
          },
        },
        this.d.reuse ?? null,
      );
      if (ok && current()) {
        s.done.set(k, f.id);
        s.failed.delete(k);
        if (a.bytes > 0) s.stats.fetched++;
      }
    } catch (e) {
      if (!current() || s.closed) return;
      const offline = unreachable(e);
      const before = s.failed.get(k);
      s.failed.set(k, { error: msgOf(e), offline });
      if (remote.version !== f.id)
        this.d.onChanged(); // changed on the server: the refresh fetches the new one
      else if (!offline && !before) this.d.log(`pinned ${path}: download failed (${msgOf(e)}); tried again later`);
    } finally {
      this.active.delete(k);
      // a newer version came while this one was fetched: its turn now
      const now = s.libs.get(repo)?.files.get(path);
      if (now && now.id !== f.id) this.enqueue(repo, path);
      this.pump();
    }
  }

  /** bytes received for the files being fetched */
  get partialBytes(): number {
    let n = 0;
    for (const a of this.active.values()) n += a.bytes;
    return n;
  }

  /** files still to come (queued or fetching) */
  get backlog(): number {
    return this.queue.length + this.active.size;
  }

  /** Resolves once nothing is queued or fetching (for tests). */
  async idle(): Promise<void> {
    while (this.backlog > 0) await new Promise((r) => setTimeout(r, 10));
  }
}
