// Faults through a real mount (issue 17): a server behind a seeded proxy that
// answers 500 and 429, resets connections after doing the work and stalls; a
// frozen server (SIGSTOP); a stopped server. What the user sees is asserted
// (every command exits 0, or fails within a bound instead of hanging), and
// what reached the server is checked through the API, directly against it.
// Each case prints what its operations took: these are the figures of the
// issue's closing note.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { expectRemoteTree, remoteSha, remoteTree, sha256, sha256File, waitRemoteFile } from '../helpers/api-check.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { CLI, mountLibrary, q, run, scratchDir, sh, sleep, testEnv, type Mount } from '../helpers/mount.js';
import { uploadTo } from '../helpers/server.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Faults', 'Frozen', 'Stopped']);
const MiB = 1024 * 1024;

interface Timed {
  code: number;
  out: string;
  err: string;
  ms: number;
}

/** Runs a bash script, never rejecting, and says how long it took. */
async function timed(script: string, timeoutMs = 120_000): Promise<Timed> {
  const t0 = Date.now();
  const r = await sh(script, { allowFail: true, timeoutMs });
  return { ...r, ms: Date.now() - t0 };
}

/** Runs a bash script that must exit 0; returns its time. */
async function ok(what: string, script: string, figures: string[], timeoutMs = 120_000): Promise<Timed> {
  const r = await timed(script, timeoutMs);
  figures.push(`${what}: exit ${r.code} after ${r.ms} ms`);
  expect(r.code, `${what} must exit 0:\n${r.err}`).toBe(0);
  return r;
}

/** Writes `files` (name -> content) into `dir` of `repo` through an upload link (directly on the server). */
async function seed(repo: string, dir: string, files: Record<string, string | Buffer>): Promise<void> {
  const link = await ctx.api.uploadLink(repo, dir);
  const r = await uploadTo(link, dir, files, { replace: true });
  expect(r.status, r.text).toBe(200);
}

/** Lines of the mount's log that match `re`. */
function logLines(m: Mount, re: RegExp): string[] {
  return m
    .output()
    .split('\n')
    .filter((l) => re.test(l));
}

/** The read engine's counters of a mount, from `seafs status --json`. */
async function readerStats(m: Mount): Promise<{ diskChunks: number; bytesFetched: number }> {
  const r = await run(process.execPath, [CLI, 'status', m.mnt, '--json'], { env: testEnv(), timeoutMs: 10_000 });
  return (JSON.parse(r.out) as { reader: { diskChunks: number; bytesFetched: number } }[])[0].reader;
}

const SLOW_READER = `
const fs = require('fs');
const fd = fs.openSync(process.argv[1], 'r');
const b = Buffer.alloc(1 << 20);
let off = 0;
while (off < 2 * b.length) off += fs.readSync(fd, b, 0, b.length, off);
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  const t0 = Date.now();
  let res;
  try {
    for (;;) {
      const n = fs.readSync(fd, b, 0, b.length, off);
      if (!n) break;
      off += n;
    }
    res = { ok: true, off, ms: Date.now() - t0 };
  } catch (e) {
    res = { ok: false, code: e.code, off, ms: Date.now() - t0 };
  }
  process.stdout.write(JSON.stringify(res) + '\\n');
  process.exit(0);
});
`;

/** SEAFS_FAULT_SEED picks another sequence of faults (scripts/soak-faults runs many) */
const FAULT_SEED = Number(process.env.SEAFS_FAULT_SEED ?? 1717);
const OFFLINE = /offline: the server is unreachable/;
const ONLINE = /online: the server answers again/;

