// The fuse-native operations table over a Vfs. Every handler is wrapped:
// whatever happens (a throw, a rejected promise) it calls back exactly once
// with an integer, since anything else kills the process and leaves a dead
// mount (fuse-native calls into JavaScript with no guard of its own).
import { constants as OS } from 'node:os';
import { errnoOf, type ErrnoName } from '../vfs/errors.js';
import { nfc, type Vfs } from '../vfs/vfs.js';
import { requestedMtime } from './utime.js';

/** a fuse-native operation or its callback */
export type Cb = (...args: any[]) => void; // eslint-disable-line @typescript-eslint/no-explicit-any

/** a byte count answered in the same turn when there is one, else once the promise settles */
function answerCount(r: number | Promise<number>, cb: Cb, fail: (e: unknown) => void): void {
  if (typeof r === 'number') return cb(r);
  r.then((n) => cb(n), fail);
}

export function errnoNumber(name: ErrnoName): number {
  const n = (OS.errno as Record<string, number>)[name];
  return -(n ?? OS.errno.EIO);
}

export interface OpsOptions {
  log?: (msg: string) => void;
  /** log every failure, not only unexpected ones */
  debug?: boolean;
  /** counted into: calls per operation (for `status` and benchmarks); absent: not counted */
  counts?: OpCounts;
  /**
   * false: no extended-attribute operations. The kernel then answers them
   * itself (EOPNOTSUPP) and stops asking for security.capability before
   * every write, which it does once getxattr is answered at all.
   */
  xattrs?: boolean;
}

/** a failure the vfs has already told the log about (`quiet`: e.g. a locked encrypted library) */
const told = (e: unknown) => (e as { quiet?: unknown } | null)?.quiet === true;
/** a failure always worth a log line, whatever its errno (`loud`: a name the mount refuses) */
const loud = (e: unknown) => (e as { loud?: unknown } | null)?.loud === true;

const QUIET = new Set<ErrnoName>([
  'ENOENT',
  'EEXIST',
  'ENOTEMPTY',
  'ENOTDIR',
  'EISDIR',
  'EROFS',
  'EPERM',
  'EINVAL',
  'ENAMETOOLONG',
  'EBADF',
  // extended attributes: an absent name is ordinary (the kernel asks for security.* on writes)
  'ENODATA',
  'ENOTSUP',
]);

/** calls per FUSE operation, by name */
export type OpCounts = Record<string, number>;

