import { describe, expect, it } from 'vitest';
import { formatStatus, progressBytes, type MountStatus } from '../../../src/cli/control/status-format.js';

const MiB = 1024 * 1024;

function status(over: Partial<MountStatus> = {}): MountStatus {
  return {
    pid: 4242,
    mountpoint: '/mnt/drive',
    server: 'https://cloud.example.com',
    account: 'me@example.com',
    library: 'My Library',
    startedAt: 1_000_000,
    cacheDir: '/var/cache/seafs/ab12',
    cacheMaxBytes: 4096 * MiB,
    cacheUsedBytes: 300 * MiB,
    pending: [],
    queue: [],
    uploads: { uploads: 7, uploadedBytes: 70 * MiB, failures: 0 },
    disk: { hits: 12 },
    rssBytes: 110 * MiB,
    ...over,
  };
}

describe('seafs status text', () => {
  it('shows the bandwidth limits, off where there is none', () => {
    const lines = formatStatus(status({ bandwidth: { up: MiB, down: null } })).split('\n');
    expect(lines).toContain('  bandwidth: up 1 MiB/s, down off');
    expect(formatStatus(status({ bandwidth: { up: null, down: null } }))).toContain('  bandwidth: up off, down off');
    // a mount of an earlier version answers no limits: no line
    expect(formatStatus(status())).not.toMatch(/bandwidth/);
  });

  it('shows an upload by blocks as the bytes it sends against the file size', () => {
    const st = status({
      queue: [
        {
          path: '/vm.img',
          size: 1024 * MiB,
          state: 'uploading',
          attempts: 0,
          blocks: { toSend: 8 * MiB, sent: 0, onServer: 127, blocks: 128 },
        },
      ],
    });
    const line = formatStatus(st)
      .split('\n')
      .find((l) => l.includes('/vm.img'));
    expect(line).toMatch(/sending 8\.0 MiB of 1\.00 GiB: 127 blocks already on the server$/);
  });

  it('says when deletes are held after a mass delete and how to confirm or cancel', () => {
    const held = { since: new Date(1_000_000 + 90_000).toISOString(), counted: 1000, refused: 7 };
    const st = status({
      mountpoint: '/mnt/my drive',
      deleteGuard: { max: 1000, windowMs: 60_000, recent: 1000, held, confirmed: false },
    });
    expect(formatStatus(st, { now: 1_000_000 + 120_000 }).split('\n')[1]).toBe(
      "  DELETES HELD for 30s: 1000 file(s) deleted within 60 s, 7 delete(s) refused since; run `seafs confirm-delete '/mnt/my drive'` to let them go on, or `seafs confirm-delete '/mnt/my drive' --cancel` to keep the files",
    );
    const off = status({ deleteGuard: { max: 1000, windowMs: 60_000, recent: 3, held: null, confirmed: false } });
    expect(formatStatus(off)).not.toMatch(/DELETES/);
  });

  it('shows the folder listings the mount holds: folders, entries against the budget, and their size', () => {
    const st = status({ metaCache: { folders: 2001, entries: 102_000, maxEntries: 500_000, bytes: 23 * MiB } });
    expect(formatStatus(st).split('\n')).toContain(
      '  folder listings: 2001 folder(s), 102000 entries of at most 500000 (about 23.0 MiB)',
    );
  });

  it('lists the folders made in the mount that the server does not hold yet, with the reason of a failed creation', () => {
    const st = status({ pendingFolders: [{ path: '/new' }, { path: '/refused', error: 'mkdir failed (HTTP 403)' }] });
    const lines = formatStatus(st).split('\n');
    expect(lines).toContain('  folders: 2 made here, not on the server yet');
    expect(lines).toContain('    /new');
    expect(lines).toContain('    /refused  (mkdir failed (HTTP 403))');
    expect(
      formatStatus(status())
        .split('\n')
        .some((l) => l.includes('folders:')),
    ).toBe(false);
  });

  it('says when everything is on the server, with the mount, server, account, uptime, cache and memory', () => {
    const text = formatStatus(status(), { now: 1_000_000 + 3725_000 });
    expect(text.split('\n')).toEqual([
      '/mnt/drive: My Library on https://cloud.example.com as me@example.com (pid 4242, up 1h02m)',
      '  uploads: none pending, everything is on the server; 7 uploaded (70.0 MiB) since the mount',
      '  cache: 300.0 MiB of 4.00 GiB in /var/cache/seafs/ab12, 12 chunk(s) read from it',
      '  memory: 110.0 MiB resident',
    ]);
  });

  it('lists uploading files first with a bar for streamed ones, then failures with their reason, then waiting files, with rate and time left', () => {
    const st = status({
      queue: [
        { path: '/small.txt', size: 2048, state: 'waiting', attempts: 0 },
        {
          path: '/over.bin',
          size: 3 * MiB,
          state: 'failed',
          attempts: 6,
          error: 'upload failed (HTTP 443): quota exceeded',
        },
        { path: '/iso/big.iso', size: 100 * MiB, state: 'uploading', attempts: 0, sent: 25 * MiB },
      ],
    });
    const text = formatStatus(st, { rate: 5 * MiB, now: 1_060_000 });
    const lines = text.split('\n');
    // 103 MiB pending minus 25 MiB sent, at 5 MiB/s: about 16 s
    expect(lines[1]).toBe(
      '  uploads: 3 pending (103.0 MiB): 1 uploading, 1 waiting, 1 failed; 7 uploaded (70.0 MiB) since the mount; 5.0 MiB/s, about 16s left',
    );
    expect(lines[2]).toBe('    uploading  /iso/big.iso  [#####---------------]  25%  25.0 MiB of 100.0 MiB');
    expect(lines[3]).toBe(
      '    failed     /over.bin     3.0 MiB  (attempt 6: upload failed (HTTP 443): quota exceeded)',
    );
    expect(lines[4]).toBe('    waiting    /small.txt    2.0 KiB');
  });

  it('says when a file is still being written, so its size is not final', () => {
    const st = status({
      queue: [{ path: '/rec.mkv', size: 40 * MiB, state: 'uploading', attempts: 0, sent: 40 * MiB, writing: true }],
    });
    expect(formatStatus(st).split('\n')[2]).toBe(
      '    uploading  /rec.mkv  [####################] 100%  40.0 MiB of 40.0 MiB (still being written)',
    );
  });

  it('counts files still open for writing apart, and tells no time left while one is', () => {
    const st = status({
      queue: [
        { path: '/movie.mkv', size: 400 * MiB, state: 'writing', attempts: 0 },
        { path: '/a.txt', size: 10, state: 'waiting', attempts: 0 },
      ],
    });
    const lines = formatStatus(st, { rate: MiB }).split('\n');
    expect(lines[1]).toBe(
      '  uploads: 2 pending (400.0 MiB): 0 uploading, 1 being written, 1 waiting, 0 failed; 7 uploaded (70.0 MiB) since the mount; 1.0 MiB/s',
    );
    expect(lines[2]).toBe('    writing    /movie.mkv  400.0 MiB');
  });

  it('shows at most maxFiles files and counts the rest', () => {
    const queue = Array.from({ length: 30 }, (_, i) => ({
      path: `/f${i}`,
      size: 1000 + i,
      state: 'waiting' as const,
      attempts: 0,
    }));
    const lines = formatStatus(status({ queue }), { maxFiles: 5 }).split('\n');
    expect(lines.filter((l) => l.startsWith('    waiting'))).toHaveLength(5);
    expect(lines).toContain('    ... and 25 more');
  });

  it('counts finished uploads and what streams have sent as progress', () => {
    const st = status({ queue: [{ path: '/a', size: 10, state: 'uploading', attempts: 0, sent: 4 }] });
    expect(progressBytes(st)).toBe(70 * MiB + 4);
  });

  it('reads the older status answer, which had only the pending list', () => {
    const st = status({ queue: undefined, pending: [{ path: '/old.bin', size: 5 }] });
    expect(formatStatus(st)).toContain('    waiting    /old.bin  5 B');
  });

  it('says how many uploads the server stored at another size and were sent again', () => {
    const st = status({ uploads: { uploads: 3, uploadedBytes: MiB, failures: 0, storedWrong: 1 } });
    expect(formatStatus(st).split('\n')).toContain(
      '  uploads the server stored at another size than was sent: 1 (each sent again)',
    );
    const none = status({ uploads: { uploads: 3, uploadedBytes: MiB, failures: 0, storedWrong: 0 } });
    expect(formatStatus(none)).not.toContain('another size');
  });

  it('says when the mount is offline and how many conflicts it saved', () => {
    const st = status({
      offline: { offlineSince: new Date(1_000_000).toISOString(), cause: 'listDir failed: connect ECONNREFUSED' },
      uploads: { uploads: 7, uploadedBytes: 70 * MiB, failures: 0, conflicts: 2 },
    });
    const lines = formatStatus(st, { now: 1_000_000 + 95_000 }).split('\n');
    expect(lines[1]).toBe(
      '  OFFLINE for 1m35s: listDir failed: connect ECONNREFUSED; known folders and cached files are served, writes wait for the server',
    );
    expect(lines).toContain(
      `  conflicts since the mount: 2 (the server's version kept the name; the local one was saved as "name (SFConflict ...)")`,
    );
  });

  it('says where modification times are kept: by the server, or by this machine when the server ignores them', () => {
    const dir = '/var/cache/seafs/ab12/mtimes';
    const line = (mtimes: MountStatus['mtimes']) =>
      formatStatus(status({ mtimes }))
        .split('\n')
        .find((l) => l.includes('modification times'));
    expect(line({ mode: 'server', basis: 'checked', files: 0, dir })).toBe('  modification times: kept by the server');
    expect(line({ mode: 'local', basis: 'checked', files: 12, dir, serverVersion: '10.0.1' })).toBe(
      `  modification times: kept by this machine (the server ignores them: seafile-server < 12.0.4); 12 file(s) in ${dir}`,
    );
    expect(line({ mode: 'local', basis: 'version', files: 0, dir, serverVersion: '10.0.1' })).toContain(
      'kept by this machine (the server ignores them: seafile-server < 12.0.4) (going by its version 10.0.1;',
    );
    expect(line({ mode: 'unknown', basis: 'none', files: 0, dir })).toMatch(/^ {2}modification times: not known yet/);
  });
});

