// The least a FUSE filesystem has to do to serve a sequential read of a file
// over HTTP: one GET from the first read's offset on a plain socket that
// reads the body straight into a ring buffer (no allocation, no stream
// machinery, no HTTP library), and each read answered by copying from the
// ring once its bytes have come. No cache, no retries, one reader, plain
// HTTP/1.1 with a Content-Length body. memfs.mjs serves its big file through
// it with --read-url, and the benchmark's `httpfs` contender is that: the
// floor it sets seafs's CPU per GiB of a cold read against. (A first version
// on node:http cost 2.3x memfs's CPU per GiB: its parser and streams
// allocate for every piece.)
import net from 'node:net';

const RING = 32 * 1024 * 1024;
/** bytes kept behind the furthest read (the kernel's readahead sends reads a little out of order) */
const KEEP_BEHIND = 4 * 1024 * 1024;
/** the socket pauses this far ahead of the furthest read */
const AHEAD = RING - KEEP_BEHIND - 1024 * 1024;
const HEAD_MAX = 64 * 1024;

export class HttpSource {
  /** `url`: a download link that needs no authorisation; `size`: the file's size */
  constructor(url, size) {
    this.url = new URL(url);
    this.size = size;
    this.ring = Buffer.allocUnsafe(RING);
    this.head = Buffer.allocUnsafe(HEAD_MAX);
    this.sock = null;
    this.start0 = 0; // file offset of the GET's first byte
    this.recvEnd = 0; // file offset just past the last body byte received
    this.readEnd = 0; // file offset just past the furthest read answered or waiting
    this.headLen = -1; // bytes of response head received; -1 once the body has begun
    this.waiting = []; // reads whose bytes have not all come: { buf, pos, end, cb }
    this.over = false; // the body ended or failed: waiting reads get what there is, or EIO
  }

  /** fuse-native's read: `cb(bytes)` or `cb(-errno)` */
  read(buf, len, pos, cb) {
    const end = Math.min(pos + len, this.size);
    if (end <= pos) return cb(0);
    if (!this.sock || pos < Math.max(this.start0, this.recvEnd - RING + KEEP_BEHIND) || pos > this.recvEnd + AHEAD)
      this.open(pos);
    if (end > this.readEnd) this.readEnd = end;
    if (end <= this.recvEnd) cb(this.copy(buf, pos, end));
    else if (this.over) cb(-5);
    else this.waiting.push({ buf, pos, end, cb });
    if (this.sock.isPaused() && this.recvEnd - this.readEnd < AHEAD / 2) this.sock.resume();
  }

  open(pos) {
    this.sock?.destroy();
    this.start0 = this.recvEnd = pos;
    this.headLen = 0;
    this.over = false;
    const u = this.url;
    const sock = net.connect({
      host: u.hostname,
      port: Number(u.port || 80),
      onread: { buffer: () => this.space(), callback: (n) => this.got(sock, n) },
    });
    sock.on('error', () => this.end(sock));
    sock.on('end', () => this.end(sock));
    sock.setNoDelay(true);
    sock.write(
      `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nRange: bytes=${pos}-\r\nConnection: close\r\n\r\n`,
    );
    this.sock = sock;
  }

  /** where the next socket read goes: the head area, then the ring up to its end or to what must be kept */
  space() {
    if (this.headLen >= 0) return this.head.subarray(this.headLen);
    const at = this.recvEnd % RING;
    const room = Math.min(RING - at, this.readEnd - KEEP_BEHIND + RING - this.recvEnd);
    return this.ring.subarray(at, at + Math.max(room, 1));
  }

  /** `n` bytes were read into the last space() */
  got(sock, n) {
    if (sock !== this.sock) return false;
    if (this.headLen >= 0) {
      this.headLen += n;
      const h = this.head.subarray(0, this.headLen);
      const e = h.indexOf('\r\n\r\n');
      if (e < 0) {
        if (this.headLen === HEAD_MAX) this.end(sock);
        return true;
      }
      const status = Number(h.toString('latin1', 9, 12));
      if (status !== 206 && !(status === 200 && this.start0 === 0)) {
        this.end(sock);
        return false;
      }
      this.headLen = -1;
      // body bytes that came with the head (a few KiB at most: the ring has room for them)
      const body = h.subarray(e + 4);
      for (let k = 0; k < body.length;) {
        const at = (this.recvEnd + k) % RING;
        k += body.copy(this.ring, at, k, k + Math.min(RING - at, body.length - k));
      }
      n = body.length;
    }
    this.recvEnd += n;
    if (this.recvEnd >= this.size) this.over = true;
    this.answer();
    if (this.recvEnd - this.readEnd >= AHEAD) sock.pause();
    return true;
  }

  end(sock) {
    if (sock !== this.sock) return;
    this.over = true;
    this.answer();
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
