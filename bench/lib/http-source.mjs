// The least a FUSE filesystem has to do to serve a sequential read of a file
// over HTTP: one GET from the first read's offset through seafs's own bare
// socket reader (src/client/raw-get.ts: the body goes straight into buffers
// the caller supplies), here a ring buffer, and each read answered by copying
// from the ring once its bytes have come. No chunks, no cache, no retries,
// one reader. memfs.mjs serves its big file through it with --read-url, and
// the benchmark's `httpfs` contender is that: the floor it sets seafs's CPU
// per GiB of a cold read against, with the same socket code and none of the
// read engine. (A first version on node:http cost 2.3x memfs's CPU per GiB:
// its parser and streams allocate for every piece.) Needs the build
// (scripts/bench makes it).
import { rawGet } from '../../dist/client/raw-get.js';

const RING = 32 * 1024 * 1024;
/** bytes kept behind the furthest read (the kernel's readahead sends reads a little out of order) */
const KEEP_BEHIND = 4 * 1024 * 1024;
/** the socket pauses this far ahead of the furthest read */
const AHEAD = RING - KEEP_BEHIND - 1024 * 1024;

export class HttpSource {
  /** `url`: a download link that needs no authorisation; `size`: the file's size */
  constructor(url, size) {
    this.url = url;
    this.size = size;
    this.ring = Buffer.allocUnsafe(RING);
    this.get = null; // the GET under way (rawGet's control)
    this.paused = false;
    this.start0 = 0; // file offset of the GET's first byte
    this.recvEnd = 0; // file offset just past the last body byte received
    this.readEnd = 0; // file offset just past the furthest read answered or waiting
    this.waiting = []; // reads whose bytes have not all come: { buf, pos, end, cb }
    this.over = false; // the body ended or failed: waiting reads get EIO
  }

  /** fuse-native's read: `cb(bytes)` or `cb(-errno)` */
  read(buf, len, pos, cb) {
    const end = Math.min(pos + len, this.size);
    if (end <= pos) return cb(0);
    if (!this.get || pos < Math.max(this.start0, this.recvEnd - RING + KEEP_BEHIND) || pos > this.recvEnd + AHEAD)
      this.open(pos);
    if (end > this.readEnd) this.readEnd = end;
    if (end <= this.recvEnd) cb(this.copy(buf, pos, end));
    else if (this.over) cb(-5);
    else this.waiting.push({ buf, pos, end, cb });
    if (this.paused && this.recvEnd - this.readEnd < AHEAD / 2) {
      this.paused = false;
      this.get.resume();
    }
  }

  open(pos) {
    this.get?.destroy();
    this.start0 = this.recvEnd = pos;
    this.over = this.paused = false;
    let get = null;
    const mine = () => get !== null && get === this.get;
    get = rawGet(this.url, pos, {
      head: (status, start) => {
        if (start !== pos) get.destroy(); // a server that ignored the range: not this floor's case
      },
      // the ring from the next byte's place to its end, or to what must be kept behind the reader
      space: () => {
        const at = this.recvEnd % RING;
        const room = Math.min(RING - at, this.readEnd - KEEP_BEHIND + RING - this.recvEnd);
        return this.ring.subarray(at, at + Math.max(room, 1));
      },
      wrote: (n) => {
        if (!mine()) return;
        this.recvEnd += n;
        this.answer();
        if (this.recvEnd - this.readEnd >= AHEAD && !this.paused) {
          this.paused = true;
          get.pause();
        }
      },
      end: () => {
        if (!mine()) return;
        this.over = true;
        this.answer();
      },
    });
    this.get = get;
  }

  /** answer every waiting read whose bytes have come (or all of them, once the body is over) */
  answer() {
    if (this.waiting.length === 0) return;
    const still = [];
    for (const w of this.waiting) {
      if (w.end <= this.recvEnd) w.cb(this.copy(w.buf, w.pos, w.end));
      else if (this.over) w.cb(-5);
      else still.push(w);
    }
    this.waiting = still;
  }

  /** copy file bytes [pos, end) into buf; all of them are in the ring */
  copy(buf, pos, end) {
    let at = 0;
    while (pos + at < end) {
      const i = (pos + at) % RING;
      const n = Math.min(RING - i, end - pos - at);
      this.ring.copy(buf, at, i, i + n);
      at += n;
    }
    return at;
  }
}
