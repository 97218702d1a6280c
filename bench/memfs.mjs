#!/usr/bin/env node
// In-memory fuse-native filesystem: the binding's ceiling on this machine.
// Usage: node bench/memfs.mjs MOUNTPOINT [--big PATH:BYTES] [--tree PATH:FOLDERS:FILES:SEED[:MAXSIZE]]...
// --big seeds one large file whose content is a repeated random 1 MiB block (no RAM cost until written);
// --tree (repeatable) seeds the same folder/file layout (names and sizes) the benchmark uploads to the server.
// --read-from FILE[:OFFSET] serves the big file's reads from FILE instead, one fs.read per request at OFFSET+pos
// (e.g. a seafs cache file: its data starts after the 128-byte header and a marker byte per chunk, rounded up to
// 4 KiB: 4096 for 256 MiB, 12288 for 1 GiB in 128 KiB chunks): the floor of a read path that goes to disk per request.
// --read-url URL serves the big file's reads from a streaming GET of URL (a download link), with the least work a
// FUSE filesystem can do for that (lib/http-source.mjs): the floor of a read path that fetches over HTTP.
// Prints "mounted" once the kernel sees the mount; SIGTERM/SIGINT unmount and exit.
import Fuse from 'fuse-native';
import { randomFillSync } from 'node:crypto';
import { openSync, read as readFd } from 'node:fs';
import { treeLayout } from './lib/dataset.mjs';
import { HttpSource } from './lib/http-source.mjs';

const CHUNK = 1 << 20;
const mnt = process.argv[2];
if (!mnt) {
  process.stderr.write('usage: memfs.mjs MOUNTPOINT [--big PATH:BYTES] [--tree PATH:FOLDERS:FILES:SEED]\n');
  process.exit(2);
}
const argOf = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};

const pattern = randomFillSync(Buffer.allocUnsafe(CHUNK));
const now = new Date();
/** path -> node; dirs hold a Set of child names, files a Map of 1 MiB chunks. */
const nodes = new Map();
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;

function mkdirNode(p, mode = 0o755) {
  nodes.set(p, { dir: true, mode: S_IFDIR | mode, children: new Set(), mtime: new Date(), ctime: new Date() });
}
function mkfileNode(p, size = 0, seeded = false, mode = 0o644) {
  nodes.set(p, {
    dir: false,
    mode: S_IFREG | mode,
    size,
    seeded,
    chunks: new Map(),
    mtime: new Date(),
    ctime: new Date(),
  });
}
const parentOf = (p) => p.slice(0, p.lastIndexOf('/')) || '/';
const baseOf = (p) => p.slice(p.lastIndexOf('/') + 1);
function link(p) {
  nodes.get(parentOf(p)).children.add(baseOf(p));
}
function ensureDirs(p) {
  if (nodes.has(p)) return;
  ensureDirs(parentOf(p));
  mkdirNode(p);
  link(p);
}

const readFrom = argOf('--read-from');
const fromFd = readFrom ? openSync(readFrom.replace(/:\d+$/, ''), 'r') : -1;
const fromOff = readFrom && /:\d+$/.test(readFrom) ? Number(readFrom.slice(readFrom.lastIndexOf(':') + 1)) : 0;

mkdirNode('/');
const big = argOf('--big');
if (big) {
  const [p, bytes] = big.split(':');
  ensureDirs(parentOf(p));
  mkfileNode(p, Number(bytes), true);
  link(p);
}
const readUrl = argOf('--read-url');
const httpSource = readUrl && big ? new HttpSource(readUrl, Number(big.split(':')[1])) : null;
const trees = process.argv.flatMap((a, i) => (a === '--tree' && process.argv[i + 1] ? [process.argv[i + 1]] : []));
for (const tree of trees) {
  const [root, folders, files, seed, maxSize] = tree.split(':');
  for (const f of treeLayout(Number(folders), Number(files), Number(seed), maxSize ? Number(maxSize) : undefined)) {
    const p = `${root}/${f.rel}`;
    ensureDirs(parentOf(p));
    mkfileNode(p, f.size);
    link(p);
  }
}

