// The same user workloads through a real mount, against the real Seafile CE
// 10.0 server (seaf-server + seahub, built from upstream source by
// scripts/real-seafile) and against `seafs serve`, one after the other: cp -r
// of a mixed tree, tar x, rsync -a twice across a remount, git, mv (a folder
// named `a:b` too), rm, overwrite, a conflict, the server stopped mid-copy, a
// kill -9 of the mount, an encrypted library (and the server forgetting its
// password), trash and history, xattrs, seafs login and logout (the device list), the thumbnails of a folder of pictures. Every result is read back through the
// server's API. The file ends with a table of each workload's result and time
// on both servers. SEAFS_SKIP_REAL_SERVER=1 leaves the real server out, loudly.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { open, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import {
  downloadTree,
  expectRemoteTree,
  remoteBytes,
  remoteEntries,
  remoteNames,
  waitRemoteExists,
  waitRemoteFile,
} from '../helpers/api-check.js';
import { writeRandom } from '../helpers/e2e-fixture.js';
import { CLI, cleanupMounts, mountLibrary, q, run, scratchDir, sh, sleep, type Mount } from '../helpers/mount.js';
import { git } from '../helpers/git.js';
import { pollUntil } from '../helpers/poll.js';
import { realServerSkipped, startServerOfKind, type ServerKind } from '../helpers/real-server.js';
import { apiAs, getToken, uploadTo, type TestServer } from '../helpers/server.js';
import { makeTestPki, startTlsFront, userTlsEnv } from '../helpers/tls-front.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const KINDS: ServerKind[] = realServerSkipped() ? ['serve'] : ['real', 'serve'];
const VAULT_PW = 'vault pass phrase';

/** workload -> server kind -> result and time, printed as a table at the end */
const table = new Map<string, Map<ServerKind, string>>();

afterAll(() => {
  const rows = [...table].map(([w, byKind]) => `| ${w} | ${KINDS.map((k) => byKind.get(k) ?? '-').join(' | ')} |`);
  console.log(
    [
      `| workload | ${KINDS.map((k) => (k === 'real' ? 'real Seafile CE 10.0' : 'seafs serve')).join(' | ')} |`,
      `|---|${KINDS.map(() => '---').join('|')}|`,
      ...rows,
    ].join('\n'),
  );
});

/** Polls until the server's tree under `remote` equals the local folder (uploads run after close). */
async function waitTree(api: SeafileClient, repo: string, remote: string, local: string, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await expectRemoteTree(api, repo, remote, local);
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(500);
    }
  }
}