describe('seafs status text: pinned files', () => {
  const pins = {
    roots: ['/Trip', '/Docs/plan.txt'],
    files: 10,
    bytes: 100 * MiB,
    doneFiles: 4,
    doneBytes: 40 * MiB,
    partialBytes: 10 * MiB,
    waiting: 3,
    failed: [{ path: '/Trip/x.bin', error: 'HTTP 500' }],
    unfit: { files: 2, bytes: 30 * MiB },
    fetchedBytes: 50 * MiB,
    accountBytes: 100 * MiB,
    limitBytes: 3686 * MiB,
  };

  it('shows what is pinned, how much of it is here, and what waits, failed or does not fit', () => {
    const lines = formatStatus(status({ pins })).split('\n');
    expect(lines).toContain(
      '  pinned: /Trip, /Docs/plan.txt: 10 file(s), 100.0 MiB; [##########----------]  50% downloaded (4 of 10 files)',
    );
    expect(lines).toContain('    3 file(s) wait for the server');
    expect(lines).toContain('    failed: /Trip/x.bin (HTTP 500; tried again)');
    expect(lines).toContain(
      '    2 file(s) (30.0 MiB) under pinned folders do not fit: pinned files may take 3.60 GiB of the cache (--cache-max-size)',
    );
  });

  it('says when all of it is here, and nothing when nothing is pinned', () => {
    const done = {
      ...pins,
      doneFiles: 10,
      doneBytes: 100 * MiB,
      waiting: 0,
      failed: [],
      unfit: { files: 0, bytes: 0 },
    };
    expect(formatStatus(status({ pins: done })).split('\n')).toContain(
      '  pinned: /Trip, /Docs/plan.txt: 10 file(s), 100.0 MiB; all on this machine',
    );
    expect(formatStatus(status({ pins: { ...done, roots: [], files: 0 } }))).not.toContain('pinned');
  });
});
