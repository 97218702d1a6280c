// The write path's share of the cache limit (src/vfs/write/cache-room.ts): a
// write past the limit waits only while another file's upload will free its
// temp file; it never waits on files still open, failing uploads, an offline
// server, or for the file itself (one file larger than the limit).
import { describe, expect, it } from 'vitest';
import { CacheRoom } from '../../../src/vfs/write/cache-room.js';
import { FileState } from '../../../src/vfs/write/file-state.js';

const MiB = 1024 * 1024;

function file(name: string, size: number, open: boolean): FileState {
  const s = new FileState(name, `/nowhere/${name}`, 'repo', `/${name}`);
  s.size = size;
  s.markDirty();
  if (open) s.opened(true);
  return s;
}

function room(states: FileState[], opts: { offline?: boolean; makeRoom?: () => void } = {}) {
  const logs: string[] = [];
  const r = new CacheRoom(
    10 * MiB,
    () => states,
    () => opts.offline ?? false,
    (m) => logs.push(m),
    opts.makeRoom ? { makeRoom: opts.makeRoom } : null,
  );
  return { r, logs };
}

/** whether `p` settles within `ms` */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
}

describe('CacheRoom', () => {
  it('a write past the limit waits for a closed file to go, and goes on once its temp file is freed', async () => {
    const writing = file('w', 4 * MiB, true);
    const closed = file('c', 6 * MiB, false);
    const states = [writing, closed];
    let evictions = 0;
    const { r } = room(states, { makeRoom: () => evictions++ });
    expect(r.mustWait(writing, 4 * MiB + MiB)).toBe(true);
    const w = r.wait(writing, 4 * MiB + MiB);
    expect(await settlesWithin(w, 300)).toBe(false);
    expect(evictions).toBe(1); // the read cache was asked to give way first
    states.splice(1, 1); // the closed file's upload is done: its temp file goes
    r.freed();
    expect(await settlesWithin(w, 300)).toBe(true);
    expect(r.stats.waits).toBe(1);
  });

  it('never waits for the file itself, for files still open, for failing uploads, or while offline', async () => {
    const big = file('big', 30 * MiB, true);
    expect(await settlesWithin(room([big]).r.wait(big, 31 * MiB), 300)).toBe(true);

    const other = file('other', 8 * MiB, true); // another writer: its upload starts only after its close
    expect(await settlesWithin(room([big, other]).r.wait(big, 31 * MiB), 300)).toBe(true);

    const failing = file('failing', 8 * MiB, false);
    failing.failed(new Error('quota'));
    expect(await settlesWithin(room([big, failing]).r.wait(big, 31 * MiB), 300)).toBe(true);

    const closed = file('closed', 8 * MiB, false);
    expect(await settlesWithin(room([big, closed], { offline: true }).r.wait(big, 31 * MiB), 300)).toBe(true);
    // the same closed file, online: the write waits for its upload
    const online = [big, closed];
    const { r } = room(online);
    const w = r.wait(big, 31 * MiB);
    expect(await settlesWithin(w, 300)).toBe(false);
    online.pop();
    r.freed();
    await w;
  });

  it('files in memory and writes below the end do not count', () => {
    const s = file('s', 20 * MiB, true);
    const { r } = room([s]);
    expect(r.mustWait(s, 5 * MiB)).toBe(false); // an overwrite: no growth
    const m = file('m', MiB, true);
    m.mem = Buffer.alloc(MiB);
    expect(room([m]).r.heldBytes()).toBe(0);
  });
});
