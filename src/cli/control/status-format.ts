// `seafs status` as text: one block per mount, from the mount's `status`
// answer (see mount/run.ts) and, when measured, the upload rate.
import type {
  DeleteGuardStatus,
  LiveStatus,
  MtimeStatus,
  PinStatus,
  ServerRulesStatus,
  UploadQueueEntry,
} from '../../vfs/vfs.js';
import { shellWord } from './confirm-delete.js';
import type { RateLimits } from '../../client/bandwidth.js';
import { fmtBandwidth } from '../size-units.js';

export type { UploadQueueEntry };

/** The fields of a mount's status answer that `seafs status` shows. */
export interface MountStatus {
  pid: number;
  mountpoint: string;
  server?: string;
  account?: string;
  library: string;
  startedAt?: number;
  cacheDir?: string;
  cacheMaxBytes?: number;
  /** bytes the disk cache holds now (measured by `seafs status`, not the mount) */
  cacheUsedBytes?: number;
  queue?: UploadQueueEntry[];
  pending: { path: string; size: number }[];
  /** folders made in the mount that the server does not hold yet, and why the last attempt failed */
  pendingFolders?: { path: string; error?: string }[];
  uploads?: { uploads: number; uploadedBytes: number; failures: number; conflicts?: number; storedWrong?: number };
  disk?: { hits: number } | null;
  /** null or absent: online */
  offline?: { offlineSince: string; cause: string } | null;
  /** the server refuses the mount's token (mount/token-watch.ts); null or absent: it is fine */
  tokenRefused?: { since: string; hint: string } | null;
  rssBytes?: number;
  /** the folder listings the mount holds in memory */
  metaCache?: { folders: number; entries: number; maxEntries: number; bytes: number };
  /** where modification times set through the mount are kept (src/vfs/mtimes/kept-mtimes.ts) */
  mtimes?: MtimeStatus;
  /** the server's version and what the mount adapts to it (src/vfs/common/server-rules.ts) */
  serverRules?: ServerRulesStatus;
  /** how changes made elsewhere arrive (src/vfs/listings/live-changes.ts) */
  changes?: LiveStatus;
  /** files kept on this machine (src/vfs/pin/) */
  pins?: PinStatus;
  /** the mass-delete guard (src/vfs/remove/mass-delete-guard.ts) */
  deleteGuard?: DeleteGuardStatus;
  /** bandwidth limits of file transfers, bytes/s (null: none) */
  bandwidth?: RateLimits;
}

/** The lines on pinned files: what is pinned, how much of it is here, what waits or failed or does not fit. */
export function pinLines(p: PinStatus): string[] {
  if (p.roots.length === 0) return [];
  const names = p.roots.slice(0, 5).join(', ') + (p.roots.length > 5 ? `, ... (${p.roots.length})` : '');
  const left = p.files - p.doneFiles;
  const state = left
    ? `${bar(p.doneBytes + p.partialBytes, p.bytes)} downloaded (${p.doneFiles} of ${p.files} files)`
    : 'all on this machine';
  const lines = [`  pinned: ${names}: ${p.files} file(s), ${fmtBytes(p.bytes)}; ${state}`];
  if (p.waiting) lines.push(`    ${p.waiting} file(s) wait for the server`);
  for (const f of p.failed.slice(0, 5)) lines.push(`    failed: ${f.path} (${f.error}; tried again)`);
  if (p.unfit.files)
    lines.push(
      `    ${p.unfit.files} file(s) (${fmtBytes(p.unfit.bytes)}) under pinned folders do not fit: pinned files may take ${fmtBytes(p.limitBytes)} of the cache (--cache-max-size)`,
    );
  return lines;
}

/** One line: the server's version and which of its versions' behaviours the mount uses. */
export function serverRulesLine(r: ServerRulesStatus): string {
  const uses = [
    r.virtualIds ? 'users compared by the virtual account id (11.0+)' : 'users compared by the account id',
    r.directDownload ? 'direct downloads (12.0+)' : null,
    r.strictNames ? 'names refused by 13.0 answered EINVAL' : null,
  ].filter(Boolean);
  return `server: Seafile ${r.version ?? 'version not known yet'}; ${uses.join(', ')}`;
}

/** The status line on modification times: kept by the server, or by this machine for a server that ignores them. */
export function changesLine(c: LiveStatus): string {
  if (c.mode === 'notification')
    return `changes made elsewhere: pushed by the server's notification server (${c.events} so far)`;
  if (c.mode === 'polling')
    return 'changes made elsewhere: found by revalidating listings (notification server not connected)';
  return 'changes made elsewhere: found by revalidating listings';
}

