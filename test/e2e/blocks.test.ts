// Uploads by blocks through a real mount against `seafs serve`, the bytes the
// mount sends to the file server counted by a proxy in between: an edit in
// the middle of a file and an append send one block, a copy inside the drive
// sends none, a mount killed mid-upload leaves the next one only the blocks
// the server lacks, a server whose commit answers 446 gets whole uploads
// (remembered), and a commit answered 500 (the Go fileserver's answer for a
// block it lacks) is tried again. Every file is read back through the API.
import { randomBytes } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectRemoteFile, waitRemoteFile } from '../helpers/api-check.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { mountLibrary, q, sh, sleep } from '../helpers/mount.js';

const ctx = setupE2E(['Blocks', 'Resume', 'Fallback', 'Retry']);
const MiB = 1024 * 1024;
const raw = (p: { uploadsByKind: Record<string, number> }) => p.uploadsByKind['upload-raw-blks-api'] ?? 0;

describe('uploads by blocks through the mount', () => {
  it('an edit in the middle and an append send one block each; cp inside the drive sends nothing', async () => {
    const proxy = await startFaultProxy({ target: ctx.server.url, seed: 1 });
    const repo = ctx.repos.Blocks;
    try {
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Blocks' });
      const big = path.join(ctx.src, 'big.bin');
      await writeRandom(big, 40 * MiB);
      await sh(`cp ${q(big)} ${q(m.mnt)}/big.bin && sync ${q(m.mnt)}/big.bin`);
      await expectRemoteFile(ctx.api, repo, '/big.bin', big);
      expect(raw(proxy)).toBeGreaterThanOrEqual(40 * MiB);

      // 1 MiB in the middle (block 2 of 5)
      const patch = path.join(ctx.src, 'patch.bin');
      writeFileSync(patch, randomBytes(MiB));
      let before = proxy.counts.uploadBytes;
      await sh(`dd if=${q(patch)} of=${q(m.mnt)}/big.bin bs=1M seek=20 conv=notrunc,fsync status=none`);
      const edited = path.join(ctx.src, 'edited.bin');
      copyFileSync(big, edited);
      await sh(`dd if=${q(patch)} of=${q(edited)} bs=1M seek=20 conv=notrunc status=none`);
      await expectRemoteFile(ctx.api, repo, '/big.bin', edited);
      const editSent = proxy.counts.uploadBytes - before;
      expect(editSent).toBeLessThanOrEqual(8 * MiB + 64 * 1024);

      // 1 MiB appended: a new, sixth block
      before = proxy.counts.uploadBytes;
      await sh(`dd if=${q(patch)} of=${q(m.mnt)}/big.bin bs=1M oflag=append conv=notrunc,fsync status=none`);
      await sh(`cat ${q(patch)} >> ${q(edited)}`);
      await expectRemoteFile(ctx.api, repo, '/big.bin', edited);
      const appendSent = proxy.counts.uploadBytes - before;
      expect(appendSent).toBeLessThanOrEqual(MiB + 64 * 1024);

      // a copy inside the drive: the kernel reads and writes every byte, the server has every block
      before = proxy.counts.uploadBytes;
      await sh(`cp ${q(m.mnt)}/big.bin ${q(m.mnt)}/copy.bin && sync ${q(m.mnt)}/copy.bin`);
      await expectRemoteFile(ctx.api, repo, '/copy.bin', edited);
      const cpSent = proxy.counts.uploadBytes - before;
      expect(cpSent).toBeLessThan(MiB);
      console.log(`blocks e2e: edit 1 MiB sent ${editSent} B, append 1 MiB ${appendSent} B, cp 41 MiB ${cpSent} B`);
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a mount killed mid-upload: the next one sends only the blocks the server lacks', async () => {
    const repo = ctx.repos.Resume;
    const size = 48 * MiB;
    let stopAt = Infinity;
    // once 16 MiB of blocks went through, the file server is "down" (503) until the next mount
    const proxy = await startFaultProxy({
      target: ctx.server.url,
      seed: 2,
      answer: (method, url) => (/\/seafhttp\//.test(url) && raw(proxy) >= stopAt ? 503 : null),
    });
    try {
      const src = path.join(ctx.src, 'resume.bin');
      await writeRandom(src, size);
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Resume' });
      stopAt = raw(proxy) + 16 * MiB;
      await sh(`cp ${q(src)} ${q(m.mnt)}/resume.bin`);
      for (let i = 0; i < 300 && raw(proxy) < stopAt; i++) await sleep(100);
      expect(raw(proxy)).toBeGreaterThanOrEqual(stopAt);
      // the requests under way reach the server (new ones are refused), then the mount dies
      await sleep(1500);
      await m.kill9();
      const sentBefore = raw(proxy);
      stopAt = Infinity;
      const again = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Resume', cacheDir: m.cacheDir });
      await sh(`sync ${q(again.mnt)}/resume.bin`);
      await expectRemoteFile(ctx.api, repo, '/resume.bin', src);
      const resent = raw(proxy) - sentBefore;
      console.log(`blocks e2e: after kill -9 at ${sentBefore} B of blocks, the next mount sent ${resent} B of ${size}`);
      // only what the server lacked: what went through before the kill is not sent again
      expect(resent).toBeLessThanOrEqual(size - sentBefore + MiB);
      const un = await again.unmount();
      expect(un.code, un.out + un.err).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a commit answered 500 once is tried again, and blocks stay on', async () => {
    const repo = ctx.repos.Retry;
    let commits = 0;
    const proxy = await startFaultProxy({
      target: ctx.server.url,
      seed: 4,
      // the Go fileserver answers a commit naming a block it lacks 500, no message
      answer: (method, url) =>
        method === 'POST' && /\/seafhttp\/upload-blks-api\//.test(url) && commits++ === 0 ? 500 : null,
    });
    try {
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Retry' });
      const a = path.join(ctx.src, 'ra.bin');
      await writeRandom(a, 9 * MiB);
      await sh(`cp ${q(a)} ${q(m.mnt)}/a.bin && sync ${q(m.mnt)}/a.bin`);
      await waitRemoteFile(ctx.api, repo, '/a.bin', a);
      expect(commits).toBeGreaterThanOrEqual(2);
      expect(proxy.uploadsByKind['upload-api'] ?? 0).toBe(0);
      expect(m.output()).not.toContain('uploads by blocks are off');
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a server whose commit answers 446 gets whole uploads, and is not asked for blocks again', async () => {
    const repo = ctx.repos.Fallback;
    const proxy = await startFaultProxy({
      target: ctx.server.url,
      seed: 3,
      answer: (method, url) => (method === 'POST' && /\/seafhttp\/upload-blks-api\//.test(url) ? 446 : null),
    });
    try {
      const m = await mountLibrary({ ...ctx.server, url: proxy.url }, { library: 'Fallback' });
      const a = path.join(ctx.src, 'fa.bin');
      const b = path.join(ctx.src, 'fb.bin');
      await writeRandom(a, 20 * MiB);
      await writeRandom(b, 20 * MiB);
      await sh(`cp ${q(a)} ${q(m.mnt)}/a.bin && sync ${q(m.mnt)}/a.bin`);
      await expectRemoteFile(ctx.api, repo, '/a.bin', a);
      const blocksBefore = raw(proxy);
      await sh(`cp ${q(b)} ${q(m.mnt)}/b.bin && sync ${q(m.mnt)}/b.bin`);
      await expectRemoteFile(ctx.api, repo, '/b.bin', b);
      expect(raw(proxy)).toBe(blocksBefore);
      expect(proxy.uploadsByKind['upload-api'] ?? 0).toBeGreaterThanOrEqual(40 * MiB);
      expect(m.output()).toContain('uploads by blocks are off for this server');
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});
