// Ordinary tools against a real mount of `seafs serve`: ls, stat, cat, cp,
// dd, >>, truncate, rm, mkdir, rmdir, find, du. Every workload that changes a
// file is replayed on a local copy, and the server's copy (read through the
// API, not through the mount) must have the same sha256.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { remoteExists, remoteNames, sha256File, waitRemoteExists, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, type Mount } from '../helpers/mount.js';

const alive = (m: Mount) => m.child.exitCode === null && m.child.signalCode === null;
import { uploadTo } from '../helpers/server.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Tools']);

describe('ordinary tools on a mounted library', () => {
  let m: Mount;
  let repo: string;
  let L: string; // local mirror of what the mount should hold
  beforeAll(async () => {
    repo = ctx.repos.Tools;
    m = await mountLibrary(ctx.server, { library: 'Tools' });
    L = path.join(ctx.src, 'mirror');
    mkdirSync(L);
  });
  const M = (p = '') => path.join(m.mnt, p);

  it('cp of a 0-byte and a small file; ls, stat and cat show them; the API has them', async () => {
    writeFileSync(path.join(L, 'empty'), '');
    writeFileSync(path.join(L, 'small.txt'), 'hello from the e2e suite\n'.repeat(10));
    await sh(`cp ${q(L)}/empty ${q(L)}/small.txt ${q(M())}/`);
    const ls = await sh(`ls -la ${q(M())}`);
    expect(ls.out).toMatch(/ 0 [A-Z][a-z]{2} .* empty\n/);
    expect(ls.out).toMatch(/ 250 [A-Z][a-z]{2} .* small\.txt\n/);
    expect((await sh(`ls -1 ${q(M())}`)).out).toBe('empty\nsmall.txt\n');
    expect((await sh(`stat -c '%s %F' ${q(M('small.txt'))} ${q(M('empty'))}`)).out).toBe(
      '250 regular file\n0 regular empty file\n',
    );
    expect((await sh(`cat ${q(M('small.txt'))}`)).out).toBe('hello from the e2e suite\n'.repeat(10));
    expect((await sh(`cat ${q(M('empty'))}`)).out).toBe('');
    await waitRemoteFile(ctx.api, repo, '/empty', path.join(L, 'empty'));
    await waitRemoteFile(ctx.api, repo, '/small.txt', path.join(L, 'small.txt'));
  });

  it('cp of 100 MiB: the mount and the API return the same bytes', async () => {
    const big = path.join(ctx.src, 'big.bin');
    await writeRandom(big, 100 * 1024 * 1024);
    const t0 = Date.now();
    await sh(`cp ${q(big)} ${q(M('big.bin'))}`);
    const cpMs = Date.now() - t0;
    expect((await sh(`stat -c %s ${q(M('big.bin'))}`)).out.trim()).toBe(String(100 * 1024 * 1024));
    expect((await sh(`sha256sum < ${q(M('big.bin'))}`)).out.split(' ')[0]).toBe(await sha256File(big));
    const t1 = Date.now();
    await waitRemoteFile(ctx.api, repo, '/big.bin', big, 120_000);
    console.log(
      `cp 100 MiB: ${cpMs} ms to close, ${Date.now() - t1} ms more until it was on the server (after a read back)`,
    );
    // du reports blocks for what the mount holds
    const du = Number((await sh(`du -sk ${q(M('big.bin'))}`)).out.split('\t')[0]);
    expect(du).toBeGreaterThanOrEqual(100 * 1024);
  });

  it('dd with seek and conv=notrunc writes in place, inside the file and past its end', async () => {
    await writeRandom(path.join(L, 'rand.bin'), 3 * 1024 * 1024 + 123);
    await sh(`cp ${q(L)}/rand.bin ${q(M())}/`);
    await waitRemoteFile(ctx.api, repo, '/rand.bin', path.join(L, 'rand.bin'));
    await writeRandom(path.join(ctx.src, 'patch'), 10_000);
    // the same three dd runs on the local mirror and on the mount
    for (const dir of [L, M()]) {
      await sh(
        [
          `dd if=${q(ctx.src)}/patch of=${q(dir)}/rand.bin bs=1000 seek=1500 count=10 conv=notrunc status=none`,
          `dd if=${q(ctx.src)}/patch of=${q(dir)}/rand.bin bs=1 seek=7 count=3 conv=notrunc status=none`,
          `dd if=${q(ctx.src)}/patch of=${q(dir)}/rand.bin bs=4096 seek=1000 count=2 conv=notrunc status=none`,
        ].join(' && '),
      );
    }
    expect((await sh(`stat -c %s ${q(M('rand.bin'))}`)).out.trim()).toBe(String(1002 * 4096));
    expect((await sh(`sha256sum < ${q(M('rand.bin'))}`)).out.split(' ')[0]).toBe(
      await sha256File(path.join(L, 'rand.bin')),
    );
    await waitRemoteFile(ctx.api, repo, '/rand.bin', path.join(L, 'rand.bin'));
  });

  it('>> appends to an existing file, also after its upload finished', async () => {
    await waitRemoteFile(ctx.api, repo, '/small.txt', path.join(L, 'small.txt'));
    for (const dir of [L, M()])
      await sh(`echo appended line >> ${q(dir)}/small.txt && printf 'x%.0s' {1..5000} >> ${q(dir)}/small.txt`);
    expect((await sh(`tail -c 5 ${q(M('small.txt'))}`)).out).toBe('xxxxx');
    await waitRemoteFile(ctx.api, repo, '/small.txt', path.join(L, 'small.txt'));
    // and an append right after another one, while the first may still be uploading
    for (const dir of [L, M()]) await sh(`for i in 1 2 3 4 5; do echo "line $i" >> ${q(dir)}/small.txt; done`);
    await waitRemoteFile(ctx.api, repo, '/small.txt', path.join(L, 'small.txt'));
  });

  it('truncate shrinks, grows (zeros) and empties files', async () => {
    copyFileSync(path.join(L, 'rand.bin'), path.join(L, 'trunc.bin'));
    await sh(`cp ${q(L)}/trunc.bin ${q(M())}/`);
    for (const dir of [L, M()])
      await sh(`truncate -s 1000000 ${q(dir)}/trunc.bin && truncate -s +70000 ${q(dir)}/trunc.bin`);
    expect((await sh(`stat -c %s ${q(M('trunc.bin'))}`)).out.trim()).toBe('1070000');
    expect((await sh(`tail -c 70000 ${q(M('trunc.bin'))} | tr -d '\\0' | wc -c`)).out.trim()).toBe('0');
    await waitRemoteFile(ctx.api, repo, '/trunc.bin', path.join(L, 'trunc.bin'));
    for (const dir of [L, M()]) await sh(`truncate -s 0 ${q(dir)}/trunc.bin`);
    expect((await sh(`stat -c %s ${q(M('trunc.bin'))}`)).out.trim()).toBe('0');
    await waitRemoteFile(ctx.api, repo, '/trunc.bin', path.join(L, 'trunc.bin'));
  });

  it('mkdir -p, find and du see the tree; rmdir of a non-empty folder is ENOTEMPTY', async () => {
    await sh(`mkdir -p ${q(M('a/b/c'))} ${q(M('a/d'))}`);
    await sh(`cp ${q(L)}/small.txt ${q(M('a/b/c'))}/ && cp ${q(L)}/rand.bin ${q(M('a/d'))}/ && : > ${q(M('a/zero'))}`);
    expect((await sh(`cd ${q(M())} && find a | sort`)).out).toBe(
      ['a', 'a/b', 'a/b/c', 'a/b/c/small.txt', 'a/d', 'a/d/rand.bin', 'a/zero', ''].join('\n'),
    );
    expect((await sh(`cd ${q(M())} && find a -type f -size +1M`)).out).toBe('a/d/rand.bin\n');
    expect((await sh(`cd ${q(M())} && find a -type d -empty`)).out).toBe('');
    // apparent sizes of the files, and blocks for the whole tree
    const duA = (await sh(`cd ${q(M())} && du -ab a`)).out.split('\n');
    const size = (f: string) => sh(`stat -c %s ${q(f)}`).then((r) => r.out.trim());
    expect(duA).toEqual(
      expect.arrayContaining([
        `${await size(path.join(L, 'small.txt'))}\ta/b/c/small.txt`,
        `${await size(path.join(L, 'rand.bin'))}\ta/d/rand.bin`,
        '0\ta/zero',
      ]),
    );
    expect(Number((await sh(`du -sk ${q(M('a'))}`)).out.split('\t')[0])).toBeGreaterThanOrEqual(4000);

    const rd = await sh(`rmdir ${q(M('a/b'))}`, { allowFail: true });
    expect(rd.code).not.toBe(0);
    expect(rd.err).toMatch(/Directory not empty/);
    // uploads run in the background after close (a new file waits a moment for a rename)
    await waitRemoteFile(ctx.api, repo, '/a/b/c/small.txt', path.join(L, 'small.txt'));
    expect(await remoteNames(ctx.api, repo, '/a/b/c')).toEqual(['small.txt']);
    await waitRemoteFile(ctx.api, repo, '/a/d/rand.bin', path.join(L, 'rand.bin'));
    await waitRemoteFile(ctx.api, repo, '/a/zero', Buffer.alloc(0));
    expect(await remoteNames(ctx.api, repo, '/a')).toEqual(['b', 'd', 'zero']);
    // rmdir of an empty folder works
    await sh(`mkdir ${q(M('a/empty'))} && rmdir ${q(M('a/empty'))}`);
    await waitRemoteExists(ctx.api, repo, '/a/empty', false);
  });

  it('mount and df show the seafs name and the quota', async () => {
    expect((await sh(`findmnt -n -o SOURCE,FSTYPE ${q(M())}`)).out.trim()).toMatch(/^seafs:Tools\s+fuse\.seafs$/);
    const df = (await sh(`df -B1 --output=source,size,used ${q(M())} | tail -1`)).out.trim().split(/\s+/);
    expect(df[0]).toBe('seafs:Tools');
    expect(Number(df[1])).toBeGreaterThan(0);
  });

  it('tools get the right errors, and the mount stays alive after each', async () => {
    const cases: [string, RegExp][] = [
      [`cat ${q(M('missing.txt'))}`, /No such file or directory/],
      [`ls ${q(M('missing-dir'))}`, /No such file or directory/],
      [`mkdir ${q(M('big.bin'))}`, /File exists/],
      [`cat ${q(M('big.bin/x'))}`, /Not a directory/],
      [`cat ${q(M())}`, /Is a directory/],
      [`rmdir ${q(M('big.bin'))}`, /Not a directory/],
      [`rm ${q(M())}/.`, /refusing to remove|Is a directory/],
      [`touch ${q(M('n'.repeat(300)))}`, /File name too long/],
      [`mv ${q(M('missing.txt'))} ${q(M('other.txt'))}`, /No such file or directory/],
      [`ln -s big.bin ${q(M('link'))}`, /not implemented|not permitted|not supported/i],
      [`ln ${q(M('big.bin'))} ${q(M('hardlink'))}`, /not implemented|not permitted|not supported/i],
      [`mkfifo ${q(M('fifo'))}`, /not implemented|not permitted|not supported/i],
    ];
    for (const [cmd, err] of cases) {
      const r = await sh(cmd, { allowFail: true });
      expect(r.code, `${cmd} must fail`).not.toBe(0);
      expect(r.err, cmd).toMatch(err);
    }
    expect((await sh(`stat -c %s ${q(M('big.bin'))}`)).out.trim()).toBe(String(100 * 1024 * 1024));
    expect(alive(m)).toBe(true);
  });

  it('a second, cold mount reads ranges of the 100 MiB file correctly (dd skip, tail, head)', async () => {
    const big = path.join(ctx.src, 'big.bin');
    const cold = await mountLibrary(ctx.server, { library: 'Tools' });
    const C = path.join(cold.mnt, 'big.bin');
    const parts = [
      [
        `dd if=${q(C)} bs=4096 skip=12345 count=3 status=none`,
        `dd if=${q(big)} bs=4096 skip=12345 count=3 status=none`,
      ],
      [`tail -c 100000 ${q(C)}`, `tail -c 100000 ${q(big)}`],
      [`head -c 777 ${q(C)}`, `head -c 777 ${q(big)}`],
      [`dd if=${q(C)} bs=1M skip=50 count=5 status=none`, `dd if=${q(big)} bs=1M skip=50 count=5 status=none`],
    ];
    for (const [onMount, local] of parts) {
      const a = (await sh(`${onMount} | sha256sum`)).out;
      const b = (await sh(`${local} | sha256sum`)).out;
      expect(a, onMount).toBe(b);
    }
    const t0 = Date.now();
    expect((await sh(`sha256sum < ${q(C)}`)).out.split(' ')[0]).toBe(await sha256File(big));
    console.log(`cold sequential read of 100 MiB through the mount: ${Date.now() - t0} ms`);
    expect((await cold.unmount()).code).toBe(0);
  });

  it('small reads of the 100 MiB file on a fresh mount make the server read only a little of it', async () => {
    const rchar = async () => Number(/rchar: (\d+)/.exec((await sh(`cat /proc/${ctx.server.pid}/io`)).out)![1]);
    const fresh = await mountLibrary(ctx.server, { library: 'Tools' });
    const F = path.join(fresh.mnt, 'big.bin');
    const before = await rchar();
    await sh(
      `head -c 4096 ${q(F)} > /dev/null && dd if=${q(F)} bs=4096 skip=20000 count=1 status=none > /dev/null && tail -c 100 ${q(F)} > /dev/null`,
    );
    const read = (await rchar()) - before;
    console.log(`three small reads of a 100 MiB file: the server read ${(read / 1048576).toFixed(1)} MiB`);
    expect(read).toBeLessThan(30 * 1024 * 1024);
    expect((await fresh.unmount()).code).toBe(0);
  });

  it('40 files copied in parallel (xargs -P 8) all reach the server intact', async () => {
    const P = path.join(ctx.src, 'par');
    mkdirSync(P);
    for (let i = 0; i < 40; i++) await writeRandom(path.join(P, `p${i}.bin`), 10_000 + i * 37_000);
    await sh(`mkdir ${q(M('par'))} && cd ${q(P)} && ls | xargs -P 8 -I{} cp {} ${q(M('par'))}/{}`);
    expect((await sh(`ls ${q(M('par'))} | wc -l`)).out.trim()).toBe('40');
    for (let i = 0; i < 40; i++) await waitRemoteFile(ctx.api, repo, `/par/p${i}.bin`, path.join(P, `p${i}.bin`));
  });

  it('ls -l and find of a 1,000-entry folder made through the API, on a fresh mount', async () => {
    await ctx.api.mkdir(repo, '/thousand');
    const link = await ctx.api.uploadLink(repo, '/thousand');
    for (let b = 0; b < 10; b++) {
      const files: Record<string, string> = {};
      for (let i = b * 100; i < b * 100 + 100; i++) files[`e${String(i).padStart(4, '0')}.txt`] = `entry ${i}\n`;
      const r = await uploadTo(link, '/thousand', files);
      expect(r.status, r.text).toBe(200);
    }
    const fresh = await mountLibrary(ctx.server, { library: 'Tools' });
    const D = path.join(fresh.mnt, 'thousand');
    const t0 = Date.now();
    const ls = (await sh(`ls -l ${q(D)}`)).out.split('\n').filter((l) => l.startsWith('-'));
    const coldMs = Date.now() - t0;
    expect(ls.length).toBe(1000);
    expect(ls[999]).toMatch(/ 10 [A-Z][a-z]{2} .* e0999\.txt$/);
    const t1 = Date.now();
    await sh(`ls -l ${q(D)} > /dev/null`);
    const warmMs = Date.now() - t1;
    expect((await sh(`find ${q(D)} -type f | wc -l`)).out.trim()).toBe('1000');
    expect((await sh(`cat ${q(D)}/e0500.txt`)).out).toBe('entry 500\n');
    const t2 = Date.now();
    await sh(`rm -r ${q(D)}`);
    const rmMs = Date.now() - t2;
    console.log(
      `ls -l of 1,000 entries on a fresh mount: ${coldMs} ms cold, ${warmMs} ms warm; rm -r of them: ${rmMs} ms`,
    );
    await waitRemoteExists(ctx.api, repo, '/thousand', false);
    expect((await fresh.unmount()).code).toBe(0);
  });

  it('an encrypted library: ranged reads are right though the server ignores Range', async () => {
    const enc = (await ctx.api.createLibrary('Secret', { password: 'lib-pw-123' })).repo_id;
    await ctx.api.unlockLibrary(enc, 'lib-pw-123');
    const f = path.join(ctx.src, 'secret.bin');
    await writeRandom(f, 6 * 1024 * 1024 + 11);
    await ctx.api.upload(await ctx.api.uploadLink(enc, '/'), '/', f, 'secret.bin');
    const e = await mountLibrary(ctx.server, { library: 'Secret', libraryPassword: 'lib-pw-123' });
    const S = path.join(e.mnt, 'secret.bin');
    // the first read starts mid-file: the whole-file answer must be skipped to the offset
    for (const [skip, count] of [
      [777, 3],
      [0, 1],
      [1600, 100],
      [1536, 2],
    ]) {
      const a = (await sh(`dd if=${q(S)} bs=4096 skip=${skip} count=${count} status=none | sha256sum`)).out;
      const b = (await sh(`dd if=${q(f)} bs=4096 skip=${skip} count=${count} status=none | sha256sum`)).out;
      expect(a, `dd skip=${skip} count=${count}`).toBe(b);
    }
    expect((await sh(`sha256sum < ${q(S)}`)).out.split(' ')[0]).toBe(await sha256File(f));
    // and writes to it land encrypted-side like any other
    await sh(`printf 'appended' >> ${q(S)}`);
    await sh(`cat ${q(f)} > ${q(ctx.src)}/secret2.bin && printf 'appended' >> ${q(ctx.src)}/secret2.bin`);
    await waitRemoteFile(ctx.api, enc, '/secret.bin', path.join(ctx.src, 'secret2.bin'));
    expect((await e.unmount()).code).toBe(0);
  });

  it("names with spaces, unicode, ', %, #, ?, &, + and leading dashes survive cp, mv, mkdir and the API", async () => {
    const names = [
      'with space.txt',
      'été 日本語 🚀.md',
      "quote's.txt",
      '100% #1 ?&=+.txt',
      '-dash',
      'a;b,c~!@$^().txt',
      '  lead-trail  ',
    ];
    const dirName = 'dir ü #%';
    const N = path.join(ctx.src, 'names');
    mkdirSync(N);
    await sh(`mkdir ${q(M(dirName))}`);
    for (const [i, n] of names.entries()) {
      writeFileSync(path.join(N, n), `content of ${n} ${i}\n`);
      await run('cp', ['--', path.join(N, n), M(path.join(dirName, n))]);
    }
    expect((await run('ls', ['-A', M(dirName)])).out.split('\n').filter(Boolean).sort()).toEqual([...names].sort());
    for (const n of names) await waitRemoteFile(ctx.api, repo, `/${dirName}/${n}`, path.join(N, n));
    expect(await remoteNames(ctx.api, repo, `/${dirName}`)).toEqual([...names].sort());
    // rename each to another awkward name, and the folder too
    for (const n of names) await run('mv', ['--', M(path.join(dirName, n)), M(path.join(dirName, `renamed ${n} ✓`))]);
    await run('mv', ['--', M(dirName), M(`${dirName} → moved`)]);
    const want = names.map((n) => `renamed ${n} ✓`).sort();
    expect((await run('ls', ['-A', M(`${dirName} → moved`)])).out.split('\n').filter(Boolean).sort()).toEqual(want);
    for (const n of names) await waitRemoteFile(ctx.api, repo, `/${dirName} → moved/renamed ${n} ✓`, path.join(N, n));
    expect(await remoteNames(ctx.api, repo, `/${dirName} → moved`)).toEqual(want);
    expect(await remoteExists(ctx.api, repo, `/${dirName}`)).toBe(false);
  });

  it('a new file whose name holds a double quote lands under that name on the server', async () => {
    const name = 'say "hi".txt';
    await run('bash', ['-c', 'printf quoted > "$1"', '_', M(name)]);
    await waitRemoteFile(ctx.api, repo, `/${name}`, Buffer.from('quoted'), 15_000);
    expect((await remoteNames(ctx.api, repo, '/'))!.filter((n) => n.startsWith('say '))).toEqual([name]);
    // overwritten in place, appended to, then replaced by a rename (safe save) and a dirty rename
    await run('bash', ['-c', 'printf rewritten > "$1" && printf +more >> "$1"', '_', M(name)]);
    await waitRemoteFile(ctx.api, repo, `/${name}`, Buffer.from('rewritten+more'), 15_000);
    await run('bash', ['-c', 'printf saved > "$1.tmp" && mv "$1.tmp" "$1"', '_', M(name)]);
    await waitRemoteFile(ctx.api, repo, `/${name}`, Buffer.from('saved'), 15_000);
    await run('bash', ['-c', 'printf fresh > "$1" && mv "$1" "$2"', '_', M('plain-new.txt'), M('say "bye".txt')]);
    await waitRemoteFile(ctx.api, repo, '/say "bye".txt', Buffer.from('fresh'), 15_000);
    expect((await remoteNames(ctx.api, repo, '/'))!.filter((n) => /^say |plain-new|%22/.test(n))).toEqual([
      'say "bye".txt',
      name,
    ]);
  });

  it('random reads (pread at random offsets and lengths) of files uploaded through the API match the source', async () => {
    const sizes = [131_071, 131_072, 131_073, 1_048_575, 1_048_576, 1_048_577, 40 * 1024 * 1024 + 3];
    const R = path.join(ctx.src, 'reads');
    mkdirSync(R);
    await ctx.api.mkdir(repo, '/reads');
    const link = await ctx.api.uploadLink(repo, '/reads');
    for (const n of sizes) {
      await writeRandom(path.join(R, `s${n}`), n);
      await ctx.api.upload(link, '/reads', path.join(R, `s${n}`), `s${n}`);
    }
    const fresh = await mountLibrary(ctx.server, { library: 'Tools' });
    for (const n of sizes) {
      expect(
        (await sh(`sha256sum < ${q(path.join(fresh.mnt, 'reads', `s${n}`))}`)).out.split(' ')[0],
        `cat of ${n} bytes`,
      ).toBe(await sha256File(path.join(R, `s${n}`)));
    }
    // 400 preads at random offsets into the 40 MiB file, on a mount that has not read it yet
    const other = await mountLibrary(ctx.server, { library: 'Tools' });
    const big = `s${sizes[sizes.length - 1]}`;
    const script = `
      const fs = require('fs');
      const [a, b] = process.argv.slice(1);
      const fa = fs.openSync(a, 'r'), fb = fs.openSync(b, 'r');
      const size = fs.fstatSync(fb).size;
      let seed = 12345; const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
      let bad = 0;
      for (let i = 0; i < 400; i++) {
        const off = Math.floor(rnd() * (size + 1000));
        const len = 1 + Math.floor(rnd() * 300000);
        const x = Buffer.alloc(len), y = Buffer.alloc(len);
        const nx = fs.readSync(fa, x, 0, len, off), ny = fs.readSync(fb, y, 0, len, off);
        if (nx !== ny || !x.subarray(0, nx).equals(y.subarray(0, ny))) { bad++; console.log('mismatch at', off, len, nx, ny); }
      }
      console.log('bad', bad);`;
    const r = await run(process.execPath, ['-e', script, path.join(other.mnt, 'reads', big), path.join(R, big)]);
    expect(r.out.trim().split('\n').slice(-1)[0]).toBe('bad 0');
    expect((await other.unmount()).code).toBe(0);
    expect((await fresh.unmount()).code).toBe(0);
  });

  it('a path 30 folders deep (about 1,900 characters) works through the mount and the API', async () => {
    const parts = Array.from({ length: 30 }, (_, i) => `level-${String(i).padStart(2, '0')}-${'x'.repeat(52)}`);
    const rel = parts.join('/');
    await run('mkdir', ['-p', M(rel)]);
    await run('bash', ['-c', 'printf deep > "$1/leaf.txt"', '_', M(rel)]);
    expect((await run('cat', [M(`${rel}/leaf.txt`)])).out).toBe('deep');
    await waitRemoteFile(ctx.api, repo, `/${rel}/leaf.txt`, Buffer.from('deep'));
    await run('rm', ['-r', M(parts[0])]);
    await waitRemoteExists(ctx.api, repo, `/${parts[0]}`, false);
  });

  it('a file written through a shared mmap, and one read while another process still writes it', async () => {
    const mm = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
m = mmap.mmap(fd, 1 << 20)
for i in range(0, 1 << 20, 4096):
    m[i:i + 8] = (i // 4096).to_bytes(8, 'little')
m.flush()
m.close()
os.close(fd)
`;
    await run('python3', ['-c', mm, M('mapped.bin')]);
    await run('python3', ['-c', mm, path.join(ctx.src, 'mapped.bin')]);
    expect((await sh(`cmp ${q(M('mapped.bin'))} ${q(ctx.src)}/mapped.bin && echo same`)).out).toBe('same\n');
    await waitRemoteFile(ctx.api, repo, '/mapped.bin', path.join(ctx.src, 'mapped.bin'));

    // a slow writer keeps the file open; readers see each line as soon as it is written
    const writer = `
const fs = require('fs');
const fd = fs.openSync(process.argv[1], 'w');
let i = 0;
const t = setInterval(() => {
  fs.writeSync(fd, 'line ' + i + '\\n');
  if (++i === 20) { clearInterval(t); fs.closeSync(fd); }
}, 50);`;
    const w = run(process.execPath, ['-e', writer, M('growing.log')]);
    let lastSeen = 0;
    let grew = 0;
    const stopAt = Date.now() + 30_000;
    while (lastSeen < 20 && Date.now() < stopAt) {
      const r = await sh(`cat ${q(M('growing.log'))} 2>/dev/null | wc -l`, { allowFail: true });
      const n = Number(r.out.trim());
      expect(n).toBeGreaterThanOrEqual(lastSeen);
      if (n > lastSeen) grew++;
      lastSeen = n;
      if ((await Promise.race([w.then(() => 'done'), Promise.resolve('running')])) === 'done' && n === 20) break;
    }
    await w;
    expect(grew, 'the line count grew while the writer ran').toBeGreaterThan(1);
    const want = Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join('');
    expect((await sh(`cat ${q(M('growing.log'))}`)).out).toBe(want);
    await waitRemoteFile(ctx.api, repo, '/growing.log', Buffer.from(want));
  });

  it('rm and rm -r remove files and trees from the server', async () => {
    await sh(`rm ${q(M('a/zero'))}`);
    expect((await sh(`ls ${q(M('a'))}`)).out).toBe('b\nd\n');
    await waitRemoteExists(ctx.api, repo, '/a/zero', false);
    const gone = await sh(`cat ${q(M('a/zero'))}`, { allowFail: true });
    expect(gone.err).toMatch(/No such file or directory/);

    await sh(`rm -r ${q(M('a'))}`);
    expect((await sh(`ls ${q(M())}`)).out).not.toMatch(/^a$/m);
    await waitRemoteExists(ctx.api, repo, '/a', false);
    // a file removed right after it was written never shows up (or is gone) on the server
    await sh(`cp ${q(L)}/rand.bin ${q(M('short-lived.bin'))} && rm ${q(M('short-lived.bin'))}`);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await remoteExists(ctx.api, repo, '/short-lived.bin')).toBe(false);
  });
});
