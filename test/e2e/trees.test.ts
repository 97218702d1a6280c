// Real-world trees on a real mount: an npm package tarball extracted with
// tar, tar c of trees on the mount, rsync -a in and out, and git (init, add,
// commit, log; clone of a real repository, then edit and commit). What the
// server holds is checked through the API: file trees byte for byte, git
// repositories by downloading .git through the API and running git fsck on it.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { downloadTree, expectRemoteTree, remoteNames, sha256File, waitRemoteFile } from '../helpers/api-check.js';
import { mountLibrary, q, run, sh, type Mount } from '../helpers/mount.js';
import { git } from '../helpers/git.js';
import { setupE2E } from '../helpers/e2e-fixture.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ctx = setupE2E(['Trees']);

// deterministic tar output: same bytes for the same tree wherever it lives
const TAR_NORM = '--sort=name --mtime=@1000000000 --owner=0 --group=0 --numeric-owner --mode=0644 --format=gnu';

describe('real trees on a mounted library', () => {
  let m: Mount;
  let repo: string;
  let pkgDir: string; // the package extracted locally, the reference
  let tgz: string;
  beforeAll(async () => {
    repo = ctx.repos.Trees;
    m = await mountLibrary(ctx.server, { library: 'Trees' });
    // a real package tarball, packed from node_modules (offline, no scripts)
    const out = await run(
      'npm',
      ['pack', path.join(ROOT, 'node_modules/undici'), '--ignore-scripts', '--pack-destination', ctx.src, '--json'],
      {
        cwd: ctx.src,
      },
    );
    tgz = path.join(ctx.src, (JSON.parse(out.out) as { filename: string }[])[0].filename);
    pkgDir = path.join(ctx.src, 'ref');
    mkdirSync(pkgDir);
    await run('tar', ['xzf', tgz, '-C', pkgDir]);
  });
  const M = (p = '') => path.join(m.mnt, p);

  it('tar x of an npm package onto the mount: the API serves the same tree', async () => {
    const files = (await sh(`tar tzf ${q(tgz)} | grep -v '/$' | wc -l`)).out.trim();
    expect(Number(files)).toBeGreaterThan(100);
    await sh(`mkdir ${q(M('pkg'))} && tar xzf ${q(tgz)} -C ${q(M('pkg'))}`);
    expect((await sh(`diff -r ${q(pkgDir)} ${q(M('pkg'))} && echo same`)).out).toBe('same\n');
    // through the API (uploads may still be running: the last file decides)
    await sh(`sync -f ${q(M('pkg'))}`, { allowFail: true });
    const last = (await sh(`cd ${q(pkgDir)} && find . -type f | sort | tail -1`)).out.trim();
    await waitRemoteFile(ctx.api, repo, path.posix.join('/pkg', last), path.join(pkgDir, last));
    await expectWholeTree('/pkg', pkgDir);
  });

  it('tar c of the tree on the mount, and tar c onto the mount, give the bytes tar gives locally', async () => {
    await sh(`tar ${TAR_NORM} -cf ${q(ctx.src)}/ref.tar -C ${q(pkgDir)} package`);
    await sh(`tar ${TAR_NORM} -cf ${q(ctx.src)}/from-mount.tar -C ${q(M('pkg'))} package`);
    expect(await sha256File(path.join(ctx.src, 'from-mount.tar'))).toBe(
      await sha256File(path.join(ctx.src, 'ref.tar')),
    );
    // the archive written by tar straight onto the mount
    await sh(`tar ${TAR_NORM} -cf ${q(M('pkg.tar'))} -C ${q(pkgDir)} package`);
    await waitRemoteFile(ctx.api, repo, '/pkg.tar', path.join(ctx.src, 'ref.tar'));
  });

  it('rsync -a into the mount, again after a change, and back out', async () => {
    const t0 = Date.now();
    await run('rsync', ['-a', `${pkgDir}/`, `${M('rs')}/`]);
    const firstMs = Date.now() - t0;
    await expectWholeTree('/rs', pkgDir);
    // change, add and delete on the source; rsync --delete mirrors it
    const lib = path.join(pkgDir, 'package');
    writeFileSync(path.join(lib, 'README.md'), 'changed by the e2e suite\n');
    writeFileSync(path.join(lib, 'NEW-FILE.txt'), 'new\n');
    await sh(`rm ${q(lib)}/LICENSE`);
    const second = await run('rsync', ['-a', '--delete', '--itemize-changes', `${pkgDir}/`, `${M('rs')}/`]);
    const sent = second.out.split('\n').filter((l) => /^[<>]f/.test(l));
    console.log(`rsync -a: first run ${firstMs} ms; second run re-sent ${sent.length} file(s)`);
    expect(sent.map((l) => l.slice(12))).toEqual(expect.arrayContaining(['package/README.md', 'package/NEW-FILE.txt']));
    await expectWholeTree('/rs', pkgDir);
    // out again, into an empty local folder: identical to the source
    const back = path.join(ctx.src, 'rs-back');
    await run('rsync', ['-a', `${M('rs')}/`, `${back}/`]);
    expect((await sh(`diff -r ${q(pkgDir)} ${q(back)} && echo same`)).out).toBe('same\n');
  });

  it('git init, add, commit and log on the mount; the repository on the server is valid', async () => {
    const w = M('gitrepo');
    mkdirSync(w);
    await git(w, 'init', '-q', '-b', 'main');
    await sh(`cp -r ${q(pkgDir)}/package/lib ${q(w)}/ && echo '# on seafs' > ${q(w)}/README.md`);
    await git(w, 'add', '-A');
    await git(w, 'commit', '-q', '-m', 'first commit on the mount');
    await sh(`echo 'second line' >> ${q(w)}/README.md && rm -r ${q(w)}/lib/llhttp`);
    await git(w, 'commit', '-q', '-am', 'second commit');
    expect((await git(w, 'log', '--format=%s')).out).toBe('second commit\nfirst commit on the mount\n');
    expect((await git(w, 'status', '--porcelain')).out).toBe('');
    await git(w, 'fsck', '--strict', '--no-progress');
    const head = (await git(w, 'rev-parse', 'HEAD')).out.trim();
    await checkRepoThroughApi('/gitrepo', head, 2);
  });

  it('git clone of a real repository onto the mount, then edit and commit', async () => {
    // a local bare copy of this project's repository: a real history
    const bare = path.join(ctx.src, 'origin.git');
    await git(ctx.src, 'clone', '-q', '--bare', '--no-local', ROOT, bare);
    const commits = Number((await git(bare, 'rev-list', '--count', 'HEAD')).out.trim());
    expect(commits).toBeGreaterThan(5);
    const c = M('clone');
    const t0 = Date.now();
    await git(m.mnt, 'clone', '-q', '--no-hardlinks', bare, c);
    const cloneMs = Date.now() - t0;
    expect((await git(c, 'status', '--porcelain')).out).toBe('');
    writeFileSync(path.join(c, 'EDITED-ON-SEAFS.md'), 'edited\n');
    await sh(`echo '// edited' >> ${q(c)}/package.json`);
    await git(c, 'add', '-A');
    await git(c, 'commit', '-q', '-m', 'edit on the mount');
    expect((await git(c, 'log', '-1', '--format=%s')).out).toBe('edit on the mount\n');
    await git(c, 'fsck', '--strict', '--no-progress');
    const head = (await git(c, 'rev-parse', 'HEAD')).out.trim();
    console.log(`git clone of ${commits} commits onto the mount: ${cloneMs} ms`);
    await checkRepoThroughApi('/clone', head, commits + 1);
    // the working tree on the server equals a checkout of that commit made locally
    const ref = path.join(ctx.src, 'clone-ref');
    await git(ctx.src, 'clone', '-q', bare, ref);
    await git(ref, 'fetch', '-q', c, 'HEAD');
    await git(ref, 'checkout', '-q', 'FETCH_HEAD');
    for (const name of readdirSync(ref)) {
      if (name === '.git') continue;
      const p = path.join(ref, name);
      await expectRemoteTreeOrFile(`/clone/${name}`, p);
    }
  });

  it('an SQLite database written on the mount (journal, fsync, random writes) is intact through the API', async () => {
    const script = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute('create table t (id integer primary key, name text, blob blob)')
for batch in range(20):
    with db:
        for i in range(100):
            n = batch * 100 + i
            db.execute('insert into t (name, blob) values (?, ?)', ('row %d' % n, bytes([n % 256]) * (n % 3000)))
with db:
    db.execute('update t set name = name || " updated" where id % 7 = 0')
    db.execute('delete from t where id % 11 = 0')
db.execute('vacuum')
db.close()
`;
    await sh(`mkdir -p ${q(M('db'))}`);
    await run('python3', ['-c', script, M('db/app.sqlite')]);
    const check = `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute('pragma integrity_check').fetchone()[0], db.execute('select count(*) from t').fetchone()[0],
      db.execute("select count(*) from t where name like '% updated'").fetchone()[0])
`;
    const want = 'ok 1819 260\n'; // 2000 rows minus 181 multiples of 11; 285 multiples of 7 minus 25 of 77
    expect((await run('python3', ['-c', check, M('db/app.sqlite')])).out).toBe(want);
    // the same file downloaded through the API
    const dl = path.join(ctx.src, 'app.sqlite');
    const deadline = Date.now() + 60_000;
    for (;;) {
      await downloadTree(ctx.api, repo, '/db', path.join(ctx.src, 'db-dl'));
      await sh(`cp ${q(ctx.src)}/db-dl/app.sqlite ${q(dl)}`);
      const r = await run('python3', ['-c', check, dl], { allowFail: true });
      if (r.out === want && (await sha256File(dl)) === (await sha256File(M('db/app.sqlite')))) break;
      if (Date.now() > deadline) expect(r.out + r.err, 'the database downloaded through the API').toBe(want);
      await new Promise((res) => setTimeout(res, 500));
    }
    // no journal left behind on the server
    expect(await remoteNames(ctx.api, repo, '/db')).toEqual(['app.sqlite']);
  });

  it('npm install of a package tarball into a project on the mount, then node loads it from there', async () => {
    const P = M('proj');
    mkdirSync(P);
    writeFileSync(
      path.join(P, 'package.json'),
      JSON.stringify({ name: 'proj', version: '1.0.0', private: true }, null, 2) + '\n',
    );
    const env = {
      ...process.env,
      npm_config_cache: path.join(ctx.src, 'npm-cache'),
      npm_config_update_notifier: 'false',
    };
    await run('npm', ['install', '--offline', '--no-bin-links', '--no-audit', '--no-fund', '--ignore-scripts', tgz], {
      cwd: P,
      env,
      timeoutMs: 300_000,
    });
    const r = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import { request, Agent } from 'undici'; console.log(typeof request, typeof Agent)",
      ],
      { cwd: P },
    );
    expect(r.out).toBe('function function\n');
    // the installed package on the server equals the tarball's content (pkgDir was edited by the rsync test)
    const ref = path.join(ctx.src, 'npm-ref');
    mkdirSync(ref);
    await run('tar', ['xzf', tgz, '-C', ref]);
    await expectWholeTree('/proj/node_modules/undici', path.join(ref, 'package'));
  });

  /** After the uploads settle: the server's tree equals the local one. */
  async function expectWholeTree(remote: string, local: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await expectRemoteTree(ctx.api, repo, remote, local);
        return;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  async function expectRemoteTreeOrFile(remote: string, local: string): Promise<void> {
    if ((await sh(`test -d ${q(local)}`, { allowFail: true })).code === 0) await expectWholeTree(remote, local);
    else await waitRemoteFile(ctx.api, repo, remote, local);
  }

  /** Downloads the repository through the API; git must find it intact with HEAD and the commits. */
  async function checkRepoThroughApi(remote: string, head: string, commits: number): Promise<void> {
    // uploads run after close: until the last ref lands, the server's copy may be a valid repository of an
    // earlier state (fsck passes on a HEAD whose branch file has not arrived), so every check is polled
    const want = { fsck: '', head, commits, status: '' };
    const out = (p: Promise<{ out: string }>) =>
      p.then((r) => r.out.trim()).catch((e: Error) => `failed: ${e.message}`);
    const deadline = Date.now() + 60_000;
    let got: typeof want | { fsck: string; head: string; commits: number | string; status: string } = want;
    for (let attempt = 0; ; attempt++) {
      const dl = path.join(ctx.src, `dl-${remote.slice(1)}-${attempt}`);
      await downloadTree(ctx.api, repo, remote, dl);
      const fsck = await out(git(dl, 'fsck', '--strict', '--no-progress'));
      got = {
        fsck: fsck.startsWith('failed') ? fsck : '',
        head: await out(git(dl, 'rev-parse', 'HEAD')),
        commits: Number(await out(git(dl, 'rev-list', '--count', 'HEAD'))),
        status: await out(git(dl, '-c', 'core.fileMode=false', 'status', '--porcelain')),
      };
      if (JSON.stringify(got) === JSON.stringify(want) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect(got, `the repository ${remote} downloaded through the API (fsck, HEAD, commits, working tree)`).toEqual(
      want,
    );
  }

  it('nothing is left behind by git (no lock files, no "name (1)" copies)', async () => {
    const names = await remoteNames(ctx.api, repo, '/clone/.git');
    expect(names, '/clone/.git on the server (made by the clone test)').not.toBeNull();
    expect(names!.filter((n) => n.endsWith('.lock') || / \(\d+\)/.test(n))).toEqual([]);
    expect(existsSync(M('clone/.git/index.lock'))).toBe(false);
  });
});
