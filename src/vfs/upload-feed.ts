// The streaming upload of one file while it is being written: a pump reads the
// temp file from offset 0 in bounded pieces, behind the writes, and hands them
// to a chunked upload, two reused buffers at a time (memory stays flat
// whatever the file's size). It only works while the file grows by appends:
// a write below what the pump has read, a truncate, a rename or an unlink
// aborts it, and the file is uploaded whole after its last close instead.
import type { FileHandle } from 'node:fs/promises';
import type { FileUploadStream } from '../client/stream-upload.js';

const PIECE = 1024 * 1024;

/** What the feed needs of the file being written. */
export interface FeedSource {
  readonly fh: FileHandle | null;
  readonly size: number;
}

export class UploadFeed {
  /** bytes of the file the pump has taken (read or being read); a write below this breaks the stream */
  claimed = 0;
  /** why the stream can no longer be used (aborted, failed); null while it is alive */
  dead: unknown = null;
  private up: FileUploadStream | null = null;
  private wake: (() => void) | null = null;
  private finishing = false;
  private pumped: Promise<void>;
  private end!: () => void;
  /** resolves once the request is over (finished, failed or aborted) */
  readonly ended = new Promise<void>((r) => (this.end = r));

  constructor(
    private readonly src: FeedSource,
    /** where the stream goes; a file that moved must not finish it */
    readonly repo: string,
    readonly path: string,
    readonly kind: 'upload' | 'update',
    opening: Promise<FileUploadStream>,
  ) {
    this.pumped = this.pump(opening);
    this.pumped.catch(() => {});
  }

  /** the file grew: the pump may go on */
  notify(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  abort(why: unknown): void {
    this.dead ??= why;
    this.up?.abort();
    this.notify();
  }

  private async pump(opening: Promise<FileUploadStream>): Promise<void> {
    try {
      const up = await opening;
      this.up = up;
      if (this.dead) {
        up.abort();
        return;
      }
      const bufs = [Buffer.allocUnsafe(PIECE), Buffer.allocUnsafe(PIECE)];
      let which = 0;
      let inFlight: Promise<void> = Promise.resolve();
      while (!this.dead) {
        const end = this.src.size;
        // whole pieces while the file grows: fewer, larger reads and sends
        if (end - this.claimed >= PIECE || (this.finishing && this.claimed < end)) {
          const fh = this.src.fh;
          if (!fh) throw new Error('temp file closed during a stream');
          const n = Math.min(PIECE, end - this.claimed);
          const pos = this.claimed;
          this.claimed += n;
          const buf = bufs[which];
          which ^= 1;
          const { bytesRead } = await fh.read(buf, 0, n, pos);
          if (bytesRead !== n) throw new Error('temp file shrank during a stream');
          // the other buffer's send must be done before it is reused next round
          await inFlight;
          if (this.dead) break;
          inFlight = up.write(buf.subarray(0, n));
          inFlight.catch(() => {});
        } else if (this.finishing) {
          break;
        } else {
          await inFlight;
          if (this.src.size - this.claimed < PIECE && !this.finishing && !this.dead) await new Promise<void>((r) => (this.wake = r));
        }
      }
      await inFlight;
    } catch (e) {
      this.dead ??= e;
      this.up?.abort();
    } finally {
      if (this.dead) this.end();
    }
  }

  /**
   * Sends what is left of the file (up to its size now), then `trailing`, and
   * ends the body. Resolves with the new file id and the bytes sent.
   */
  async finish(trailing: [string, string][]): Promise<{ id: string; size: number }> {
    this.finishing = true;
    this.notify();
    try {
      await this.pumped;
      if (this.dead || !this.up) throw this.dead ?? new Error('stream never opened');
      const size = this.claimed;
      return { id: await this.up.finish(trailing), size };
    } finally {
      this.end();
    }
  }
}
