// Where the disk cache holds each Seafile block: block id -> the cached
// versions (file ids) whose block at some index has those bytes, with the
// block's length. Two kinds of entry:
// - sure: the bytes were hashed and found to be the block id, so the length
//   is a fact (a SHA-1 names one content);
// - candidates: what the server's list says a cached block is, with the
//   length the fixed cut gives, not hashed. A read does not pay for hashing
//   what it brings; a candidate is hashed only when another version (or
//   another place in the same one) wants its id, and becomes sure or is
//   dropped then.
// Whether the bytes are still on disk is checked again when they are used
// (markers, and the hash of what is read). Kept for later mounts as lines
// appended to a file in the cache dir, each with a checksum (a torn or
// garbled line is skipped; candidates start with "? ", which older mounts
// skip); rewritten without the versions no longer cached when it has grown
// well past what it holds. Several mounts may append to it at once: a line
// lost to another's rewrite only costs a download.
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, readFile, rename, unlink, writeFile } from 'node:fs/promises';

export interface Holder {
  /** the cached version (file id) */
  version: string;
  /** the block's index in that version's list (it starts at idx * block size) */
  idx: number;
  /** the block's length */
  len: number;
  /** the version's size (its cache file's header must say so) */
  size: number;
}

/** holders kept per block id: the newest first */
const MAX_HOLDERS = 3;
const LINE = /^(\? )?([0-9a-f]{40}) ([0-9a-f]{40}) (\d+) (\d+) (\d+) ([0-9a-f]{8})$/;

function sum(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 8);
}

export class BlockIndex {
  private readonly map = new Map<string, Holder[]>();
  /** candidates (not hashed), by block id */
  private readonly maybe = new Map<string, Holder[]>();
  /** versions with at least one entry of either kind */
  private readonly versions = new Map<string, number>();
  private lines = 0;
  private pending: string[] = [];
  private writing: Promise<void> | null = null;
  private loading: Promise<void> | null = null;

  constructor(
    /** the file kept for later mounts (null: memory only) */
    private readonly file: string | null,
    /** whether a version's cache file is still there (entries of others are dropped when the file is rewritten) */
    private readonly cached: (version: string) => boolean = () => true,
  ) {}

  /** Reads what earlier mounts left (once); never rejects. */
  load(): Promise<void> {
    this.loading ??= (async () => {
      if (!this.file) return;
      const text = await readFile(this.file, 'latin1').catch(() => '');
      for (const line of text.split('\n')) {
        const m = LINE.exec(line);
        if (!m || sum(line.slice(0, -9)) !== m[7]) continue;
        this.lines++;
        if (!this.cached(m[3])) continue;
        const h = { version: m[3], idx: Number(m[4]), len: Number(m[5]), size: Number(m[6]) };
        if (!m[1]) {
          const c = this.candidates(m[2]).find((x) => x.version === h.version && x.idx === h.idx);
          if (c) this.drop(this.maybe, m[2], c);
          if (!this.holds(m[2], h.version, h.idx)) this.put(this.map, m[2], h);
        } else if (!this.holds(m[2], h.version, h.idx)) this.put(this.maybe, m[2], h);
      }
      if (this.lines > 2 * this.count() + 256) await this.rewrite();
    })();
    return this.loading;
  }

  get empty(): boolean {
    return this.map.size === 0 && this.maybe.size === 0;
  }

  /** the block's length, when some holder's bytes were found to be it */
  lengthOf(id: string): number | undefined {
    return this.map.get(id)?.[0]?.len;
  }

  holders(id: string): readonly Holder[] {
    return this.map.get(id) ?? [];
  }

  /** the version's block `idx` is known to be `id` */
  holds(id: string, version: string, idx: number): boolean {
    return this.holders(id).some((h) => h.version === version && h.idx === idx);
  }

  /** the candidates for `id` (not hashed), the newest first */
  candidates(id: string): readonly Holder[] {
    return this.maybe.get(id) ?? [];
  }

  /** the version's block `idx` is a candidate for `id`, or known to be it */
  noted(id: string, version: string, idx: number): boolean {
    return this.holds(id, version, idx) || this.candidates(id).some((h) => h.version === version && h.idx === idx);
  }

