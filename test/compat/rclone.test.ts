// rclone's `seafile` backend, an independent real client of the web API,
// against `seafs serve`: in library mode (remote rooted in one library) and in
// all-libraries mode (libraries are the top-level folders). A seeded tree of
// 200+ files goes up, is listed, read by ranges, comes back down byte for
// byte, then is moved, deleted and purged, checking rclone's view and the
// server's own API after each step. See RCLONE-ENDPOINTS.md for what rclone
// calls. Run `npm run build` first (the server helper spawns dist/cli/main.js).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, startTestServer } from '../helpers/server.js';
import { Rclone, type LsJsonItem } from '../helpers/rclone.js';
import { sha256File } from '../helpers/api-check.js';
import { generateTree, walk, type Tree } from '../helpers/tree.js';

const MiB = 1024 * 1024;
const SMALL_FILES = 220;
const LIB_NAME = 'compat lib é';
const ALL_LIB_NAME = 'compat all ü';
// rclone logs this when a download ignored its Range header (200 instead of 206).
const RANGE_IGNORED = 'ignored our request of partial content';
// rclone paces itself (~0.2 s per file each way): a copy takes ~45 s whatever the machine
const COPY_TIMEOUT_MS = 240_000;

type Server = Awaited<ReturnType<typeof startTestServer>>;

let server: Server | undefined;
let rclone: Rclone | undefined;
let work = '';
let base = ''; // server URL without trailing slash
let token = '';

const rc = () => rclone!;

/** Calls the server's own web API with our token; never throws on HTTP status. */
async function api(path: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, {
    ...init,
    headers: { Authorization: `Token ${token}`, Accept: 'application/json', ...(init.headers ?? {}) },
    redirect: 'manual',
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // file-server style bodies are not JSON: keep the text
  }
  return { status: res.status, body };
}

async function libraryId(name: string): Promise<string | undefined> {
  const r = await api('/api2/repos/');
  expect(r.status).toBe(200);
  return (r.body as Array<{ id: string; name: string }>).find((l) => l.name === name)?.id;
}

/** Folder listing through the V2 API (not the V2.1 call rclone uses). */
async function listDir(repo: string, p: string): Promise<{ status: number; entries: any[] }> {
  const r = await api(`/api2/repos/${repo}/dir/?p=${encodeURIComponent(p)}`);
  return { status: r.status, entries: r.status === 200 ? (r.body as any[]) : [] };
}

async function readSlice(file: string, offset: number, count: number): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(count);
    const { bytesRead } = await fh.read(buf, 0, count, offset);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

function sortedFiles(items: LsJsonItem[]): [string, number][] {
  return items
    .filter((i) => !i.IsDir)
    .map((i): [string, number] => [i.Path, i.Size])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
function sortedDirs(items: LsJsonItem[]): string[] {
  return items
    .filter((i) => i.IsDir)
    .map((i) => i.Path)
    .sort();
}

/** The expected remote state of `<root>/up`, updated as the tests mutate it. */
class Model {
  files = new Map<string, { size: number; sha256: string }>();
  dirs = new Set<string>();
  constructor(tree: Tree) {
    for (const f of tree.files) this.files.set(f.path, { size: f.size, sha256: f.sha256 });
    for (const d of tree.dirs) this.dirs.add(d);
  }
  addDirs(path: string) {
    const parts = path.split('/');
    for (let i = 1; i <= parts.length; i++) this.dirs.add(parts.slice(0, i).join('/'));
  }
  moveFile(from: string, to: string) {
    const f = this.files.get(from)!;
    this.files.delete(from);
    this.files.set(to, f);
    if (to.includes('/')) this.addDirs(to.slice(0, to.lastIndexOf('/')));
  }
  moveDir(from: string, to: string) {
    const re = (p: string) => (p === from ? to : p.startsWith(from + '/') ? to + p.slice(from.length) : p);
    this.files = new Map([...this.files].map(([p, v]) => [re(p), v]));
    this.dirs = new Set([...this.dirs].map(re));
    if (to.includes('/')) this.addDirs(to.slice(0, to.lastIndexOf('/')));
  }
  removeTree(dir: string) {
    for (const p of [...this.files.keys()]) if (p.startsWith(dir + '/')) this.files.delete(p);
    for (const d of [...this.dirs]) if (d === dir || d.startsWith(dir + '/')) this.dirs.delete(d);
  }
  expectedFiles(): [string, number][] {
    return [...this.files].map(([p, v]): [string, number] => [p, v.size]).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  }
}

interface Mode {
  label: string;
  bigSize: number;
  seed: number;
  /** rclone target of the library root, e.g. `lib:` or `all:Name`. */
  root: () => string;
  libName: string;
  allLibraries: boolean;
  /** 1: one `rclone copy` of the whole tree. N: N rclone processes at once, each with a share of the files. */
  shardsUp: number;
  shardsDown: number;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'seafs-compat-'));
  server = await startTestServer();
  base = server.url.replace(/\/+$/, '');
  token = await adminToken(server);
  rclone = await Rclone.create([
    { name: 'lib', url: base, user: server.adminEmail, password: server.adminPassword, library: LIB_NAME },
    { name: 'all', url: base, user: server.adminEmail, password: server.adminPassword, createLibrary: true },
  ]);
});