export function mtimesLine(m: MtimeStatus): string {
  const guess =
    m.basis === 'version'
      ? ` (going by its version ${m.serverVersion}; checked at the first upload of a file with a time set here)`
      : '';
  if (m.mode === 'server') return `modification times: kept by the server${guess}`;
  if (m.mode === 'local')
    return (
      `modification times: kept by this machine (the server ignores them: seafile-server < 12.0.4)${guess}; ` +
      `${m.files} file(s) in ${m.dir}`
    );
  return 'modification times: not known yet (checked at the first upload of a file with a time set here)';
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export function fmtDuration(sec: number): string {
  const s = Math.max(0, Math.round(sec));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** Bytes of the pending uploads already on their way (streamed uploads report how far they got). */
export function sentBytes(st: MountStatus): number {
  return (st.queue ?? []).reduce((a, f) => a + (f.sent ?? 0), 0);
}

/** What counts as progress between two samples: finished uploads plus what streams have sent. */
export function progressBytes(st: MountStatus): number {
  return (st.uploads?.uploadedBytes ?? 0) + sentBytes(st);
}

function bar(done: number, total: number, width = 20): string {
  const f = total > 0 ? Math.min(1, done / total) : 0;
  const n = Math.round(f * width);
  return `[${'#'.repeat(n)}${'-'.repeat(width - n)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

/** An upload by blocks: "sending 8.0 MiB of 1.00 GiB: 127 blocks already on the server" (and how far). */
export function blocksDetail(b: NonNullable<UploadQueueEntry['blocks']>, size: number): string {
  const sent = b.sent > 0 ? `${bar(b.sent, b.toSend)}  ` : '';
  return `${sent}sending ${fmtBytes(b.toSend)} of ${fmtBytes(size)}: ${b.onServer} block${b.onServer === 1 ? '' : 's'} already on the server`;
}

/** The block `seafs status` prints for one mount; `rate` in bytes/s when it was measured. */
export function formatStatus(st: MountStatus, opts: { rate?: number; now?: number; maxFiles?: number } = {}): string {
  const now = opts.now ?? Date.now();
  const lines: string[] = [];
  const who = [st.server && `on ${st.server}`, st.account && `as ${st.account}`].filter(Boolean).join(' ');
  const up = st.startedAt ? `, up ${fmtDuration((now - st.startedAt) / 1000)}` : '';
  lines.push(`${st.mountpoint}: ${st.library}${who ? ` ${who}` : ''} (pid ${st.pid}${up})`);
  if (st.offline) {
    const since = fmtDuration((now - Date.parse(st.offline.offlineSince)) / 1000);
    lines.push(
      `  OFFLINE for ${since}: ${st.offline.cause}; known folders and cached files are served, writes wait for the server`,
    );
  }
  if (st.tokenRefused) {
    const since = fmtDuration((now - Date.parse(st.tokenRefused.since)) / 1000);
    lines.push(
      `  TOKEN REFUSED for ${since} (revoked or expired): ${st.tokenRefused.hint}; writes wait in the journal`,
    );
  }
  const held = st.deleteGuard?.held;
  if (held) {
    const cmd = `seafs confirm-delete ${shellWord(st.mountpoint)}`;
    lines.push(
      `  DELETES HELD for ${fmtDuration((now - Date.parse(held.since)) / 1000)}: ${held.counted} file(s) deleted within ${Math.round(st.deleteGuard!.windowMs / 1000)} s, ${held.refused} delete(s) refused since; run \`${cmd}\` to let them go on, or \`${cmd} --cancel\` to keep the files`,
    );
  }

  const queue: UploadQueueEntry[] =
    st.queue ?? st.pending.map((p) => ({ ...p, state: 'waiting' as const, attempts: 0 }));
  const count = (s: UploadQueueEntry['state']) => queue.filter((f) => f.state === s).length;
  const pendingBytes = queue.reduce((a, f) => a + f.size, 0);
  const done = st.uploads
    ? `; ${st.uploads.uploads} uploaded (${fmtBytes(st.uploads.uploadedBytes)}) since the mount`
    : '';
  if (queue.length === 0) {
    lines.push(`  uploads: none pending, everything is on the server${done}`);
  } else {
    let speed = '';
    if (opts.rate !== undefined) {
      const left = pendingBytes - sentBytes(st);
      // while a file is still written its size is not final: no time left to tell
      const writing = queue.some((f) => f.writing || f.state === 'writing');
      const eta = writing ? '' : `, about ${fmtDuration(left / opts.rate)} left`;
      // the rate counts finished uploads (and bytes sent, where reported): a file still written shows none yet
      if (opts.rate > 0) speed = `; ${fmtBytes(Math.round(opts.rate))}/s${eta}`;
      else if (!writing) speed = '; no upload finished since the last sample';
    }
    lines.push(
      `  uploads: ${queue.length} pending (${fmtBytes(pendingBytes)}): ${count('uploading')} uploading, ${count('writing') ? `${count('writing')} being written, ` : ''}${count('waiting')} waiting, ${count('failed')} failed${done}${speed}`,
    );
    const order = { uploading: 0, writing: 1, failed: 2, waiting: 3 } as const;
    const shown = [...queue]
      .sort((a, b) => order[a.state] - order[b.state] || b.size - a.size)
      .slice(0, opts.maxFiles ?? 20);
    const width = Math.min(50, Math.max(...shown.map((f) => f.path.length)));
    for (const f of shown) {
      const name = f.path.length > width ? `...${f.path.slice(-(width - 3))}` : f.path.padEnd(width);
      let detail = fmtBytes(f.size);
      if (f.sent !== undefined) detail = `${bar(f.sent, f.size)}  ${fmtBytes(f.sent)} of ${fmtBytes(f.size)}`;
      if (f.blocks) detail = blocksDetail(f.blocks, f.size);
      if (f.writing && f.state !== 'writing') detail += ' (still being written)';
      if (f.state === 'failed') detail += `  (attempt ${f.attempts}: ${f.error ?? 'unknown error'})`;
      lines.push(`    ${f.state.padEnd(9)}  ${name}  ${detail}`);
    }
    if (queue.length > shown.length) lines.push(`    ... and ${queue.length - shown.length} more`);
  }
  if (st.pendingFolders?.length) {
    lines.push(`  folders: ${st.pendingFolders.length} made here, not on the server yet`);
    for (const f of st.pendingFolders.slice(0, opts.maxFiles ?? 20))
      lines.push(`    ${f.path}${f.error ? `  (${f.error})` : ''}`);
    if (st.pendingFolders.length > (opts.maxFiles ?? 20))
      lines.push(`    ... and ${st.pendingFolders.length - (opts.maxFiles ?? 20)} more`);
  }
  if (st.uploads?.conflicts) {
    lines.push(
      `  conflicts since the mount: ${st.uploads.conflicts} (the server's version kept the name; the local one was saved as "name (SFConflict ...)")`,
    );
  }
  if (st.uploads?.storedWrong)
    lines.push(
      `  uploads the server stored at another size than was sent: ${st.uploads.storedWrong} (each sent again)`,
    );
  if (st.uploads?.failures)
    lines.push(
      `  failed attempts since the mount: ${st.uploads.failures} (retried; files that never succeed stay in the cache for the next mount)`,
    );
  if (st.cacheMaxBytes !== undefined) {
    const used = st.cacheUsedBytes !== undefined ? `${fmtBytes(st.cacheUsedBytes)} of ` : '';
    const hits = st.disk ? `, ${st.disk.hits} chunk(s) read from it` : '';
    lines.push(
      `  cache: ${st.cacheMaxBytes ? `${used}${fmtBytes(st.cacheMaxBytes)}` : 'off'}${st.cacheDir ? ` in ${st.cacheDir}` : ''}${hits}`,
    );
  }
  if (st.bandwidth) lines.push(`  bandwidth: ${fmtBandwidth(st.bandwidth)}`);
  if (st.metaCache) {
    const m = st.metaCache;
    lines.push(
      `  folder listings: ${m.folders} folder(s), ${m.entries} entries of at most ${m.maxEntries} (about ${fmtBytes(m.bytes)})`,
    );
  }
  if (st.pins) lines.push(...pinLines(st.pins));
  if (st.serverRules) lines.push(`  ${serverRulesLine(st.serverRules)}`);
  if (st.mtimes) lines.push(`  ${mtimesLine(st.mtimes)}`);
  if (st.changes) lines.push(`  ${changesLine(st.changes)}`);
  if (st.rssBytes !== undefined) lines.push(`  memory: ${fmtBytes(st.rssBytes)} resident`);
  return lines.join('\n');
}