export function makeOps(vfs: Vfs, opts: OpsOptions = {}): Record<string, Cb> {
  const log = opts.log ?? (() => {});
  const opCounts: OpCounts = opts.counts ?? {};

  /** `run` produces the callback's arguments after the status; `intResult` ops (read/write) call back with the count */
  function handler<A extends unknown[]>(name: string, run: (...args: A) => Promise<unknown[]>, intResult = false): Cb {
    return (...all: unknown[]) => {
      opCounts[name] = (opCounts[name] ?? 0) + 1;
      const cb = all.pop() as Cb;
      let called = false;
      const done = (...r: unknown[]) => {
        if (called) return;
        called = true;
        try {
          cb(...r);
        } catch (e) {
          log(`fuse ${name}: callback failed: ${(e as Error).message}`);
        }
      };
      const fail = (e: unknown) => {
        const code = errnoOf(e);
        if (opts.debug || loud(e) || !(QUIET.has(code) || told(e)))
          log(`${name} ${String(all[0])}: ${code} (${(e as Error)?.message ?? e})`);
        done(errnoNumber(code));
      };
      try {
        run(...(all as A)).then((r) => (intResult ? done(r[0]) : done(0, ...r)), fail);
      } catch (e) {
        fail(e);
      }
    };
  }

  const ioFail = (op: string, p: string, e: unknown, cb: Cb) => {
    const code = errnoOf(e);
    if (opts.debug || !(QUIET.has(code) || told(e))) log(`${op} ${p}: ${code} (${(e as Error)?.message ?? e})`);
    try {
      cb(errnoNumber(code));
    } catch (err) {
      log(`fuse ${op}: callback failed: ${(err as Error).message}`);
    }
  };
  const readFail = (p: string, e: unknown, cb: Cb) => ioFail('read', p, e, cb);
  /** a callback that throws must not take the mount down */
  const answer = (op: string, cb: Cb, ...r: unknown[]) => {
    try {
      cb(...r);
    } catch (e) {
      log(`fuse ${op}: callback failed: ${(e as Error).message}`);
    }
  };
  const ENOENT = errnoNumber('ENOENT');

  const getattrWait = handler('getattr', async (p: string) => [await vfs.getattr(p)]);
  const createWait = handler('create', async (p: string, mode: number) => [await vfs.create(p, mode)]);
  const utimensWait = handler('utimens', async (p: string, _atime: number, mtime: number) => {
    await vfs.utimens(p, mtime);
    return [];
  });
  const flushWait = handler('flush', async (p: string, fd: number) => {
    await vfs.flush(p, fd);
    return [];
  });

  const ops: Record<string, Cb> = {
    init: (cb: Cb) => cb(0),
    getattr: (p: string, cb: Cb) => {
      // answered at once when the mount holds the answer (tree walks ask it for every file)
      let now = null;
      let absent = false;
      try {
        now = vfs.getattrNow(p);
        // the lookup of a name about to be created: ENOENT without an error object or a promise
        if (!now) absent = vfs.absentNow(p);
      } catch {
        // the full path below reports it
      }
      if (!now && !absent) {
        opCounts.getattrWaited = (opCounts.getattrWaited ?? 0) + 1;
        return getattrWait(p, cb);
      }
      opCounts.getattr = (opCounts.getattr ?? 0) + 1;
      try {
        if (now) cb(0, now);
        else cb(ENOENT);
      } catch (e) {
        log(`fuse getattr: callback failed: ${(e as Error).message}`);
      }
    },
    readdir: handler('readdir', async (p: string) => [await vfs.readdir(p)]),
    access: handler('access', async (p: string, mode: number) => {
      await vfs.access(p, mode);
      return [];
    }),
    statfs: handler('statfs', async (p: string) => [await vfs.statfs(p)]),
    open: handler('open', async (p: string, flags: number) => [await vfs.open(p, flags)]),
    create: (p: string, mode: number, cb: Cb) => {
      // a new small file in a listed folder starts in memory at once
      let fd: number | null = null;
      try {
        fd = vfs.createNow(p);
      } catch {
        // create below reports it
      }
      if (fd === null) return createWait(p, mode, cb);
      opCounts.create = (opCounts.create ?? 0) + 1;
      answer('create', cb, 0, fd);
    },
    read: (p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => {
      // the hot path: answered synchronously when the data is in memory
      opCounts.read = (opCounts.read ?? 0) + 1;
      let r: number | Promise<number>;
      try {
        r = vfs.read(p, fd, buf, len, pos);
      } catch (e) {
        return readFail(p, e, cb);
      }
      answerCount(r, cb, (e) => readFail(p, e, cb));
    },
    write: (p: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => {
      // answered synchronously when the file stays in memory (untar, cp of small files)
      opCounts.write = (opCounts.write ?? 0) + 1;
      let r: number | Promise<number>;
      try {
        r = vfs.writeNow(p, fd, buf, len, pos);
      } catch (e) {
        return ioFail('write', p, e, cb);
      }
      answerCount(r, cb, (e) => ioFail('write', p, e, cb));
    },
    truncate: handler('truncate', async (p: string, size: number) => {
      await vfs.truncate(p, size);
      return [];
    }),
    ftruncate: handler('ftruncate', async (p: string, fd: number, size: number) => {
      await vfs.ftruncate(p, fd, size);
      return [];
    }),
    flush: (p: string, fd: number, cb: Cb) => {
      // the close of a small file in memory is journaled at once; anything else waits
      let now = false;
      try {
        now = vfs.flushNow(p, fd);
      } catch {
        // flush below reports it
      }
      if (!now) {
        // how many closes waited (the benchmark's breakdown reads it)
        opCounts.flushWaited = (opCounts.flushWaited ?? 0) + 1;
        return flushWait(p, fd, cb);
      }
      opCounts.flush = (opCounts.flush ?? 0) + 1;
      answer('flush', cb, 0);
    },
    fsync: handler('fsync', async (p: string, _datasync: number, fd: number) => {
      await vfs.fsync(p, fd);
      return [];
    }),
    release: (p: string, fd: number, cb: Cb) => {
      opCounts.release = (opCounts.release ?? 0) + 1;
      try {
        vfs.release(p, fd);
      } catch (e) {
        return ioFail('release', p, e, cb);
      }
      answer('release', cb, 0);
    },
    unlink: handler('unlink', async (p: string) => {
      await vfs.unlink(p);
      return [];
    }),
    mkdir: handler('mkdir', async (p: string, mode: number) => {
      await vfs.mkdir(p, mode);
      return [];
    }),
    rmdir: handler('rmdir', async (p: string) => {
      await vfs.rmdir(p);
      return [];
    }),
    rename: handler('rename', async (src: string, dst: string) => {
      await vfs.rename(src, dst);
      return [];
    }),
    utimens: (p: string, atime: number, rawMtime: number, cb: Cb) => {
      // null: UTIME_OMIT, nothing to change (access times are not kept)
      const mtime = requestedMtime(rawMtime);
      let now = mtime === null;
      try {
        if (mtime !== null) now = vfs.utimensNow(p, mtime);
      } catch {
        // utimens below reports it
      }
      if (!now && mtime !== null) return utimensWait(p, atime, mtime, cb);
      opCounts.utimens = (opCounts.utimens ?? 0) + 1;
      answer('utimens', cb, 0);
    },
    chmod: handler('chmod', async (p: string, mode: number) => {
      await vfs.chmod(p, mode);
      return [];
    }),
    chown: handler('chown', async (p: string, uid: number, gid: number) => {
      await vfs.chown(p, uid, gid);
      return [];
    }),
    // symbolic links (--links): without it these two are not offered, and the kernel answers ENOSYS itself
    readlink: handler('readlink', async (p: string) => [await vfs.readlink(p)]),
    symlink: handler('symlink', async (target: string, p: string) => {
      await vfs.symlink(target, p);
      return [];
    }),
    // extended attributes (src/vfs/xattrs/xattrs.ts); `value` lives in libfuse memory, so it is copied
    getxattr: handler('getxattr', async (p: string, name: string) => [await vfs.getxattr(p, name)]),
    listxattr: handler('listxattr', async (p: string) => [await vfs.listxattr(p)]),
    setxattr: handler('setxattr', async (p: string, name: string, value: Buffer) => {
      await vfs.setxattr(p, name, Buffer.from(value));
      return [];
    }),
    removexattr: handler('removexattr', async (p: string, name: string) => {
      await vfs.removexattr(p, name);
      return [];
    }),
  };
  if (opts.xattrs === false) for (const op of ['getxattr', 'listxattr', 'setxattr', 'removexattr']) delete ops[op];
  if (!vfs.opts?.links) for (const op of ['readlink', 'symlink']) delete ops[op];
  return nfcPaths(ops);
}

/** operations whose path is only a label: their handle says which file */
const HANDLE_OPS = new Set(['init', 'read', 'write']);

/**
 * Every path the kernel gives in NFC, the form the server stores names in
 * (vfs/common/paths.ts nfc; README "Unicode names"); rename's target too (not a symlink's target). Paths that
 * are plain ASCII pass through unchanged.
 */
function nfcPaths(ops: Record<string, Cb>): Record<string, Cb> {
  for (const [name, op] of Object.entries(ops)) {
    if (HANDLE_OPS.has(name)) continue;
    ops[name] =
      name === 'rename'
        ? (src: string, dst: string, cb: Cb) => op(nfc(src), nfc(dst), cb)
        : name === 'symlink'
          ? // a link's target is kept as given, byte for byte; only its own path is a name
            (target: string, p: string, cb: Cb) => op(target, nfc(p), cb)
          : (p: string, ...rest: unknown[]) => op(typeof p === 'string' ? nfc(p) : p, ...rest);
  }
  return ops;
}