afterAll(async () => {
  try {
    await server?.stop();
  } finally {
    rclone?.dispose();
    if (work) rmSync(work, { recursive: true, force: true });
  }
});

/**
 * `rclone copy src dst`. rclone's seafile backend paces itself to one API call
 * per 100 ms per server (backend/seafile/pacer.go), so 200 files take ~45 s
 * each way; with shards > 1, that many rclone processes copy a share of the
 * files each at the same time (concurrent clients, and a quarter of the time),
 * then one plain copy must find nothing left to transfer and adds the empty
 * folders.
 */
async function copyTree(src: string, dst: string, files: string[], shards: number): Promise<number> {
  const t0 = Date.now();
  const common = ['--create-empty-src-dirs', '--transfers', '4', '--stats', '0'];
  if (shards > 1) {
    const lists = Array.from({ length: shards }, () => [] as string[]);
    for (const [i, f] of files.entries()) lists[i % shards]!.push(f);
    await Promise.all(
      lists.map((list, i) => {
        const listFile = join(work, `shard-${Date.now()}-${i}.txt`);
        writeFileSync(listFile, list.join('\n') + '\n');
        return rc().ok(['copy', src, dst, '--files-from-raw', listFile, '--transfers', '4', '--stats', '0'], {
          timeoutMs: COPY_TIMEOUT_MS,
        });
      }),
    );
    const last = await rc().ok(['copy', src, dst, ...common, '-v'], { timeoutMs: COPY_TIMEOUT_MS });
    expect(last.stderr, 'the final copy found files the shards missed').not.toMatch(/: Copied/);
  } else {
    await rc().ok(['copy', src, dst, ...common], { timeoutMs: COPY_TIMEOUT_MS });
  }
  return Date.now() - t0;
}