for (const kind of KINDS) {
  describe(`workloads against ${kind === 'real' ? 'the real Seafile server' : 'seafs serve'}`, () => {
    let server: TestServer;
    let api: SeafileClient;
    let src: string;
    let repo: string;
    let vault: string;
    let m: Mount;
    const M = (p = '') => path.join(m.mnt, p);

    /** an it() whose outcome and time go into the table */
    const work = (name: string, fn: () => Promise<void>, timeoutMs = 300_000) =>
      it(
        name,
        async () => {
          const t0 = Date.now();
          let row = table.get(name);
          if (!row) table.set(name, (row = new Map()));
          try {
            await fn();
            row.set(kind, `ok ${((Date.now() - t0) / 1000).toFixed(1)} s`);
          } catch (e) {
            row.set(kind, `FAIL ${((Date.now() - t0) / 1000).toFixed(1)} s`);
            // what the mount logged is often the only clue to a failure seen once
            if (e instanceof Error && m)
              e.message += `\n--- the mount's log (last 6000 characters) ---\n${m.output().slice(-6000)}`;
            throw e;
          }
        },
        timeoutMs,
      );

    beforeAll(async () => {
      server = await startServerOfKind(kind);
      ({ client: api } = await SeafileClient.login({ baseUrl: server.url }, server.adminEmail, server.adminPassword));
      repo = (await api.createLibrary('Work')).repo_id;
      vault = (await api.createLibrary('Vault', { password: VAULT_PW })).repo_id;
      src = path.join(scratchDir(), `src-${kind}`);
      mkdirSync(src);
    }, 600_000);

    afterAll(async () => {
      try {
        await cleanupMounts();
      } finally {
        await api?.close().catch(() => {});
        await server?.stop();
      }
    });

    work('mount', async () => {
      m = await mountLibrary(server, { library: 'Work', dirCacheTime: 2, attrTimeout: 1 });
      expect((await sh(`ls -A ${q(M())}`)).out).toBe('');
    });

    work('thumbnails of the pictures of a folder listed: from the server, in the desktop cache', async () => {
      // a JPEG and a PNG put there through the API; the mount lists them and asks the server for their thumbnails
      const px = (w: number, h: number) => Buffer.alloc(w * h * 4, 0x80);
      const png = new PNG({ width: 300, height: 120 });
      png.data = px(300, 120);
      const pics = {
        'photo one.jpg': jpeg.encode({ width: 120, height: 300, data: px(120, 300) }, 80).data,
        'chart.png': PNG.sync.write(png),
      };
      await api.mkdir(repo, '/pics');
      expect((await uploadTo(await api.uploadLink(repo, '/pics'), '/pics', pics)).status).toBe(200);
      // made elsewhere: shown once the root's listing is renewed (--dir-cache-time 2)
      const listed = () => (existsSync(M('pics')) ? readdirSync(M('pics')).sort() : []);
      await pollUntil(() => listed().length === 2, 30_000);
      expect(listed()).toEqual(Object.keys(pics).sort());
      // mountLibrary gives every mount XDG_CACHE_HOME in the scratch dir (helpers/mount.ts)
      const thumbs = path.join(scratchDir(), 'xdg-cache', 'thumbnails');
      const keep = (seg: string) => encodeURIComponent(seg).replace(/%(24|26|2B|2C|3A|3D|40)/g, decodeURIComponent);
      for (const name of Object.keys(pics)) {
        const uri = 'file://' + `${realpathSync(m.mnt)}/pics/${name}`.split('/').map(keep).join('/');
        const file = `${createHash('md5').update(uri).digest('hex')}.png`;
        for (const [dir, box] of [
          ['normal', 128],
          ['large', 256],
        ] as const) {
          const at = path.join(thumbs, dir, file);
          const waited = await pollUntil(() => existsSync(at), 30_000);
          expect(waited, `${dir} thumbnail of ${name}\n${m.output()}`).not.toBeNull();
          const bytes = readFileSync(at);
          const img = PNG.sync.read(bytes);
          expect(Math.max(img.width, img.height)).toBe(box); // both pictures are larger than the boxes
          const mtime = String(Math.floor(statSync(M(`pics/${name}`)).mtimeMs / 1000));
          expect(bytes.includes(Buffer.from(`Thumb::URI\0${uri}`, 'latin1'))).toBe(true);
          expect(bytes.includes(Buffer.from(`Thumb::MTime\0${mtime}`, 'latin1'))).toBe(true);
        }
      }
    });

    work('cp -r of a mixed tree (tiny, 8 and 30 MiB, unicode and space names)', async () => {
      const t = path.join(src, 'mixed');
      for (const d of ['a b/c d', 'Ünïcødé ☃', 'deep/1/2/3']) mkdirSync(path.join(t, d), { recursive: true });
      for (let i = 0; i < 24; i++) writeFileSync(path.join(t, 'deep/1/2/3', `tiny-${i}.txt`), `tiny ${i}\n`.repeat(i));
      writeFileSync(path.join(t, 'a b/c d/spaced name.txt'), 'spaces\n');
      writeFileSync(path.join(t, 'Ünïcødé ☃/日本語 ファイル.md'), '# こんにちは\n');
      writeFileSync(path.join(t, 'empty'), '');
      await writeRandom(path.join(t, 'eight.bin'), 8 * 1024 * 1024);
      await writeRandom(path.join(t, 'a b/thirty.bin'), 30 * 1024 * 1024 + 17);
      await sh(`cp -r ${q(t)} ${q(M('mixed'))}`);
      expect((await sh(`diff -r ${q(t)} ${q(M('mixed'))} && echo same`)).out).toBe('same\n');
      expect(await waitTree(api, repo, '/mixed', t)).toBe(29);
    });

    let pkgDir: string;
    let tgz: string;
    work('tar x of an npm package', async () => {
      const out = await run(
        'npm',
        ['pack', path.join(ROOT, 'node_modules/undici'), '--ignore-scripts', '--pack-destination', src, '--json'],
        { cwd: src },
      );
      tgz = path.join(src, (JSON.parse(out.out) as { filename: string }[])[0].filename);
      pkgDir = path.join(src, 'pkg');
      mkdirSync(pkgDir);
      await run('tar', ['xzf', tgz, '-C', pkgDir]);
      await sh(`mkdir ${q(M('pkg'))} && tar xzf ${q(tgz)} -C ${q(M('pkg'))}`);
      expect((await sh(`diff -r ${q(pkgDir)} ${q(M('pkg'))} && echo same`)).out).toBe('same\n');
      expect(await waitTree(api, repo, '/pkg', pkgDir)).toBeGreaterThan(100);
    });

    work('rsync -a twice, the second across a remount, sends nothing the second time', async () => {
      await run('rsync', ['-a', `${pkgDir}/`, `${M('rs')}/`]);
      await waitTree(api, repo, '/rs', pkgDir);
      const sentBy = async () => {
        const r = await run('rsync', ['-a', '--itemize-changes', `${pkgDir}/`, `${M('rs')}/`]);
        return r.out.split('\n').filter((l) => /^[<>]f/.test(l));
      };
      expect(await sentBy(), 'second rsync -a on the same mount').toEqual([]);
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      m = await mountLibrary(server, { library: 'Work', dirCacheTime: 2, attrTimeout: 1, cacheDir: m.cacheDir });
      expect(await sentBy(), 'rsync -a after a remount').toEqual([]);
      await waitTree(api, repo, '/rs', pkgDir);
    });

    work(
      'git clone (3 commits, 70 files), commit and fsck on the mount; the repository read through the API is valid',
      async () => {
        // a small repository with a real history: this project's client and vfs sources in three commits
        const origin = path.join(src, 'origin');
        mkdirSync(origin);
        await git(origin, 'init', '-q', '-b', 'main');
        for (const [i, dir] of ['src/client', 'src/vfs/write', 'src/vfs/read'].entries()) {
          await sh(
            `mkdir -p ${q(path.join(origin, dir))} && cp -r ${q(path.join(ROOT, dir))}/. ${q(path.join(origin, dir))}/`,
          );
          await git(origin, 'add', '-A');
          await git(origin, 'commit', '-q', '-m', `commit ${i}`);
        }
        const bare = path.join(src, 'origin.git');
        await git(src, 'clone', '-q', '--bare', '--no-local', origin, bare);
        const c = M('clone');
        await git(m.mnt, 'clone', '-q', '--no-hardlinks', bare, c);
        writeFileSync(path.join(c, 'EDITED-ON-SEAFS.md'), 'edited\n');
        await git(c, 'add', '-A');
        await git(c, 'commit', '-q', '-m', 'edit on the mount');
        await git(c, 'fsck', '--strict', '--no-progress');
        const head = (await git(c, 'rev-parse', 'HEAD')).out.trim();
        const local = path.join(src, 'clone-copy');
        await sh(`cp -r ${q(c)} ${q(local)}`);
        await waitTree(api, repo, '/clone', local);
        const dl = path.join(src, 'clone-dl');
        await sh(`mkdir ${q(dl)}`);
        // the server's copy, fetched through the API: a valid repository at the same HEAD
        await downloadTree(api, repo, '/clone', dl);
        await git(dl, 'fsck', '--strict', '--no-progress');
        expect((await git(dl, 'rev-parse', 'HEAD')).out.trim()).toBe(head);
      },
    );

    work('make, touch one source, make again: exactly that object is rebuilt, after a remount too', async () => {
      // a remount mounts elsewhere: the folder is found anew each time
      const d = () => M('build');
      mkdirSync(d());
      for (const i of [1, 2, 3]) writeFileSync(path.join(d(), `f${i}.c`), `int f${i}(void) { return ${i}; }\n`);
      writeFileSync(path.join(d(), 'Makefile'), 'all: f1.o f2.o f3.o\n%.o: %.c\n\tcc -c -o $@ $<\n');
      /** the objects `make` compiled */
      const make = async () =>
        (await run('make', ['-C', d()])).out
          .split('\n')
          .filter((l) => l.startsWith('cc '))
          .map((l) => l.split(' ')[3]);
      expect(await make()).toEqual(['f1.o', 'f2.o', 'f3.o']);
      expect(await make()).toEqual([]);
      // times are whole seconds: a touch within the build's own second would equal the objects' time
      await sleep(1100);
      await run('touch', [path.join(d(), 'f3.c')]);
      expect(await make()).toEqual(['f3.o']);
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      m = await mountLibrary(server, { library: 'Work', dirCacheTime: 2, attrTimeout: 1, cacheDir: m.cacheDir });
      expect(await make(), 'make after a remount').toEqual([]);
      await sleep(1100);
      await run('touch', ['-m', path.join(d(), 'f1.c')]);
      await run('touch', ['-a', path.join(d(), 'f2.c')]);
      expect(await make()).toEqual(['f1.o']);
      // the objects on the server are the ones on the mount
      for (const o of ['f1.o', 'f2.o', 'f3.o']) {
        await waitRemoteFile(api, repo, `/build/${o}`, readFileSync(path.join(d(), o)));
      }
    });

    work('mv of files and folders (a folder named a:b), rm and rm -r', async () => {
      await sh(
        [
          `mkdir -p ${q(M('mv/a:b/in'))} ${q(M('mv/dst'))} ${q(M('mv/old'))}`,
          `echo one > ${q(M('mv/a:b/one.txt'))}`,
          `echo two > ${q(M('mv/a:b/in/two.txt'))}`,
          `echo f > ${q(M('mv/file.txt'))}`,
          `echo g > ${q(M('mv/old/g.txt'))}`,
          `echo gone > ${q(M('mv/gone.txt'))}`,
          `mkdir -p ${q(M('mv/gonedir/sub'))} && echo x > ${q(M('mv/gonedir/sub/x.txt'))}`,
        ].join(' && '),
      );
      await waitRemoteFile(api, repo, '/mv/gonedir/sub/x.txt', Buffer.from('x\n'));
      await waitRemoteFile(api, repo, '/mv/a:b/in/two.txt', Buffer.from('two\n'));
      await sh(
        [
          `mv ${q(M('mv/a:b'))} ${q(M('mv/dst/'))}`,
          `mv ${q(M('mv/file.txt'))} ${q(M('mv/dst/renamed.txt'))}`,
          `mv ${q(M('mv/old'))} ${q(M('mv/new'))}`,
          `mv ${q(M('mv/dst/a:b'))} ${q(M('mv/dst/c:d'))}`,
          `rm ${q(M('mv/gone.txt'))}`,
          `rm -r ${q(M('mv/gonedir'))}`,
        ].join(' && '),
      );
      const want = path.join(src, 'mv-want');
      await sh(
        [
          `mkdir -p ${q(want)}/dst/c:d/in ${q(want)}/new`,
          `echo one > ${q(want)}/dst/c:d/one.txt`,
          `echo two > ${q(want)}/dst/c:d/in/two.txt`,
          `echo f > ${q(want)}/dst/renamed.txt`,
          `echo g > ${q(want)}/new/g.txt`,
        ].join(' && '),
      );
      expect((await sh(`diff -r ${q(want)} ${q(M('mv'))} && echo same`)).out).toBe('same\n');
      await waitTree(api, repo, '/mv', want, 60_000);
    });

    work('overwrite: cp over a file, > truncation, >> append', async () => {
      const a = path.join(src, 'over-a.bin');
      const b = path.join(src, 'over-b.bin');
      await writeRandom(a, 3 * 1024 * 1024);
      await writeRandom(b, 1024 * 1024 + 5);
      await sh(`cp ${q(a)} ${q(M('over.bin'))} && echo first > ${q(M('over.txt'))}`);
      await waitRemoteFile(api, repo, '/over.bin', a);
      await waitRemoteFile(api, repo, '/over.txt', Buffer.from('first\n'));
      await sh(
        `cp ${q(b)} ${q(M('over.bin'))} && echo second > ${q(M('over.txt'))} && echo third >> ${q(M('over.txt'))}`,
      );
      await waitRemoteFile(api, repo, '/over.bin', b);
      await waitRemoteFile(api, repo, '/over.txt', Buffer.from('second\nthird\n'));
      expect((await sh(`cat ${q(M('over.txt'))}`)).out).toBe('second\nthird\n');
    });

    work('a remote edit while the file is dirty: the server keeps theirs, ours is a conflict copy', async () => {
      await sh(`mkdir ${q(M('team'))} && echo base > ${q(M('team/doc.txt'))}`);
      await waitRemoteFile(api, repo, '/team/doc.txt', Buffer.from('base\n'));
      await sleep(2500); // the mount's listing knows the uploaded version
      const fh = await open(M('team/doc.txt'), 'r+');
      await fh.truncate(0);
      await fh.write('ours\n', 0);
      const link = await api.uploadLink(repo, '/team');
      expect((await uploadTo(link, '/team', { 'doc.txt': 'theirs\n' }, { replace: true })).status).toBe(200);
      await fh.close();
      const conflict = new RegExp(`^doc \\(SFConflict ${server.adminEmail.replace(/\./g, '\\.')} [\\d-]+\\)\\.txt$`);
      const deadline = Date.now() + 60_000;
      let names: string[] = [];
      while (Date.now() < deadline) {
        names = (await remoteNames(api, repo, '/team')) ?? [];
        if (names.some((n) => conflict.test(n))) break;
        await sleep(500);
      }
      expect(names).toHaveLength(2);
      expect((await remoteBytes(api, repo, '/team/doc.txt')).toString()).toBe('theirs\n');
      const copy = names.find((n) => conflict.test(n));
      expect(copy, names.join(', ')).toBeDefined();
      expect((await remoteBytes(api, repo, `/team/${copy}`)).toString()).toBe('ours\n');
    });

    work('the server stopped mid-copy and started again: everything lands', async () => {
      const t = path.join(src, 'offline');
      mkdirSync(t);
      for (let i = 0; i < 40; i++) writeFileSync(path.join(t, `f${i}.txt`), `offline ${i}\n`.repeat(50));
      await writeRandom(path.join(t, 'big.bin'), 20 * 1024 * 1024);
      await sh(`mkdir ${q(M('offline'))}`);
      await waitRemoteExists(api, repo, '/offline', true);
      const cp = sh(`cp ${q(t)}/f1*.txt ${q(t)}/big.bin ${q(M('offline'))}/ && cp ${q(t)}/* ${q(M('offline'))}/`);
      await sleep(300);
      await server.halt();
      try {
        const r = await cp;
        expect(r.code).toBe(0);
        // offline, the mount lists what it holds (a file uploaded before the stop and never read is not
        // on this machine: reading it waits for the server)
        expect((await sh(`ls ${q(M('offline'))} | sort`)).out).toBe((await sh(`ls ${q(t)} | sort`)).out);
        await sleep(1000);
      } finally {
        await server.restart({ samePort: true });
      }
      expect((await sh(`diff -r ${q(t)} ${q(M('offline'))} && echo same`)).out).toBe('same\n');
      await waitTree(api, repo, '/offline', t, 180_000);
    });

    work('kill -9 of the mount mid-copy; the remount uploads what was left', async () => {
      const t = path.join(src, 'crash');
      mkdirSync(t);
      for (let i = 0; i < 30; i++) writeFileSync(path.join(t, `c${i}.txt`), `crash ${i}\n`.repeat(100));
      await writeRandom(path.join(t, 'big.bin'), 10 * 1024 * 1024);
      await sh(`cp -r ${q(t)} ${q(M('crash'))}`);
      const { mnt, cacheDir } = m;
      await m.kill9();
      m = await mountLibrary(server, { library: 'Work', dirCacheTime: 2, attrTimeout: 1, mountpoint: mnt, cacheDir });
      expect((await sh(`diff -r ${q(t)} ${q(M('crash'))} && echo same`)).out).toBe('same\n');
      await waitTree(api, repo, '/crash', t);
    });

    work('an encrypted library: write, read, and again after the server forgot the password', async () => {
      const v = await mountLibrary(server, { library: 'Vault', libraryPassword: VAULT_PW, dirCacheTime: 2 });
      const t = path.join(src, 'vault');
      mkdirSync(t);
      writeFileSync(path.join(t, 'secret.txt'), 'secret\n');
      await writeRandom(path.join(t, 'secret.bin'), 9 * 1024 * 1024);
      await sh(`cp ${q(t)}/* ${q(v.mnt)}/`);
      expect((await sh(`cat ${q(v.mnt)}/secret.txt`)).out).toBe('secret\n');
      await api.unlockLibrary(vault, VAULT_PW);
      await waitTree(api, vault, '/', t);
      // a restart makes the server forget every library password (as its hour-long expiry does)
      const up = path.join(src, 'vault-up');
      mkdirSync(up);
      await writeRandom(path.join(up, 'uploaded.bin'), 2 * 1024 * 1024);
      const link = await api.uploadLink(vault, '/');
      const buf = readFileSync(path.join(up, 'uploaded.bin'));
      expect((await uploadTo(link, '/', { 'uploaded.bin': buf })).status).toBe(200);
      await server.restart({ samePort: true });
      // a file the mount never read (no cache) and a new file
      expect((await sh(`cmp ${q(path.join(up, 'uploaded.bin'))} ${q(v.mnt)}/uploaded.bin && echo same`)).out).toBe(
        'same\n',
      );
      writeFileSync(path.join(t, 'after.txt'), 'written after the server forgot\n');
      writeFileSync(path.join(t, 'uploaded.bin'), buf);
      await sh(`cp ${q(t)}/after.txt ${q(v.mnt)}/`);
      await api.unlockLibrary(vault, VAULT_PW);
      await waitTree(api, vault, '/', t);
      const un = await v.unmount();
      expect(un.code, un.out + un.err).toBe(0);
    });

    work('history and trash: versions listed and read, a deleted file moved back', async () => {
      await sh(`mkdir ${q(M('hist'))}`);
      for (const text of ['v1\n', 'version two\n', 'the third version\n']) {
        await sh(`printf %s ${q(text)} > ${q(M('hist/doc.txt'))}`);
        await waitRemoteFile(api, repo, '/hist/doc.txt', Buffer.from(text));
        await sleep(1100); // versions one second apart at least
      }
      const vdir = M('.seafile-history/hist/doc.txt');
      const versions = (await sh(`ls -1 ${q(vdir)}`)).out.split('\n').filter(Boolean);
      expect(versions).toHaveLength(3);
      expect((await sh(`cat ${q(path.join(vdir, versions[0]))}`)).out).toBe('v1\n');
      expect((await sh(`cat ${q(path.join(vdir, versions[2]))}`)).out).toBe('the third version\n');
      await sh(`rm ${q(M('hist/doc.txt'))}`);
      await waitRemoteExists(api, repo, '/hist/doc.txt', false);
      const deadline = Date.now() + 30_000;
      let entry: string | undefined;
      while (!entry && Date.now() < deadline) {
        const ls = await sh(`ls -1 ${q(M('.seafile-trash'))}`);
        entry = ls.out.split('\n').find((n) => n.endsWith(' hist%2Fdoc.txt'));
        if (!entry) await sleep(1000);
      }
      expect(entry, 'the deleted file in .seafile-trash').toBeDefined();
      expect((await sh(`cat ${q(M(`.seafile-trash/${entry}`))}`)).out).toBe('the third version\n');
      await sh(`mv ${q(M(`.seafile-trash/${entry}`))} ${q(M('hist/doc.txt'))}`);
      expect((await sh(`cat ${q(M('hist/doc.txt'))}`)).out).toBe('the third version\n');
      expect((await remoteBytes(api, repo, '/hist/doc.txt')).toString()).toBe('the third version\n');
    });

    work('xattrs: id and status of a synced file; the lock xattr as the server supports it', async () => {
      await sh(`mkdir ${q(M('attrs'))} && printf report > ${q(M('attrs/r.txt'))}`);
      await waitRemoteFile(api, repo, '/attrs/r.txt', Buffer.from('report'));
      await sleep(2500);
      const entry = (await remoteEntries(api, repo, '/attrs')).find((e) => e.name === 'r.txt')!;
      const val = async (n: string) =>
        (await run('getfattr', ['--only-values', '--absolute-names', '-n', n, M('attrs/r.txt')])).out;
      expect(await val('user.seafile.id')).toBe(entry.id);
      expect(await val('user.seafile.status')).toBe('synced');
      const lock = await run('setfattr', ['-n', 'user.seafile.lock', '-v', '1', M('attrs/r.txt')], {
        allowFail: true,
      });
      const features = (await api.serverInfo()).features ?? [];
      if (kind === 'real') {
        // Seafile CE has no file locks (features: seafile-basic only)
        expect(features).toEqual(['seafile-basic']);
        expect(lock.err).toMatch(/Operation not supported/);
      } else {
        expect(lock.code, lock.err).toBe(0);
        const locked = (await remoteEntries(api, repo, '/attrs')).find((e) => e.name === 'r.txt')!;
        expect(locked.is_locked).toBe(true);
      }
    });

    // the login's token is a device of the account (seahub's TokenV2, listed by GET /api2/devices/ as the web
    // interface shows it), and logout deletes it there (POST /api2/logout-device/)
    work('seafs login: a device of the account; seafs logout: removed with its token', async () => {
      const home = path.join(scratchDir(), `home-${kind}`);
      mkdirSync(home);
      const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
      delete env.SEAFS_PASSWORD;
      const seafs = (args: string[], input = '') =>
        run(process.execPath, [CLI, ...args], { env, input, allowFail: true, timeoutMs: 60_000 });
      const login = await seafs(
        ['login', server.url, '--user', server.adminEmail, '--name', 'acct'],
        `${server.adminPassword}\n`,
      );
      expect(login.err).toBe('');
      expect(login.code).toBe(0);
      const saved = (
        JSON.parse(readFileSync(path.join(home, 'seafs', 'accounts.json'), 'utf8')) as {
          accounts: Record<string, { token: string; deviceId: string }>;
        }
      ).accounts.acct;
      const web = apiAs(server.url, await getToken(server.url, server.adminEmail, server.adminPassword));
      const before = (await web('GET', '/api2/devices/')).json as {
        device_id: string;
        device_name: string;
        platform: string;
      }[];
      expect(before.map((d) => [d.platform, d.device_id, d.device_name])).toContainEqual([
        'linux',
        saved.deviceId,
        os.hostname().slice(0, 40),
      ]);
      const out = await seafs(['logout', 'acct']);
      expect(out.err).toBe('');
      expect(out.code).toBe(0);
      expect(out.out).toContain('its token is deleted on the server');
      const after = (await web('GET', '/api2/devices/')).json as { device_id: string }[];
      expect(after.map((d) => d.device_id)).not.toContain(saved.deviceId);
      expect((await apiAs(server.url, saved.token)('GET', '/api2/auth/ping/')).status).toBe(401);
    });

    work('https with a private CA (--ca-file) behind a TLS front; untrusted: one line', async () => {
      // the front forwards to the web API; the real server's fileserver links name its own (http) address
      const pki = await makeTestPki();
      const front = await startTlsFront(server.url, pki);
      try {
        const refused = await run(
          process.execPath,
          [
            CLI,
            'login',
            front.url,
            '--user',
            server.adminEmail,
            '--name',
            'tls',
            '--config',
            path.join(src, 'tls-cfg'),
          ],
          {
            env: { ...process.env, ...userTlsEnv() },
            input: `${server.adminPassword}\n`,
            allowFail: true,
            timeoutMs: 30_000,
          },
        );
        expect(refused.code).toBe(1);
        expect(refused.err.trim()).toMatch(
          /^seafs: the certificate of localhost:\d+ is issued by a CA this machine does not trust \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): .*--ca-file FILE$/,
        );
        const t = await mountLibrary(
          { ...server, url: front.url },
          { library: 'Work', extraArgs: ['--ca-file', pki.caCert], env: userTlsEnv() },
        );
        const body = Buffer.from(`over https to the ${kind} server\n`);
        // async: the front answers in this process, so a blocking write through the mount would wait for itself
        await writeFile(path.join(t.mnt, 'https.txt'), body);
        await waitRemoteFile(api, repo, '/https.txt', body);
        expect((await t.unmount()).code).toBe(0);
        expect(front.requests).toBeGreaterThan(2);
      } finally {
        await front.close();
        pki.remove();
      }
    });

    work('unmount with nothing lost', async () => {
      const un = await m.unmount();
      expect(un.code, un.out + un.err).toBe(0);
      expect(await m.exited).toBe(0);
    });
  });
}
