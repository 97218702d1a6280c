// What the drive knows of one file's blocks: for each fixed-size block of the
// temp file, the SHA-1 of its bytes as they are now (null: written since, or
// never hashed), and a count bumped by every write touching it, so a hash
// that started before a write is not taken for the block's id. Ids come from
// the hashes the drive computed (its own uploads and writes) or from the
// server's list of the version the local data started from (downloadblks),
// which is trusted only once two of its blocks hashed here match it (a file
// chunked by a desktop client has other boundaries).

export class BlockMap {
  ids: (string | null)[] = [];
  /**
   * per block, the mark of the last write touching it (0: none since the map
   * started). Marks come from one counter that never goes back, not a count
   * per block: a block cut off by a truncate and written again the same way
   * would count to the same number, and a hash begun before would pass for it.
   */
  gen: number[] = [];
  private marks = 0;
  /** the file's size as the map knows it */
  size = 0;
  /** ids came from the server's list and are not checked yet */
  unverified = false;
  /** the end of the last write while the file has been written in order (null: a write went back) */
  seqEnd: number | null = 0;
  /** how far below the end of the writes so far a write may land and still count as in order (half a block) */
  get reorder(): number {
    return this.blockSize / 2;
  }
  /** ids the server said it holds, or that were sent to it */
  readonly onServer = new Set<string>();
  /** ids this mount sent (counted apart from those the server had) */
  readonly sent = new Set<string>();

  constructor(
    readonly blockSize: number,
    size: number,
  ) {
    // the content as it is when the map starts: not written yet (a base list may name its blocks)
    const n = this.count(size);
    this.ids = new Array<string | null>(n).fill(null);
    this.gen = new Array<number>(n).fill(0);
    this.size = size;
  }

  count(size: number): number {
    return Math.ceil(size / this.blockSize);
  }

  /** bytes of block `i` in a file of `size` */
  lengthOf(i: number, size: number): number {
    return Math.min(this.blockSize, size - i * this.blockSize);
  }

  /** `len` bytes were written at `pos` */
  touch(pos: number, len: number, sizeAfter: number): void {
    this.resize(sizeAfter);
    if (len <= 0) return;
    const first = Math.floor(pos / this.blockSize);
    const last = Math.floor((pos + len - 1) / this.blockSize);
    for (let i = first; i <= last; i++) this.bump(i);
    // the kernel may hand over a few writes at once, and they can complete out of order: a write a little
    // below the end so far still counts as in order
    if (this.seqEnd !== null) this.seqEnd = pos >= this.seqEnd - this.reorder ? Math.max(this.seqEnd, pos + len) : null;
  }

  /** The file is `size` bytes now (truncate, or a write past the end): blocks whose length changed. */
  resize(size: number): void {
    const old = this.size;
    if (size === old) return;
    const n = this.count(size);
    const B = this.blockSize;
    if (size > old) {
      for (let i = Math.floor(old / B); i < n; i++) this.bump(i);
    } else {
      this.ids.length = n;
      this.gen.length = n;
      if (size % B !== 0) this.bump(n - 1);
    }
    this.size = size;
  }

  /** block i changed: its id is unknown, and a hash begun before no longer matches its mark */
  private bump(i: number): void {
    this.ids[i] = null;
    this.gen[i] = ++this.marks;
  }

  /** emptied or rewritten from the start (O_TRUNC): nothing known */
  reset(size: number): void {
    this.ids = [];
    this.gen = [];
    this.size = 0;
    this.unverified = false;
    this.seqEnd = 0;
    this.resize(size);
  }

  /**
   * The server's block list of the version the local data started from, for
   * a file of `size` bytes then: blocks not written since take its ids.
   * Returns false when the list cannot be this file's fixed cut.
   */
  adoptBase(list: string[], size: number): boolean {
    if (list.length !== this.count(size)) return false;
    for (let i = 0; i < list.length && i < this.ids.length; i++) {
      if ((this.gen[i] ?? 0) === 0 && this.ids[i] === null) this.ids[i] = list[i];
    }
    this.unverified = true;
    return true;
  }

  /** ids from the drive's own hashes of this content (a file it uploaded), in order */
  adoptOwn(list: string[]): void {
    for (let i = 0; i < list.length && i < this.ids.length; i++) {
      if ((this.gen[i] ?? 0) === 0) this.ids[i] = list[i];
    }
  }

  /** the blocks with no id now */
  unknown(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.ids.length; i++) if (this.ids[i] == null) out.push(i);
    return out;
  }

  /** every block's id (null when one is unknown) */
  complete(): string[] | null {
    return this.ids.every((x) => typeof x === 'string') ? (this.ids as string[]) : null;
  }
}