function roundTrip(m: Mode) {
  describe(m.label, () => {
    let tree: Tree;
    let model: Model;
    let repo = '';
    const up = (p = '') => `${m.root()}${m.root().endsWith(':') ? '' : '/'}up${p ? '/' + p : ''}`;
    const local = (p: string) => join(tree.root, p);

    beforeAll(() => {
      const t0 = Date.now();
      tree = generateTree(mkdtempSync(join(work, 'src-')), m.seed, SMALL_FILES, m.bigSize);
      model = new Model(tree);
      console.log(`[${m.label}] generated ${tree.files.length} files in ${Date.now() - t0} ms`);
    });

    it('mkdir creates folders (and, with all libraries, the library)', async () => {
      if (m.allLibraries) {
        expect(await libraryId(m.libName)).toBeUndefined();
        await rc().ok(['mkdir', m.root()]);
        const libs = await rc().lsjson('all:');
        expect(libs.filter((l) => l.IsDir).map((l) => l.Path)).toContain(m.libName);
      } else {
        const r = await api('/api2/repos/', { method: 'POST', body: new URLSearchParams({ name: m.libName }) });
        expect(r.status).toBe(200);
      }
      repo = (await libraryId(m.libName))!;
      expect(repo).toMatch(/^[0-9a-f-]{36}$/);

      await rc().ok(['mkdir', `${m.root()}${m.allLibraries ? '/' : ''}made/sub dir/日本 é`]);
      const listed = await listDir(repo, '/made/sub dir');
      expect(listed.status).toBe(200);
      expect(listed.entries.map((e) => [e.type, e.name])).toEqual([['dir', '日本 é']]);
      // mkdir of an existing folder is a quiet success, not a "日本 é (1)"
      await rc().ok(['mkdir', `${m.root()}${m.allLibraries ? '/' : ''}made/sub dir/日本 é`]);
      expect((await listDir(repo, '/made/sub dir')).entries.map((e) => e.name)).toEqual(['日本 é']);
      const items = await rc().lsjson(`${m.root()}${m.allLibraries ? '/' : ''}made`, ['-R']);
      expect(sortedDirs(items)).toEqual(['sub dir', 'sub dir/日本 é']);
    });

    it(
      `copy uploads ${SMALL_FILES + 1} files incl. ${m.bigSize / MiB} MiB`,
      async () => {
        const ms = await copyTree(
          tree.root,
          up(),
          tree.files.map((f) => f.path),
          m.shardsUp,
        );
        const mb = tree.files.reduce((s, f) => s + f.size, 0) / MiB;
        // informational: the server's peak resident memory so far (the bench script owns the limit)
        const hwm = /VmHWM:\s*(\d+) kB/.exec(readFileSync(`/proc/${server!.pid}/status`, 'utf8'))?.[1];
        console.log(
          `[${m.label}] rclone copy up (${m.shardsUp} process(es)): ${tree.files.length} files, ${mb.toFixed(1)} MiB in ${ms} ms;` +
            ` server peak RSS ${hwm ? Math.round(Number(hwm) / 1024) : '?'} MiB`,
        );
      },
      COPY_TIMEOUT_MS + 60_000,
    );

    for (const fast of [false, true]) {
      it(`lsjson -R${fast ? ' --fast-list' : ''} matches the tree`, async () => {
        const items = await rc().lsjson(up(), ['-R', ...(fast ? ['--fast-list'] : [])]);
        expect(sortedFiles(items)).toEqual(model.expectedFiles());
        expect(sortedDirs(items)).toEqual([...model.dirs].sort());
      });
    }

    it("the server's own API shows every file with its size", async () => {
      for (const dir of ['', ...tree.dirs]) {
        const { status, entries } = await listDir(repo, `/up${dir ? '/' + dir : ''}`);
        expect(status, `listing /up/${dir}`).toBe(200);
        const prefix = dir ? dir + '/' : '';
        const wantFiles = tree.files
          .filter((f) => f.path.startsWith(prefix) && !f.path.slice(prefix.length).includes('/'))
          .map((f) => [f.path.slice(prefix.length), f.size])
          .sort();
        const gotFiles = entries
          .filter((e) => e.type === 'file')
          .map((e) => [e.name, e.size])
          .sort();
        expect(gotFiles, `files of /up/${dir}`).toEqual(wantFiles);
        const wantDirs = tree.dirs
          .filter((d) => d.startsWith(prefix) && d.length > prefix.length && !d.slice(prefix.length).includes('/'))
          .map((d) => d.slice(prefix.length))
          .sort();
        expect(
          entries
            .filter((e) => e.type === 'dir')
            .map((e) => e.name)
            .sort(),
          `folders of /up/${dir}`,
        ).toEqual(wantDirs);
      }
      const detail = await api(`/api2/repos/${repo}/file/detail/?p=${encodeURIComponent('/up/' + tree.big.path)}`);
      expect(detail.status).toBe(200);
      expect(detail.body.size).toBe(tree.big.size);
    });

    it('cat --offset/--count returns exactly the requested bytes', async () => {
      const big = tree.big;
      const size = big.size;
      const small = tree.files.find((f) => f.size > 10_000 && f.size < 40_000)!;
      const cases: Array<{ file: typeof big; offset: number; count?: number }> = [
        { file: big, offset: 0, count: 4096 },
        { file: big, offset: Math.floor(size / 2) - 777, count: MiB + 13 },
        { file: big, offset: 1, count: 1 },
        { file: big, offset: size - 100, count: 100 },
        { file: big, offset: size - 10, count: 50 }, // past the end: clamped to 10 bytes
        { file: big, offset: -5000 }, // from the end
        { file: small, offset: 123 },
        { file: small, offset: 0 },
      ];
      for (const c of cases) {
        const args = ['cat', up(c.file.path), '--offset', String(c.offset)];
        if (c.count !== undefined) args.push('--count', String(c.count));
        const r = await rc().ok(args);
        const start = c.offset < 0 ? c.file.size + c.offset : c.offset;
        const count = c.count ?? c.file.size - start;
        const want = await readSlice(local(c.file.path), start, count);
        expect(r.stdout.length, `length at ${c.offset}+${c.count}`).toBe(want.length);
        expect(r.stdout.equals(want), `bytes at ${c.offset}+${c.count}`).toBe(true);
        expect(r.stderr).not.toContain(RANGE_IGNORED);
      }
      const empty = tree.files.find((f) => f.size === 0)!;
      expect((await rc().ok(['cat', up(empty.path)])).stdout.length).toBe(0);
    });

    it(
      'copy back down is byte-identical',
      async () => {
        const dl = mkdtempSync(join(work, 'dl-'));
        const ms = await copyTree(
          up(),
          dl,
          tree.files.map((f) => f.path),
          m.shardsDown,
        );
        console.log(`[${m.label}] rclone copy down (${m.shardsDown} process(es)) in ${ms} ms`);
        const got = walk(dl);
        expect([...got.files].sort((a, b) => (a[0] < b[0] ? -1 : 1))).toEqual(model.expectedFiles());
        expect([...got.dirs].sort()).toEqual([...model.dirs].sort());
        for (const f of tree.files) {
          expect(await sha256File(join(dl, f.path)), f.path).toBe(f.sha256);
        }
        rmSync(dl, { recursive: true, force: true });
      },
      COPY_TIMEOUT_MS + 60_000,
    );

    it('moveto renames and moves files and folders', async () => {
      const inDir = (d: string) =>
        tree.files.filter((f) => f.size > 0 && f.path.startsWith(d + '/') && !f.path.slice(d.length + 1).includes('/'));
      const catSha = async (p: string) => {
        const { createHash } = await import('node:crypto');
        return createHash('sha256')
          .update((await rc().ok(['cat', up(p)])).stdout)
          .digest('hex');
      };

      // 1. rename inside a folder
      const a = inDir('docs')[0]!;
      const aTo = 'docs/renamed é ü.txt';
      await rc().ok(['moveto', up(a.path), up(aTo)]);
      model.moveFile(a.path, aTo);
      // 2. move to a folder that does not exist yet, under another name
      const b = inDir('日本')[0]!;
      const bTo = 'moved/deeper 日本/new name.bin';
      await rc().ok(['moveto', up(b.path), up(bTo)]);
      model.moveFile(b.path, bTo);
      // 3. move onto an existing file of another size: it is replaced, no "name (1)" is left behind
      const pool = inDir('docs/a b c');
      const c = pool[0]!;
      const target = pool.find((f) => f.size !== c.size && f !== c)!;
      await rc().ok(['moveto', up(c.path), up(target.path)]);
      model.files.delete(target.path);
      model.moveFile(c.path, target.path);
      // 4. move a folder elsewhere under a new name, 5. rename a folder in place
      await rc().ok(['moveto', up('deep/1'), up('relocated/one é')]);
      model.moveDir('deep/1', 'relocated/one é');
      await rc().ok(['moveto', up('mixed'), up('mixed renamed')]);
      model.moveDir('mixed', 'mixed renamed');

      const items = await rc().lsjson(up(), ['-R']);
      expect(sortedFiles(items)).toEqual(model.expectedFiles());
      expect(sortedDirs(items)).toEqual([...model.dirs].sort());
      for (const p of [aTo, bTo, target.path]) expect(await catSha(p), p).toBe(model.files.get(p)!.sha256);
      const moved = [...model.files.keys()].find(
        (p) => p.startsWith('relocated/one é/') && model.files.get(p)!.size > 0,
      )!;
      expect(await catSha(moved)).toBe(model.files.get(moved)!.sha256);
      // the server agrees: old paths gone, new ones there
      expect((await listDir(repo, '/up/deep/1')).status).toBe(404);
      expect((await listDir(repo, '/up/relocated/one é/2/3/4/5')).entries.map((e) => e.name)).toContain('6');
      const gone = await api(`/api2/repos/${repo}/file/detail/?p=${encodeURIComponent('/up/' + c.path)}`);
      expect(gone.status).toBe(404);
    });

    it('delete removes files, rmdir removes only empty folders, purge removes trees', async () => {
      await rc().ok(['delete', up('zeros')]);
      expect(await rc().lsjson(up('zeros'))).toEqual([]);
      for (const p of [...model.files.keys()]) if (p.startsWith('zeros/')) model.files.delete(p);

      await rc().ok(['rmdir', up('zeros')]);
      model.dirs.delete('zeros');
      expect((await listDir(repo, '/up/zeros')).status).toBe(404);

      const refused = await rc().run(['rmdir', up('docs')]);
      expect(refused.code).not.toBe(0);
      expect((await listDir(repo, '/up/docs')).status).toBe(200);

      await rc().ok(['purge', up('docs')]);
      model.removeTree('docs');
      expect((await listDir(repo, '/up/docs')).status).toBe(404);

      await rc().ok(['rmdir', up('empty dir')]);
      model.dirs.delete('empty dir');

      const items = await rc().lsjson(up(), ['-R', '--fast-list']);
      expect(sortedFiles(items)).toEqual(model.expectedFiles());
      expect(sortedDirs(items)).toEqual([...model.dirs].sort());
    });

    if (m.allLibraries) {
      it('moveto across libraries, purge and rmdir of whole libraries', async () => {
        const f = [...model.files].find(([, v]) => v.size > 1000)!;
        const dst = `all:${LIB_NAME}/from other library/${f[0].split('/').pop()}`;
        await rc().ok(['moveto', up(f[0]), dst]);
        const { createHash } = await import('node:crypto');
        expect(
          createHash('sha256')
            .update((await rc().ok(['cat', dst])).stdout)
            .digest('hex'),
        ).toBe(f[1].sha256);
        model.files.delete(f[0]);
        expect(sortedFiles(await rc().lsjson(up(), ['-R']))).toEqual(model.expectedFiles());

        // a whole folder into the other library (rename + sync-batch-move-item across libraries)
        const dir = 'spaces  double';
        const inDir = [...model.files].filter(([p]) => p.startsWith(dir + '/'));
        expect(inDir.length).toBeGreaterThan(3);
        await rc().ok(['moveto', up(dir), `all:${LIB_NAME}/cross é/${dir}`]);
        const there = await rc().lsjson(`all:${LIB_NAME}/cross é/${dir}`, ['-R']);
        expect(sortedFiles(there)).toEqual(
          inDir
            .map(([p, v]): [string, number] => [p.slice(dir.length + 1), v.size])
            .sort((a, b) => (a[0] < b[0] ? -1 : 1)),
        );
        model.removeTree(dir);
        expect(sortedFiles(await rc().lsjson(up(), ['-R']))).toEqual(model.expectedFiles());

        const libs = (await rc().lsjson('all:')).map((l) => l.Path);
        expect(libs).toEqual(expect.arrayContaining([LIB_NAME, ALL_LIB_NAME]));

        await rc().ok(['purge', m.root()]);
        expect(await libraryId(m.libName)).toBeUndefined();

        await rc().ok(['mkdir', 'all:compat empty']);
        expect(await libraryId('compat empty')).toBeDefined();
        await rc().ok(['rmdir', 'all:compat empty']);
        expect(await libraryId('compat empty')).toBeUndefined();
      });
    }
  });
}

roundTrip({
  label: 'library mode',
  bigSize: 200 * MiB,
  seed: 1,
  root: () => 'lib:',
  libName: LIB_NAME,
  allLibraries: false,
  // the canonical single `rclone copy` up; the way down is split to keep this file near 3 minutes
  shardsUp: 1,
  shardsDown: 4,
});
roundTrip({
  label: 'all-libraries mode',
  bigSize: 64 * MiB,
  seed: 2,
  root: () => `all:${ALL_LIB_NAME}`,
  libName: ALL_LIB_NAME,
  allLibraries: true,
  shardsUp: 4,
  shardsDown: 4,
});
