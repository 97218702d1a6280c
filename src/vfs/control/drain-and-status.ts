// What the mount process asks of the vfs as a whole: the last uploads at
// unmount (files and the empty folders made here) and the state of its
// engines for the control socket's status answer.
import type { VfsComponents } from '../components.js';

export interface Pending {
  path: string;
  size: number;
}

/** Upload everything pending; returns the files that could not be uploaded. */
export async function drainAll(
  wb: VfsComponents['writeBack'],
  onStatus: (pending: Pending[]) => void,
  timeoutMs: number,
) {
  // empty folders made here too (the files' uploads wait for theirs)
  const folders = wb.folders.drain();
  const failed = await wb.drain((list) => onStatus(list.map((s) => ({ path: s.path, size: s.size }))), timeoutMs);
  return [
    ...failed.map((s) => ({
      path: s.path,
      size: s.size,
      error: s.lastError instanceof Error ? s.lastError.message : String(s.lastError),
    })),
    ...(await folders).map((f) => ({ path: f.path, size: 0, error: f.error })),
  ];
}

/** A file not yet on the server, as `seafs status` lists it. */
export interface UploadQueueEntry {
  path: string;
  size: number;
  /**
   * writing: still open for writing (a large one may already be streaming);
   * failed: the last attempt failed (it is tried again unless the failure is permanent)
   */
  state: 'uploading' | 'writing' | 'waiting' | 'failed';
  attempts: number;
  /** bytes of it already sent (absent: the write path does not report it) */
  sent?: number;
  /** still open for writing: its size is not final */
  writing?: boolean;
  /** an upload by blocks: bytes of the blocks the server lacks, of those sent, blocks it holds already */
  blocks?: { toSend: number; sent: number; onServer: number; blocks: number };
  error?: string;
}

/** Each file not yet on the server: uploading, waiting or failed, and whether it is still written. */
export function uploadQueueOf(wb: VfsComponents['writeBack']): UploadQueueEntry[] {
  return wb.pending().map((f) => {
    const state = f.running ? 'uploading' : f.lastError ? 'failed' : f.writers > 0 ? 'writing' : 'waiting';
    const streaming = wb.streamedBytes(f);
    const e: UploadQueueEntry = {
      path: f.path,
      size: f.size,
      state: streaming === null ? state : 'uploading',
      attempts: f.failures,
    };
    if (streaming !== null) e.sent = streaming;
    const blocks = wb.blockProgress(f);
    if (blocks) e.blocks = blocks;
    if (f.writers > 0) e.writing = true;
    if (f.lastError) e.error = f.lastError instanceof Error ? f.lastError.message : String(f.lastError);
    return e;
  });
}

export function pendingOf(wb: VfsComponents['writeBack']): Pending[] {
  return wb.pending().map((s) => ({ path: s.path, size: s.size }));
}

/** The state of the mount's engines, for the control socket's status answer. */
export function statusOf(p: VfsComponents) {
  return {
    pending: pendingOf(p.writeBack),
    pendingFolders: p.writeBack.folders.pending(),
    reader: p.reader.stats,
    readerMemory: p.reader.memory(),
    disk: p.chunkCache ? { ...p.chunkCache.stats, ...p.chunkCache.usage() } : undefined,
    meta: p.listingCache.stats,
    metaCache: p.listingCache.held(),
    uploads: p.writeBack.stats,
    blocks: p.writeBack.blocks.stats,
    /** writes that waited for uploads to make room under --cache-max-size, and the bytes files being written hold */
    cacheRoom: { ...p.writeBack.room.stats, heldBytes: p.writeBack.room.heldBytes() },
    offline: p.connectivity.state(),
    outages: p.connectivity.outages,
    mtimes: p.mtimes.status(),
    serverRules: { ...p.rules.status(), directDownload: p.rules.directDownload && p.reader.directDownloads },
    changes: p.live.status(),
    pins: p.pins.status(),
    deleteGuard: p.deleteGuard.status(),
  };
}
