// mv on a real mount: rename in place, move between folders, replace an
// existing file (no "name (1)" left behind), move a folder with content, and
// an editor's safe save (temp file, fsync, rename over the original). The
// server's state is read through the API after each workload.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectRemoteTree, remoteNames, waitRemoteExists, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, type Mount } from '../helpers/mount.js';
import { setupE2E, writeRandom } from '../helpers/e2e-fixture.js';

const ctx = setupE2E(['Rename']);

/** Waits until the folder's names on the server are exactly `want`. */
async function waitNames(repo: string, dir: string, want: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let got: string[] | null = null;
  while (Date.now() < deadline) {
    got = await remoteNames(ctx.api, repo, dir);
    if (JSON.stringify(got) === JSON.stringify([...want].sort())) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(got, `names in ${dir} on the server`).toEqual([...want].sort());
}

describe('mv and safe saves on a mounted library', () => {
  let m: Mount;
  let repo: string;
  let S: string;
  beforeAll(async () => {
    repo = ctx.repos.Rename;
    m = await mountLibrary(ctx.server, { library: 'Rename' });
    S = path.join(ctx.src, 's');
    mkdirSync(S);
    writeFileSync(path.join(S, 'one.txt'), 'one\n');
    writeFileSync(path.join(S, 'two.txt'), 'two two\n');
    await writeRandom(path.join(S, 'blob.bin'), 2 * 1024 * 1024 + 5);
  });
  const M = (p = '') => path.join(m.mnt, p);

  it('renames a file in place, uploaded or still dirty', async () => {
    await sh(`cp ${q(S)}/one.txt ${q(M('one.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/one.txt', path.join(S, 'one.txt'));
    await sh(`mv ${q(M('one.txt'))} ${q(M('uno.txt'))}`);
    expect((await sh(`cat ${q(M('uno.txt'))}`)).out).toBe('one\n');
    // a file renamed right after close(), while its upload may be under way
    await sh(`cp ${q(S)}/blob.bin ${q(M('blob.bin'))} && mv ${q(M('blob.bin'))} ${q(M('blob-renamed.bin'))}`);
    expect((await sh(`ls ${q(M())}`)).out).toBe('blob-renamed.bin\nuno.txt\n');
    await waitRemoteFile(ctx.api, repo, '/uno.txt', path.join(S, 'one.txt'));
    await waitRemoteFile(ctx.api, repo, '/blob-renamed.bin', path.join(S, 'blob.bin'));
    await waitNames(repo, '/', ['blob-renamed.bin', 'uno.txt']);
  });

  it('moves files between folders, with and without a rename', async () => {
    await sh(`mkdir -p ${q(M('x/y'))} ${q(M('z'))}`);
    await sh(`mv ${q(M('uno.txt'))} ${q(M('x/y'))}/ && mv ${q(M('blob-renamed.bin'))} ${q(M('z/blob.bin'))}`);
    expect((await sh(`ls -R ${q(M())}`)).out).not.toMatch(/uno\.txt[\s\S]*uno\.txt/);
    await waitNames(repo, '/', ['x', 'z']);
    await waitRemoteFile(ctx.api, repo, '/x/y/uno.txt', path.join(S, 'one.txt'));
    await waitRemoteFile(ctx.api, repo, '/z/blob.bin', path.join(S, 'blob.bin'));
    // back up, into the root, under a new name
    await sh(`mv ${q(M('x/y/uno.txt'))} ${q(M('one-again.txt'))}`);
    await waitNames(repo, '/x/y', []);
    await waitRemoteFile(ctx.api, repo, '/one-again.txt', path.join(S, 'one.txt'));
  });

  it('mv onto an existing file replaces it, leaving no "name (1)"', async () => {
    await sh(`cp ${q(S)}/two.txt ${q(M('two.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/two.txt', path.join(S, 'two.txt'));
    // same folder: one-again.txt replaces two.txt
    await sh(`mv ${q(M('one-again.txt'))} ${q(M('two.txt'))}`);
    expect((await sh(`cat ${q(M('two.txt'))}`)).out).toBe('one\n');
    await waitNames(repo, '/', ['two.txt', 'x', 'z']);
    await waitRemoteFile(ctx.api, repo, '/two.txt', path.join(S, 'one.txt'));
    // other folder: z/blob.bin replaces x/two.txt
    await sh(`cp ${q(S)}/two.txt ${q(M('x/two.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/x/two.txt', path.join(S, 'two.txt'));
    await sh(`mv -f ${q(M('z/blob.bin'))} ${q(M('x/two.txt'))}`);
    await waitNames(repo, '/x', ['two.txt', 'y']);
    await waitNames(repo, '/z', []);
    await waitRemoteFile(ctx.api, repo, '/x/two.txt', path.join(S, 'blob.bin'));
    // a dirty file (just written) onto an uploaded one, then at once onto another
    await sh(`printf 'fresh\\n' > ${q(M('fresh.txt'))} && mv ${q(M('fresh.txt'))} ${q(M('two.txt'))}`);
    await waitNames(repo, '/', ['two.txt', 'x', 'z']);
    await waitRemoteFile(ctx.api, repo, '/two.txt', Buffer.from('fresh\n'));
  });

  it('moves a folder with content, renames it in place and into another folder', async () => {
    const T = path.join(ctx.src, 'tree');
    mkdirSync(path.join(T, 'sub/deeper'), { recursive: true });
    writeFileSync(path.join(T, 'a.txt'), 'a\n');
    writeFileSync(path.join(T, 'sub/b.txt'), 'b\n');
    writeFileSync(path.join(T, 'sub/deeper/c.txt'), 'c\n'.repeat(1000));
    mkdirSync(path.join(T, 'sub/empty'));
    await sh(`cp -r ${q(T)} ${q(M('tree'))}`);
    await sh(`mv ${q(M('tree'))} ${q(M('tree2'))}`);
    expect((await sh(`cd ${q(M('tree2'))} && find . | sort`)).out).toBe(
      ['.', './a.txt', './sub', './sub/b.txt', './sub/deeper', './sub/deeper/c.txt', './sub/empty', ''].join('\n'),
    );
    await waitNames(repo, '/', ['tree2', 'two.txt', 'x', 'z']);
    // the small files were still waiting for their upload when the folder moved: they follow it
    await waitRemoteFile(ctx.api, repo, '/tree2/a.txt', Buffer.from('a\n'));
    await waitRemoteFile(ctx.api, repo, '/tree2/sub/b.txt', Buffer.from('b\n'));
    await expectRemoteTree(ctx.api, repo, '/tree2', T);
    await sh(`mv ${q(M('tree2'))} ${q(M('x/y'))}/`);
    await waitNames(repo, '/', ['two.txt', 'x', 'z']);
    await expectRemoteTree(ctx.api, repo, '/x/y/tree2', T);
    // a folder renamed onto an existing empty folder replaces it (POSIX rename)
    await sh(`mv -T ${q(M('x/y/tree2'))} ${q(M('z'))}`);
    await waitNames(repo, '/', ['two.txt', 'x', 'z']);
    await expectRemoteTree(ctx.api, repo, '/z', T);
    // ... and onto a non-empty one it is refused
    await sh(`mkdir -p ${q(M('full'))} && echo x > ${q(M('full/f'))}`);
    const r = await sh(`mv -T ${q(M('z'))} ${q(M('full'))}`, { allowFail: true });
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/Directory not empty|File exists/);
    await expectRemoteTree(ctx.api, repo, '/z', T);
  });

  it('a 60 MiB file moved to another folder right after cp (its upload under way) arrives whole under the new name', async () => {
    const f = path.join(ctx.src, 'sixty.bin');
    await writeRandom(f, 60 * 1024 * 1024);
    await sh(`mkdir -p ${q(M('inflight/a'))} ${q(M('inflight/b'))}`);
    await sh(
      `cp ${q(f)} ${q(M('inflight/a/big.bin'))} && mv ${q(M('inflight/a/big.bin'))} ${q(M('inflight/b/moved.bin'))}`,
    );
    // and a second one renamed twice in a row
    await sh(
      `cp ${q(f)} ${q(M('inflight/a/two.bin'))} && mv ${q(M('inflight/a/two.bin'))} ${q(M('inflight/a/two-1.bin'))} && mv ${q(M('inflight/a/two-1.bin'))} ${q(M('inflight/two-2.bin'))}`,
    );
    await waitRemoteFile(ctx.api, repo, '/inflight/b/moved.bin', f, 120_000);
    await waitRemoteFile(ctx.api, repo, '/inflight/two-2.bin', f, 120_000);
    await waitNames(repo, '/inflight/a', []);
    await waitNames(repo, '/inflight', ['a', 'b', 'two-2.bin']);
    await waitNames(repo, '/inflight/b', ['moved.bin']);
  });

  it('a rename that only changes case, and a swap of two names through a third', async () => {
    await sh(`printf lower > ${q(M('case.txt'))} && printf other > ${q(M('other.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/case.txt', Buffer.from('lower'));
    await sh(`mv ${q(M('case.txt'))} ${q(M('CASE.txt'))}`);
    expect((await sh(`cat ${q(M('CASE.txt'))}`)).out).toBe('lower');
    await waitRemoteFile(ctx.api, repo, '/CASE.txt', Buffer.from('lower'));
    await sh(
      `mv ${q(M('CASE.txt'))} ${q(M('tmp.swap'))} && mv ${q(M('other.txt'))} ${q(M('CASE.txt'))} && mv ${q(M('tmp.swap'))} ${q(M('other.txt'))}`,
    );
    expect((await sh(`cat ${q(M('CASE.txt'))} ${q(M('other.txt'))}`)).out).toBe('otherlower');
    await waitRemoteFile(ctx.api, repo, '/CASE.txt', Buffer.from('other'));
    await waitRemoteFile(ctx.api, repo, '/other.txt', Buffer.from('lower'));
    const names = (await remoteNames(ctx.api, repo, '/'))!;
    expect(names.filter((n) => /case|other|swap/i.test(n))).toEqual(['CASE.txt', 'other.txt']);
  });

  it('a folder moved, and another removed, while the files copied into them are still uploading', async () => {
    const T = path.join(ctx.src, 'many');
    mkdirSync(path.join(T, 'sub'), { recursive: true });
    for (let i = 0; i < 60; i++) await writeRandom(path.join(T, i % 2 ? 'sub' : '', `m${i}.bin`), 20_000 + i * 9_000);
    await sh(`cp -r ${q(T)} ${q(M('moving'))} && mv ${q(M('moving'))} ${q(M('x/moved-while-uploading'))}`);
    await sh(`cp -r ${q(T)} ${q(M('doomed'))} && rm -r ${q(M('doomed'))}`);
    expect((await sh(`ls ${q(M())}`)).out).not.toMatch(/^(moving|doomed)$/m);
    await waitNames(repo, '/x', ['moved-while-uploading', 'two.txt', 'y']);
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await expectRemoteTree(ctx.api, repo, '/x/moved-while-uploading', T);
        break;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // nothing of the removed folder may come back later
    await new Promise((r) => setTimeout(r, 3000));
    const root = (await remoteNames(ctx.api, repo, '/'))!;
    expect(root.filter((n) => /moving|doomed/.test(n))).toEqual([]);
  });

  it("an editor's safe save (temp file, fsync, rename over the original) replaces the content", async () => {
    await sh(`printf 'version 1\\n' > ${q(M('doc.txt'))}`);
    await waitRemoteFile(ctx.api, repo, '/doc.txt', Buffer.from('version 1\n'));
    // what editors do: write .doc.txt.tmp, fsync it, rename it over doc.txt, fsync the folder
    const script = `
      const fs = require('fs');
      const [dir, text] = process.argv.slice(1);
      const tmp = dir + '/.doc.txt.swp-' + process.pid;
      const fd = fs.openSync(tmp, 'wx', 0o644);
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      fs.renameSync(tmp, dir + '/doc.txt');
      const d = fs.openSync(dir, 'r');
      try { fs.fsyncSync(d); } catch (e) { if (e.code !== 'EINVAL') throw e; }
      fs.closeSync(d);`;
    for (let v = 2; v <= 4; v++) {
      await run(process.execPath, ['-e', script, m.mnt, `version ${v}\n`.repeat(v * 100)]);
      expect((await sh(`cat ${q(M('doc.txt'))}`)).out).toBe(`version ${v}\n`.repeat(v * 100));
    }
    await waitRemoteFile(ctx.api, repo, '/doc.txt', Buffer.from('version 4\n'.repeat(400)));
    await waitRemoteExists(ctx.api, repo, '/doc.txt', true);
    const names = (await remoteNames(ctx.api, repo, '/'))!;
    expect(names.filter((n) => n.includes('doc'))).toEqual(['doc.txt']);
  });
});