function stat(n) {
  return {
    mode: n.mode,
    uid: process.getuid(),
    gid: process.getgid(),
    size: n.dir ? 4096 : n.size,
    nlink: n.dir ? 2 : 1,
    blksize: 4096,
    blocks: n.dir ? 8 : Math.ceil(n.size / 512),
    mtime: n.mtime,
    atime: n.mtime,
    ctime: n.ctime,
  };
}

/** Copy file bytes [pos, pos+len) into buf; unwritten chunks read as the pattern (seeded) or zeros. */
function readInto(n, buf, len, pos) {
  const end = Math.min(pos + len, n.size);
  let done = 0;
  for (let off = pos; off < end;) {
    const ci = Math.floor(off / CHUNK);
    const inChunk = off - ci * CHUNK;
    const take = Math.min(CHUNK - inChunk, end - off);
    const chunk = n.chunks.get(ci);
    if (chunk) chunk.copy(buf, done, inChunk, inChunk + take);
    else if (n.seeded) pattern.copy(buf, done, inChunk, inChunk + take);
    else buf.fill(0, done, done + take);
    done += take;
    off += take;
  }
  return done;
}

// Chunks are cut from 64 MiB slabs: one large allocation instead of a 1 MiB calloc per chunk measured
// steadier on this VM (memory freed by truncate/unlink is simply dropped; a benchmark never needs it back).
let slab = null;
let slabOff = 0;
function newChunk() {
  if (!slab || slabOff >= slab.length) {
    slab = Buffer.alloc(64 * CHUNK);
    slabOff = 0;
  }
  slabOff += CHUNK;
  return slab.subarray(slabOff - CHUNK, slabOff);
}

function writeFrom(n, buf, len, pos) {
  for (let done = 0; done < len;) {
    const off = pos + done;
    const ci = Math.floor(off / CHUNK);
    const inChunk = off - ci * CHUNK;
    const take = Math.min(CHUNK - inChunk, len - done);
    let chunk = n.chunks.get(ci);
    if (!chunk) {
      chunk = newChunk();
      if (n.seeded) pattern.copy(chunk);
      n.chunks.set(ci, chunk);
    }
    buf.copy(chunk, inChunk, done, done + take);
    done += take;
  }
  n.size = Math.max(n.size, pos + len);
  n.mtime = new Date();
}

function truncateNode(n, size) {
  for (const ci of [...n.chunks.keys()]) if (ci * CHUNK >= size) n.chunks.delete(ci);
  const ci = Math.floor(size / CHUNK);
  const c = n.chunks.get(ci);
  if (c) c.fill(0, size - ci * CHUNK);
  n.size = size;
  n.mtime = new Date();
}

let nextFd = 10;
// Every handler catches everything and answers with an integer (see /work/shared/notes/fuse-native.md).
const safe =
  (fn) =>
  (...args) => {
    const cb = args[args.length - 1];
    try {
      fn(...args);
    } catch (err) {
      cb(typeof err === 'number' ? err : Fuse.EIO);
    }
  };
const get = (p) => {
  const n = nodes.get(p);
  if (!n) throw Fuse.ENOENT;
  return n;
};

