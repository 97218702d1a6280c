// Cuts the body of a download into the reader's fixed-size chunks: the one
// piece shared by the streaming GETs and the ranged GETs. A body may start
// before the first wanted chunk (a server that ignores Range answers the
// whole file): those bytes are skipped. Two ways in, never mixed on one body:
// - push(piece): pieces the caller got from elsewhere are kept as slices
//   (no copy; the chunk is the list of slices);
// - space() / wrote(n): the caller reads straight into the chunk's own
//   buffer (a socket with `onread`), so no byte is copied at all.
// Neither allocates per call beyond the chunk buffers themselves.

/** A chunk's bytes, in order; their lengths add up to the chunk's size. */
export type ChunkParts = Buffer[];

/** Called with each complete chunk; false stops the assembler (nothing more is delivered). */
export type ChunkSink = (idx: number, parts: ChunkParts, size: number) => boolean;

const SKIP_BYTES = 64 * 1024;
let skipScratch: Buffer | null = null;

export class ChunkAssembler {
  /** the chunk being filled (the next one to be delivered) */
  idx: number;
  private pos: number;
  private readonly start: number;
  private want: number;
  private fill = 0;
  private parts: ChunkParts = [];
  private buf: Buffer | null = null;
  private stopped = false;

  /**
   * Chunks `first`..`last` of a file of `fileSize` bytes; the body's first
   * byte is at file offset `bodyStart` (<= first * chunk). `alloc` gives the
   * buffers for space()/wrote().
   */
  constructor(
    private readonly chunk: number,
    private readonly fileSize: number,
    first: number,
    private readonly last: number,
    bodyStart: number,
    private readonly sink: ChunkSink,
    private readonly alloc: (size: number) => Buffer = Buffer.allocUnsafe,
  ) {
    if (bodyStart > first * chunk) throw new RangeError(`body starts at ${bodyStart}, after chunk ${first}`);
    this.idx = first;
    this.start = first * chunk;
    this.pos = bodyStart;
    this.want = this.sizeOf(first);
  }

  /** every chunk up to `last` was delivered, or the sink said stop */
  get done(): boolean {
    return this.stopped || this.idx > this.last;
  }

  private sizeOf(i: number): number {
    return Math.min(this.chunk, this.fileSize - i * this.chunk);
  }

  private complete(parts: ChunkParts): void {
    const i = this.idx++;
    const size = this.want;
    this.fill = 0;
    this.parts = [];
    this.buf = null;
    if (this.idx <= this.last) this.want = this.sizeOf(this.idx);
    if (!this.sink(i, parts, size)) this.stopped = true;
  }

  /** Body bytes as received; returns false once done (the rest of the body is not needed). */
  push(piece: Buffer): boolean {
    let p = piece;
    if (this.pos < this.start) {
      const skip = Math.min(p.length, this.start - this.pos);
      this.pos += skip;
      p = p.subarray(skip);
    }
    while (p.length > 0 && !this.done) {
      const n = Math.min(p.length, this.want - this.fill);
      this.parts.push(n === p.length ? p : p.subarray(0, n));
      this.fill += n;
      this.pos += n;
      p = p.subarray(n);
      if (this.fill === this.want) this.complete(this.parts);
    }
    return !this.done;
  }

  /**
   * Where the next body bytes should be read to: the unfilled rest of the
   * current chunk's buffer, or a scratch area while skipping. Never empty
   * unless done.
   */
  space(): Buffer {
    if (this.pos < this.start) {
      skipScratch ??= Buffer.allocUnsafe(SKIP_BYTES);
      return skipScratch.subarray(0, Math.min(SKIP_BYTES, this.start - this.pos));
    }
    if (this.done) return Buffer.alloc(0);
    this.buf ??= this.alloc(this.want);
    return this.buf.subarray(this.fill, this.want);
  }

  /** `n` bytes were put at the start of the last space(); returns false once done */
  wrote(n: number): boolean {
    if (this.pos < this.start) {
      const skip = Math.min(n, this.start - this.pos);
      this.pos += skip;
      n -= skip;
      if (n === 0) return !this.done;
      throw new RangeError('wrote past the skip area');
    }
    if (this.done || n === 0) return !this.done;
    if (!this.buf || this.fill + n > this.want) throw new RangeError('wrote past the chunk');
    this.fill += n;
    this.pos += n;
    if (this.fill === this.want) this.complete([this.buf]);
    return !this.done;
  }

  /** copy bytes received elsewhere (e.g. with the response header) through space()/wrote() */
  copyIn(src: Buffer, from: number, to: number): boolean {
    while (from < to && !this.done) {
      const dst = this.space();
      const n = Math.min(dst.length, to - from);
      src.copy(dst, 0, from, from + n);
      from += n;
      this.wrote(n);
    }
    return !this.done;
  }

  /** the buffer of a partly filled chunk (space()/wrote() mode), for reuse once the body is abandoned */
  takePartial(): Buffer | null {
    const b = this.buf;
    this.buf = null;
    this.fill = 0;
    return b;
  }
}
