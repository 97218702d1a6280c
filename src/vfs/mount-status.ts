// What the mount process asks of the vfs as a whole: the last uploads at
// unmount (files and the empty folders made here) and the state of its
// engines for the control socket's status answer.
import type { VfsParts } from './parts.js';

export interface Pending {
  path: string;
  size: number;
}

/** Upload everything pending; returns the files that could not be uploaded. */
export async function drainAll(wb: VfsParts['wb'], onStatus: (pending: Pending[]) => void, timeoutMs: number) {
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

export function pendingOf(wb: VfsParts['wb']): Pending[] {
  return wb.pending().map((s) => ({ path: s.path, size: s.size }));
}

/** The state of the mount's engines, for the control socket's status answer. */
export function statusOf(p: VfsParts) {
  return {
    pending: pendingOf(p.wb),
    pendingFolders: p.wb.folders.pending(),
    reader: p.reader.stats,
    readerMemory: p.reader.memory(),
    disk: p.disk ? { ...p.disk.stats, ...p.disk.usage() } : undefined,
    meta: p.meta.stats,
    metaCache: p.meta.held(),
    uploads: p.wb.stats,
    blocks: p.wb.blocks.stats,
    offline: p.net.state(),
    outages: p.net.outages,
    mtimes: p.times.status(),
    serverRules: { ...p.rules.status(), directDownload: p.rules.directDownload && p.reader.directDownloads },
    changes: p.live.status(),
    pins: p.pins.status(),
    deleteGuard: p.deleteGuard.status(),
  };
}