describe('faults through the mount', () => {
  it('under seeded 500s, 429s, resets and stalls: cp -r, tar x, folder renames (one right after uploads into it), deletes and overwrites all exit 0, the server ends with exactly the expected tree, and a fresh mount reads it back', async () => {
    const repo = ctx.repos.Faults;
    const figures: string[] = [];
    // the source: ~200 files in nested folders, three of them 8-20 MiB
    const src = path.join(ctx.src, 'a-src');
    let n = 0;
    for (let d = 0; d < 10; d++) {
      const dir = path.join(src, 'docs', `d${d}`);
      mkdirSync(dir, { recursive: true });
      for (let i = 0; i < 19; i++, n++)
        writeFileSync(path.join(dir, `f${String(i).padStart(3, '0')}.txt`), randomBytes((n * 7919) % (48 * 1024)));
    }
    mkdirSync(path.join(src, 'misc'));
    for (let i = 0; i < 7; i++, n++) writeFileSync(path.join(src, 'misc', `m${i}.dat`), randomBytes(100 + i * 5000));
    mkdirSync(path.join(src, 'big'));
    for (const [i, size] of [8, 13, 20].entries()) await writeRandom(path.join(src, 'big', `b${i}.bin`), size * MiB);
    n += 3;
    expect(n).toBe(200);
    // 50 files copied in and their folder moved at once, while their uploads wait (issue 31)
    const fifty = path.join(ctx.src, 'a-fifty', 'b');
    mkdirSync(fifty, { recursive: true });
    for (let i = 0; i < 50; i++)
      writeFileSync(path.join(fifty, `g${String(i).padStart(2, '0')}.txt`), randomBytes(300 + i * 97));
    // a tarball of 100 small files
    const tarSrc = path.join(ctx.src, 'a-tar');
    for (const sub of ['lib', 'src', 'test', 'doc']) {
      mkdirSync(path.join(tarSrc, 'pkg', sub), { recursive: true });
      for (let i = 0; i < 25; i++)
        writeFileSync(
          path.join(tarSrc, 'pkg', sub, `${sub}${String(i).padStart(3, '0')}.js`),
          randomBytes(200 + i * 300),
        );
    }
    const tar = path.join(ctx.src, 'a.tar');
    await sh(`tar cf ${q(tar)} -C ${q(tarSrc)} pkg`);
    const over = [path.join(ctx.src, 'over0'), path.join(ctx.src, 'over1'), path.join(ctx.src, 'over2')];
    writeFileSync(over[0], randomBytes(5));
    writeFileSync(over[1], randomBytes(200 * 1024));
    writeFileSync(over[2], randomBytes(33_333));

    // the same steps on a local folder (the expected tree) and on the mount
    const steps = (root: string): [string, string][] => [
      ['cp -r of 200 files (40 MiB)', `cp -r ${q(src)} ${q(root)}/tree`],
      ['tar x of 100 files', `tar xf ${q(tar)} -C ${q(root)}`],
      ['mv of a folder of 19 files', `mv ${q(root)}/tree/docs/d3 ${q(root)}/tree/docs/d3-renamed`],
      [
        'cp -r of 50 files, then at once mv of their folder to another parent and name',
        `mkdir ${q(root)}/tree/a && cp -r ${q(fifty)} ${q(root)}/tree/a/b && mv ${q(root)}/tree/a/b ${q(root)}/tree/moved`,
      ],
      [
        'rm of 3 files',
        `rm ${q(root)}/tree/docs/d1/f000.txt ${q(root)}/tree/docs/d3-renamed/f005.txt ${q(root)}/pkg/lib/lib003.js`,
      ],
      [
        'overwrite of 3 files',
        `cp ${q(over[0])} ${q(root)}/tree/docs/d0/f001.txt && cp ${q(over[1])} ${q(root)}/pkg/src/src002.js && cat ${q(over[2])} > ${q(root)}/tree/misc/m4.dat`,
      ],
    ];
    const expected = path.join(ctx.src, 'a-expected');
    mkdirSync(expected);
    for (const [, script] of steps(expected)) await sh(script);

    const proxy = await startFaultProxy({
      target: ctx.server.url,
      seed: FAULT_SEED,
      error500: 0.05,
      throttle429: 0.03,
      resetAfter: 0.04,
      stall: 0.02,
      stallMs: [2000, 4000],
    });
    try {
      const viaProxy = { ...ctx.server, url: proxy.url };
      const opts = { library: 'Faults', extraArgs: ['--timeout', '10'] };
      const t0 = Date.now();
      const m = await mountLibrary(viaProxy, opts);
      for (const [what, script] of steps(m.mnt)) await ok(what, script, figures);
      const un = await m.unmount();
      figures.push(
        `unmount (waits for the uploads): exit ${un.code} after the steps, ${Date.now() - t0} ms from the mount's start`,
      );
      expect(un.code, un.out + un.err).toBe(0);
      const written = { ...proxy.counts };
      figures.push(`faults while writing: ${JSON.stringify(written)}`);

      // directly on the server: the expected tree, each file once with its bytes, nothing else
      const remote = await remoteTree(ctx.api, repo, '/');
      const extra = [...remote.keys()].filter((k) => /SFConflict| \(\d+\)(\.|$)/.test(k));
      expect(extra, 'no duplicates and no conflict copies on the server').toEqual([]);
      expect(await expectRemoteTree(ctx.api, repo, '/', expected)).toBe(200 - 2 + 100 - 1 + 50);

      // a fresh mount under the same faults reads everything back
      // four readers at once, as a file manager's copy would; sorted by path
      const list = `find . -type f -print0 | xargs -0 -P 4 -n 16 sha256sum | sort -k 2`;
      const want = (await sh(`cd ${q(expected)} && ${list}`)).out;
      const m2 = await mountLibrary(viaProxy, opts);
      const back = await ok(
        'read-back of 347 files by sha256sum through a fresh mount',
        `cd ${q(m2.mnt)} && ${list}`,
        figures,
      );
      expect(back.out.split('\n').length).toBe(want.split('\n').length);
      expect(back.out).toBe(want);
      const un2 = await m2.unmount();
      expect(un2.code, un2.out + un2.err).toBe(0);
      const c = proxy.counts;
      figures.push(
        `faults while reading back: ${JSON.stringify(Object.fromEntries(Object.entries(c).map(([k, v]) => [k, v - written[k as keyof typeof written]])))}`,
      );
      // the run proves something only if every kind of fault happened
      for (const k of ['error500', 'throttle429', 'resetAfter', 'stall'] as const) expect(c[k], k).toBeGreaterThan(0);
    } finally {
      console.log(
        `seeded faults (seed ${FAULT_SEED}; 5% 500, 3% 429, 4% reset after the answer, 2% stall 2-4 s; --timeout 10):\n  ${figures.join('\n  ')}`,
      );
      await proxy.close();
    }
  }, 600_000);

  it('a frozen server: cat, ls and stat of what the mount does not know fail within the bound, known listings answer stale, a write waits and reaches the server after SIGCONT', async () => {
    const repo = ctx.repos.Frozen;
    const figures: string[] = [];
    await ctx.api.mkdir(repo, '/b/known', { createParents: true });
    // three levels below what the mount lists: beyond its prefetch of sub-folders
    await ctx.api.mkdir(repo, '/b/far/a/never', { createParents: true });
    const cold = randomBytes(1 * MiB);
    await seed(repo, '/b', { 'cold.bin': cold });
    await seed(repo, '/b/known', { 'k.txt': 'known\n' });
    await seed(repo, '/b/far/a/never', { 'n.txt': 'never listed\n' });
    const m = await mountLibrary(ctx.server, {
      library: 'Frozen',
      dirCacheTime: 1,
      attrTimeout: 1,
      extraArgs: ['--timeout', '3'],
    });
    const M = (p: string) => q(path.join(m.mnt, p));
    await sh(`ls ${M('b')} ${M('b/known')}`);
    await sleep(1500); // past the listing cache time: what follows is served stale, not fresh
    const pid = ctx.server.pid;
    const during = 'written while the server was frozen\n';
    process.kill(pid, 'SIGSTOP'); // connections are accepted, nothing answers
    try {
      const BOUND = 20_000;
      const fails = async (what: string, script: string) => {
        const r = await timed(script, 120_000);
        figures.push(`${what}: exit ${r.code} after ${r.ms} ms (${r.err.trim().split('\n')[0]})`);
        expect(r.code, `${what} must fail`).not.toBe(0);
        expect(r.ms, `${what} must answer within ${BOUND} ms`).toBeLessThan(BOUND);
      };
      await fails('cat of a file never read', `cat ${M('b/cold.bin')} > /dev/null`);
      await fails('ls of a folder never listed', `ls ${M('b/far/a/never')}`);
      await fails('stat of a file in a folder never listed', `stat ${M('b/far/a/never/n.txt')}`);
      const st = await timed(`stat -c %s ${M('b/cold.bin')}`);
      figures.push(
        `stat of a file in a listed folder: exit ${st.code} after ${st.ms} ms (${(st.out || st.err).trim()})`,
      );
      expect(st.ms).toBeLessThan(BOUND);
      const ls = await ok('ls of a folder listed before (stale)', `ls ${M('b/known')}`, figures);
      expect(ls.out.split('\n')).toContain('k.txt');
      await ok('write of a new file', `printf %s ${q(during)} > ${M('b/known/during.txt')}`, figures);
      const back = await ok('cat of that file (from the journal)', `cat ${M('b/known/during.txt')}`, figures);
      expect(back.out).toBe(during);
    } finally {
      process.kill(pid, 'SIGCONT');
      console.log(`frozen server (SIGSTOP; --timeout 3):\n  ${figures.join('\n  ')}`);
    }
    const t0 = Date.now();
    await waitRemoteFile(ctx.api, repo, '/b/known/during.txt', Buffer.from(during), 90_000);
    console.log(`  after SIGCONT the file was on the server within ${Date.now() - t0} ms`);
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect(logLines(m, OFFLINE), m.output()).toHaveLength(1);
    expect(logLines(m, ONLINE), m.output()).toHaveLength(1);
  }, 300_000);

  it('a server frozen in the middle of a sequential read: the read fails within the bound after the stream and a ranged GET time out, and works again after SIGCONT', async () => {
    const repo = ctx.repos.Frozen;
    const big = randomBytes(40 * MiB);
    await seed(repo, '/', { 'big.bin': big });
    const m = await mountLibrary(ctx.server, { library: 'Frozen', extraArgs: ['--timeout', '3'] });
    const file = path.join(m.mnt, 'big.bin');
    // reads 2 MiB, says so, waits for a line on stdin, then reads on to the end (or the first error)
    const reader = spawn(process.execPath, ['-e', SLOW_READER, file], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    reader.stdout!.setEncoding('utf8');
    reader.stdout!.on('data', (d: string) => (out += d));
    const pid = ctx.server.pid;
    let result: { ok: boolean; code?: string; off: number; ms: number };
    try {
      for (let t = 0; !out.includes('ready'); t++) {
        expect(t, 'the reader reads its first 2 MiB').toBeLessThan(300);
        await sleep(100);
      }
      process.kill(pid, 'SIGSTOP');
      reader.stdin!.write('go\n');
      await new Promise<void>((r) => reader.once('exit', () => r()));
      result = JSON.parse(out.split('\n')[1]);
    } finally {
      process.kill(pid, 'SIGCONT');
      if (reader.exitCode === null) reader.kill('SIGKILL');
    }
    console.log(
      `frozen mid-stream (--timeout 3): the read went on to byte ${result.off} of ${big.length} (what the mount had read ahead) and ` +
        `${result.ok ? 'completed' : `failed with ${result.code}`} ${result.ms} ms after the freeze`,
    );
    expect(result.ok, 'a read past what was read ahead cannot succeed while the server is frozen').toBe(false);
    expect(result.code).toBe('EIO');
    expect(result.ms).toBeLessThan(20_000);
    // the server back: the file reads whole again through the same mount
    for (let t = 0; ; t++) {
      const r = await timed(`sha256sum < ${q(file)}`);
      if (r.code === 0) {
        expect(r.out.split(' ')[0]).toBe(sha256(big));
        break;
      }
      expect(t, 'the mount reads again once the server is back').toBeLessThan(30);
      await sleep(1000);
    }
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
  }, 180_000);

  it('a stopped server: a file read before comes from the disk cache, known folders list, unknown content fails fast with EIO, a file written meanwhile is uploaded once the server is back, before unmount returns', async () => {
    const repo = ctx.repos.Stopped;
    const figures: string[] = [];
    await ctx.api.mkdir(repo, '/c/sub', { createParents: true });
    await ctx.api.mkdir(repo, '/c/far/a/never', { createParents: true });
    const warm = randomBytes(12 * MiB);
    await seed(repo, '/c', { 'warm.bin': warm, 'cold.bin': randomBytes(MiB), 'filler.bin': randomBytes(40 * MiB) });
    await seed(repo, '/c/sub', { 's.txt': 'sub\n' });
    await seed(repo, '/c/far/a/never', { 'n.txt': 'never listed\n' });
    const opts = {
      library: 'Stopped',
      dirCacheTime: 1,
      attrTimeout: 1,
      extraArgs: ['--timeout', '3'],
      cacheDir: path.join(scratchDir(), 'cache-stopped'),
    };
    // an earlier mount read the files (so what the mount holds in memory plays no part), then this one starts
    const first = await mountLibrary(ctx.server, opts);
    const F = (p: string) => q(path.join(first.mnt, p));
    expect((await sh(`sha256sum < ${F('c/warm.bin')}`)).out.split(' ')[0]).toBe(sha256(warm));
    await sh(`cat ${F('c/filler.bin')} > /dev/null`);
    expect((await first.unmount()).code).toBe(0);
    const m = await mountLibrary(ctx.server, opts);
    const M = (p: string) => q(path.join(m.mnt, p));
    await sh(`ls ${M('c')} ${M('c/sub')}`);
    await sleep(2000); // listings go past their cache time
    const during = path.join(ctx.src, 'c-during.bin');
    await writeRandom(during, 300 * 1024);
    await ctx.server.halt();
    let back = false;
    try {
      await sh('sync; echo 3 > /proc/sys/vm/drop_caches'); // the kernel's copy is gone: the mount must answer
      const before = await readerStats(m);
      const cat = await ok('cat of a file read before (disk cache)', `sha256sum < ${M('c/warm.bin')}`, figures);
      expect(cat.out.split(' ')[0]).toBe(sha256(warm));
      const after = await readerStats(m);
      // from the disk cache: its 96 chunks of 128 KiB read back, not a byte from the network
      expect(after.diskChunks - before.diskChunks).toBeGreaterThanOrEqual(96);
      expect(after.bytesFetched).toBe(before.bytesFetched);
      const ls = await ok('ls of two known folders', `ls ${M('c')} ${M('c/sub')}`, figures);
      expect(ls.out).toContain('warm.bin');
      expect(ls.out).toContain('s.txt');
      for (const [what, script] of [
        ['cat of a file never read', `cat ${M('c/cold.bin')} > /dev/null`],
        ['ls of a folder never listed', `ls ${M('c/far/a/never')}`],
      ]) {
        const r = await timed(script);
        figures.push(`${what}: exit ${r.code} after ${r.ms} ms (${r.err.trim().split('\n')[0]})`);
        expect(r.code, what).not.toBe(0);
        expect(r.err, what).toMatch(/Input\/output error/);
        expect(r.ms, `${what} fails fast`).toBeLessThan(10_000);
      }
      // a large file read front to back earlier went through the stream, which the disk cache keeps too,
      // and the answer comes at once
      const bigCat = await timed(`cat ${M('c/filler.bin')} > /dev/null`);
      figures.push(
        `cat of a 40 MiB file read sequentially before (on disk): exit ${bigCat.code} after ${bigCat.ms} ms (${bigCat.err.trim().split('\n')[0]})`,
      );
      expect(bigCat.ms).toBeLessThan(10_000);
      expect(bigCat.code, bigCat.err).toBe(0); // whole on disk: the stream waited for the disk when it fell behind
      await ok('cp of a new file', `cp ${q(during)} ${M('c/sub/during.bin')}`, figures);
      await ctx.server.restart({ samePort: true });
      back = true;
    } finally {
      if (!back) await ctx.server.restart({ samePort: true });
      console.log(`stopped server (connection refused; --timeout 3):\n  ${figures.join('\n  ')}`);
    }
    const t0 = Date.now();
    const un = await m.unmount();
    console.log(`  unmount after the restart: exit ${un.code} after ${Date.now() - t0} ms`);
    expect(un.code, un.out + un.err).toBe(0);
    // uploaded before unmount returned: no waiting here
    expect((await remoteSha(ctx.api, repo, '/c/sub/during.bin')).sha).toBe(await sha256File(during));
    expect(logLines(m, OFFLINE), m.output()).toHaveLength(1);
    expect(logLines(m, ONLINE), m.output()).toHaveLength(1);
  }, 300_000);
});
