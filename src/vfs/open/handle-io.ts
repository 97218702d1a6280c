// What is done through an open handle: read, write, flush (close(2): the
// journal and a failed upload's error), fsync and release (the upload is
// scheduled after the last writer's close).
import { ApiError } from '../../client/errors.js';
import { unreachable } from '../common/connectivity.js';
import type { VfsCore } from '../core.js';
import { VfsError } from '../errors.js';
import type { FileState } from '../write/write-back.js';

/** Synchronous (a number) when the data is in memory, a promise otherwise. */
export function readAt({ parts, handles }: VfsCore, fh: number, buf: Buffer, len: number, pos: number) {
  const h = handles.get(fh);
  if (h.kind === 'local') return parts.writeBack.read(h.state, buf, len, pos);
  // a clean file opened for reading that someone has since written to: read the local data
  const s = parts.writeBack.get(h.repo, h.path);
  if (s && !s.deleted) return parts.writeBack.read(s, buf, len, pos);
  return parts.reader.read(h.remote, buf, len, pos, h.pattern);
}

/** the local data a handle may write to (EBADF for a read-only handle) */
export function writeState({ handles }: VfsCore, fh: number): FileState {
  const h = handles.get(fh);
  if (h.kind !== 'local' || !h.write) throw new VfsError('EBADF');
  return h.state;
}

/** close(): record the dirty file in the journal so it survives a crash; report a failed upload. */
export async function flush({ parts, handles }: VfsCore, fh: number): Promise<void> {
  const h = handles.get(fh);
  if (h.kind !== 'local' || !h.write) return;
  const s = h.state;
  await parts.writeBack.persist(s);
  if (s.dirty && !s.lastError) await parts.quota.checkRoom(s);
  // offline: the data waits in the journal, nothing to report
  if (s.lastError && s.dirty && !unreachable(s.lastError)) {
    const e = s.lastError;
    throw new VfsError(e instanceof ApiError && e.kind === 'quota' ? 'ENOSPC' : 'EIO', 'earlier upload failed', {
      cause: e,
    });
  }
}

/**
 * flush without waiting, for the common close of a small file in memory:
 * true when it is done (journaled, fits the quota as last heard, no failure
 * to report); false: nothing was decided, flush must run.
 */
export function flushNow({ parts, handles }: VfsCore, fh: number): boolean {
  const h = handles.peek(fh);
  if (!h) return false;
  if (h.kind !== 'local' || !h.write) return true;
  const s = h.state;
  if (!parts.writeBack.persistNow(s) || s.lastError) return false;
  if (!s.dirty) return true;
  return parts.quota.fitsNow(s) === true;
}

export async function fsync({ parts, handles }: VfsCore, fh: number): Promise<void> {
  const h = handles.get(fh);
  if (h.kind === 'local' && !h.state.deleted) await parts.writeBack.sync(h.state);
}

/** synchronous: nothing in it waits */
export function release({ parts, handles }: VfsCore, fh: number): void {
  const h = handles.take(fh);
  if (!h) return;
  if (h.kind === 'remote') {
    parts.reader.closePattern(h.remote, h.pattern);
    return;
  }
  const s = h.state;
  s.closed(h.write);
  if (s.dirty && s.writers === 0 && !s.deleted) parts.writeBack.scheduleAfterClose(s);
  else parts.writeBack.maybeDispose(s);
}