  /** some block of the version is known here */
  knows(version: string): boolean {
    return this.versions.has(version);
  }

  /** Notes a holder whose bytes were just hashed to `id` (a candidate of it is sure now); kept for later mounts. */
  add(id: string, h: Holder): void {
    if (this.holds(id, h.version, h.idx)) return;
    const c = this.candidates(id).find((x) => x.version === h.version && x.idx === h.idx);
    if (c) this.drop(this.maybe, id, c);
    this.put(this.map, id, h);
    this.keep(`${id} ${h.version} ${h.idx} ${h.len} ${h.size}`);
  }

  /** Notes what the server's list says a cached block is (not hashed); kept for later mounts. */
  suggest(id: string, h: Holder): void {
    if (this.noted(id, h.version, h.idx)) return;
    this.put(this.maybe, id, h);
    this.keep(`? ${id} ${h.version} ${h.idx} ${h.len} ${h.size}`);
  }

  /** The holder's bytes turned out not to be there (evicted, damaged, another cut): not offered again. */
  forget(id: string, h: Holder): void {
    this.drop(this.map, id, h);
    this.drop(this.maybe, id, h);
  }

  /** every candidate of the version goes (its list turned out not to be of the fixed cut) */
  forgetCandidates(version: string): void {
    for (const [id, hs] of [...this.maybe])
      for (const h of [...hs]) if (h.version === version) this.drop(this.maybe, id, h);
  }

  private keep(text: string): void {
    if (!this.file) return;
    this.pending.push(`${text} ${sum(text)}\n`);
    this.lines++;
    this.writing ??= this.writeSoon();
  }

  private drop(map: Map<string, Holder[]>, id: string, h: Holder): void {
    const hs = map.get(id);
    const i = hs?.indexOf(h) ?? -1;
    if (i < 0) return;
    hs!.splice(i, 1);
    if (!hs!.length) map.delete(id);
    this.unnote(h.version);
  }

  /** Writes what waits (for tests and unmount). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private put(map: Map<string, Holder[]>, id: string, h: Holder): void {
    let hs = map.get(id);
    if (!hs) map.set(id, (hs = []));
    // a length disagreeing with one already found cannot be (a SHA-1 names one content): not believed
    if (hs.length && hs[0].len !== h.len) return;
    hs.unshift(h);
    this.versions.set(h.version, (this.versions.get(h.version) ?? 0) + 1);
    if (hs.length > MAX_HOLDERS) this.unnote(hs.pop()!.version);
  }

  private unnote(version: string): void {
    const n = (this.versions.get(version) ?? 1) - 1;
    if (n > 0) this.versions.set(version, n);
    else this.versions.delete(version);
  }

  private count(): number {
    let n = 0;
    for (const hs of this.map.values()) n += hs.length;
    for (const hs of this.maybe.values()) n += hs.length;
    return n;
  }

  private async writeSoon(): Promise<void> {
    try {
      while (this.pending.length) {
        const text = this.pending.join('');
        this.pending = [];
        await appendFile(this.file!, text, { encoding: 'latin1', mode: 0o600 }).catch(() => {});
      }
      if (this.lines > 2 * this.count() + 4096) await this.rewrite();
    } finally {
      this.writing = null;
    }
  }

  /** the file anew with the entries held (under a temp name, then renamed over it) */
  private async rewrite(): Promise<void> {
    const tmp = `${this.file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    const out: string[] = [];
    for (const [map, mark] of [
      [this.map, ''],
      [this.maybe, '? '],
    ] as const)
      for (const [id, hs] of map)
        for (const h of hs) {
          const text = `${mark}${id} ${h.version} ${h.idx} ${h.len} ${h.size}`;
          out.push(`${text} ${sum(text)}\n`);
        }
    try {
      await writeFile(tmp, out.join(''), { encoding: 'latin1', mode: 0o600 });
      await rename(tmp, this.file!);
      this.lines = out.length;
    } catch {
      await unlink(tmp).catch(() => {});
    }
  }
}