const ops = {
  init: safe((cb) => cb(0)),
  statfs: safe((p, cb) =>
    cb(0, {
      bsize: CHUNK,
      frsize: CHUNK,
      blocks: 1 << 20,
      bfree: 1 << 19,
      bavail: 1 << 19,
      files: 1 << 20,
      ffree: 1 << 19,
      favail: 1 << 19,
      fsid: 1,
      flag: 0,
      namemax: 255,
    }),
  ),
  getattr: safe((p, cb) => cb(0, stat(get(p)))),
  access: safe((p, mode, cb) => (get(p), cb(0))),
  readdir: safe((p, cb) => {
    const n = get(p);
    if (!n.dir) return cb(Fuse.ENOTDIR);
    cb(0, ['.', '..', ...n.children]);
  }),
  opendir: safe((p, flags, cb) => (get(p), cb(0, 0))),
  releasedir: safe((p, fd, cb) => cb(0)),
  open: safe((p, flags, cb) => {
    const n = get(p);
    if (n.dir) return cb(Fuse.EISDIR);
    if (flags & 0o1000) truncateNode(n, 0); // O_TRUNC
    cb(0, nextFd++);
  }),
  create: safe((p, mode, cb) => {
    const parent = get(parentOf(p));
    if (!parent.dir) return cb(Fuse.ENOTDIR);
    if (!nodes.has(p)) {
      mkfileNode(p, 0, false, mode & 0o7777);
      link(p);
    }
    cb(0, nextFd++);
  }),
  read: safe((p, fd, buf, len, pos, cb) => {
    const n = get(p);
    if (httpSource && n.seeded) return httpSource.read(buf, len, pos, cb);
    if (fromFd < 0 || !n.seeded) return cb(readInto(n, buf, len, pos));
    const want = Math.max(0, Math.min(len, n.size - pos));
    readFd(fromFd, buf, 0, want, fromOff + pos, (err, got) => cb(err ? Fuse.EIO : got));
  }),
  write: safe((p, fd, buf, len, pos, cb) => {
    writeFrom(get(p), buf, len, pos);
    cb(len);
  }),
  truncate: safe((p, size, cb) => (truncateNode(get(p), size), cb(0))),
  ftruncate: safe((p, fd, size, cb) => (truncateNode(get(p), size), cb(0))),
  flush: safe((p, fd, cb) => cb(0)),
  fsync: safe((p, datasync, fd, cb) => cb(0)),
  release: safe((p, fd, cb) => cb(0)),
  utimens: safe((p, atime, mtime, cb) => {
    get(p).mtime = new Date(mtime);
    cb(0);
  }),
  chmod: safe((p, mode, cb) => {
    const n = get(p);
    n.mode = (n.mode & ~0o7777) | (mode & 0o7777);
    cb(0);
  }),
  chown: safe((p, uid, gid, cb) => (get(p), cb(0))),
  mkdir: safe((p, mode, cb) => {
    if (nodes.has(p)) return cb(Fuse.EEXIST);
    get(parentOf(p));
    mkdirNode(p, mode & 0o7777);
    link(p);
    cb(0);
  }),
  unlink: safe((p, cb) => {
    const n = get(p);
    if (n.dir) return cb(Fuse.EISDIR);
    nodes.delete(p);
    nodes.get(parentOf(p)).children.delete(baseOf(p));
    cb(0);
  }),
  rmdir: safe((p, cb) => {
    const n = get(p);
    if (!n.dir) return cb(Fuse.ENOTDIR);
    if (n.children.size) return cb(Fuse.ENOTEMPTY);
    nodes.delete(p);
    nodes.get(parentOf(p)).children.delete(baseOf(p));
    cb(0);
  }),
  rename: safe((src, dst, cb) => {
    const n = get(src);
    const old = nodes.get(dst);
    if (old && old.dir && old.children.size) return cb(Fuse.ENOTEMPTY);
    get(parentOf(dst));
    const moved = [...nodes.keys()].filter((k) => k === src || k.startsWith(src + '/'));
    for (const k of moved) {
      const v = nodes.get(k);
      nodes.delete(k);
      nodes.set(dst + k.slice(src.length), v);
    }
    nodes.get(parentOf(src)).children.delete(baseOf(src));
    nodes.get(parentOf(dst)).children.add(baseOf(dst));
    void n;
    cb(0);
  }),
};

const fuse = new Fuse(mnt, ops, {
  force: true,
  kernelCache: true, // content never changes behind the kernel's back here: the ceiling may keep pages
  attrTimeout: 5,
  entryTimeout: 5,
});
// fuse-native has no big_writes option; append it to the -o string it builds.
const baseOptions = fuse._fuseOptions.bind(fuse);
fuse._fuseOptions = () => {
  const o = baseOptions();
  return o ? `${o},big_writes` : '-obig_writes';
};

let closing = false;
function shutdown() {
  if (closing) return;
  closing = true;
  fuse.unmount(() => process.exit(0));
  setTimeout(() => process.exit(0), 5000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

fuse.mount((err) => {
  if (err) {
    process.stderr.write(`memfs: mount failed: ${err.message}\n`);
    process.exit(1);
  }
  process.stdout.write(`mounted ${mnt} at ${now.toISOString()}\n`);
});
