// SHA-1 of file ranges off the event loop: a small pool of worker threads,
// each reading a range of a local file and hashing it, and handing the bytes
// back (transferred, not copied) when the caller will send them. The block
// path names each block by the SHA-1 of its bytes (the server checks it), so
// the bytes sent must be the bytes hashed: they come from the same read.
// The worker is a script of its own given as source (eval), so it runs the
// same under the compiled build and under the tests' TypeScript loader.
// Kept bytes are read into block-sized shared buffers that come back here
// once sent (release): shared memory is never handed over, so V8 counts it
// once, where a fresh buffer per block made it collect garbage all the time
// (docs/design/block-hasher.md has the figures).
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { openSync, readSync, closeSync } = require('node:fs');
const { createHash } = require('node:crypto');
parentPort.on('message', (m) => {
  let fd = -1;
  try {
    fd = openSync(m.path, 'r');
    const buf = m.ab ? Buffer.from(m.ab, 0, m.length) : Buffer.allocUnsafeSlow(m.length);
    let got = 0;
    while (got < m.length) {
      const n = readSync(fd, buf, got, m.length - got, m.offset + got);
      if (n <= 0) break;
      got += n;
    }
    if (got !== m.length) throw new Error('short read: ' + got + ' of ' + m.length + ' bytes at ' + m.offset);
    const id = createHash('sha1').update(buf).digest('hex');
    if (m.ab) parentPort.postMessage({ seq: m.seq, id });
    else if (m.keep) parentPort.postMessage({ seq: m.seq, id, buf: buf.buffer }, [buf.buffer]);
    else parentPort.postMessage({ seq: m.seq, id });
  } catch (e) {
    parentPort.postMessage({ seq: m.seq, error: String((e && e.message) || e), code: e && e.code });
  } finally {
    if (fd >= 0) closeSync(fd);
  }
});
`;

export interface Hashed {
  id: string;
  /** the bytes hashed, when asked for (`keep`); give them back with `release` once sent */
  data?: Buffer;
}

/** block-sized buffers kept for reuse at most (the pump and the commit hold about 12 at once) */
const POOL_MAX = 16;
/** the pool is emptied after this long without a hash (its memory goes back) */
const POOL_IDLE_MS = 3000;

interface Job {
  path: string;
  offset: number;
  length: number;
  keep: boolean;
  /** the pooled buffer the bytes are read into (keep only) */
  ab?: SharedArrayBuffer;
  resolve: (h: Hashed) => void;
  reject: (e: Error) => void;
}

interface Slot {
  w: Worker;
  busy: Job | null;
}

export class Hasher {
  private readonly slots: Slot[] = [];
  private readonly waiting: Job[] = [];
  private seq = 0;
  private closed = false;
  private free: SharedArrayBuffer[] = [];
  private idle: NodeJS.Timeout | null = null;
  /** bytes hashed since start (for stats) */
  bytes = 0;
  /** pooled buffers made (for tests and stats) */
  made = 0;

  constructor(
    private readonly size = 2,
    /** the size of pooled buffers: kept bytes up to this long are read into one */
    private readonly slab = 8 * 1024 * 1024,
  ) {}

  /** The SHA-1 (hex) of `length` bytes at `offset` of `path`, and the bytes when `keep`. */
  hash(path: string, offset: number, length: number, keep = false): Promise<Hashed> {
    if (this.closed) return Promise.reject(new Error('hasher closed'));
    return new Promise((resolve, reject) => {
      this.waiting.push({ path, offset, length, keep, resolve, reject });
      this.next();
    });
  }

  /**
   * Gives back the bytes of a `keep` hash once nothing reads them any more
   * (sent, or not to be sent). Bytes never given back are simply collected;
   * bytes given back while still in use would be overwritten, so a caller
   * gives back only after the request that carried them has answered.
   */
  release(data: Buffer | undefined): void {
    const ab = data?.buffer;
    if (!(ab instanceof SharedArrayBuffer) || this.closed || ab.byteLength !== this.slab) return;
    if (this.free.length >= POOL_MAX || this.free.includes(ab)) return;
    this.free.push(ab);
    this.idleLater();
  }

  private idleLater(): void {
    if (this.idle) this.idle.refresh();
    else {
      this.idle = setTimeout(() => {
        this.idle = null;
        this.free = [];
      }, POOL_IDLE_MS);
      this.idle.unref();
    }
  }

  private bufferFor(length: number): SharedArrayBuffer | undefined {
    if (length > this.slab) return undefined; // the worker allocates it (not pooled)
    const ab = this.free.pop();
    if (ab) return ab;
    this.made++;
    return new SharedArrayBuffer(this.slab);
  }

  private next(): void {
    while (this.waiting.length > 0) {
      let slot = this.slots.find((s) => s.busy === null);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const job = this.waiting.shift()!;
      slot.busy = job;
      slot.w.ref();
      if (job.keep) job.ab = this.bufferFor(job.length);
      slot.w.postMessage({
        seq: ++this.seq,
        path: job.path,
        offset: job.offset,
        length: job.length,
        keep: job.keep,
        ab: job.ab,
      });
    }
  }

  private spawn(): Slot {
    const w = new Worker(WORKER_SOURCE, { eval: true });
    const slot: Slot = { w, busy: null };
    w.unref();
    w.on('message', (m: { id?: string; buf?: ArrayBuffer; error?: string; code?: string }) => {
      const job = slot.busy;
      slot.busy = null;
      w.unref();
      if (job) {
        if (m.error !== undefined) {
          if (job.ab) this.release(Buffer.from(job.ab));
          job.reject(Object.assign(new Error(m.error), { code: m.code }));
        } else {
          this.bytes += job.length;
          const buf = job.ab ?? m.buf;
          job.resolve(buf ? { id: m.id!, data: Buffer.from(buf, 0, job.length) } : { id: m.id! });
        }
      }
      this.next();
    });
    w.on('error', (e) => this.lost(slot, e));
    w.on('exit', () => this.lost(slot, new Error('hash worker exited')));
    this.slots.push(slot);
    return slot;
  }

  private lost(slot: Slot, e: Error): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    slot.busy?.reject(e);
    slot.busy = null;
    if (!this.closed) this.next();
  }

  close(): void {
    this.closed = true;
    this.free = [];
    if (this.idle) clearTimeout(this.idle);
    for (const j of this.waiting.splice(0)) j.reject(new Error('hasher closed'));
    for (const s of this.slots.splice(0)) void s.w.terminate();
  }
}
