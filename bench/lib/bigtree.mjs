// The large tree (issue 15, target 6): many small files in many folders under /big, walked cold by ls -lR, find
// and du -s, each on a fresh mount. It is seeded and run in the first latency section only (seeding 100,000 files
// through the API takes minutes, and rclone walks 2,000 folders at its own pace of about 10 listings a second),
// and once per contender whatever --runs says (--bigtree-runs N overrides).
import { join } from 'node:path';
import { pool } from './api.mjs';
import { contentFor, treeLayout } from './dataset.mjs';
import { dropCaches, rssSampler, run } from './proc.mjs';

export const BIGTREE_ROOT = '/big';
/** file sizes 1 B .. 1 KiB: the listing is what is measured, and 100,000 files stay about 50 MB on the server */
const MAX_SIZE = 1024;
const SEED = 4;

export function bigTreeShape(c) {
  return {
    folders: c.bigTreeFolders,
    files: c.bigTreeFiles,
    memfsArg: `${BIGTREE_ROOT}:${c.bigTreeFolders}:${c.bigTreeFiles}:${SEED}:${MAX_SIZE}`,
  };
}

export const BIGTREE_METRICS = (c) => {
  const what = `${c.bigTreeFiles} files in ${c.bigTreeFolders} folders`;
  const seafsOnly = ['rclone', 'http', 'memfs'];
  return [
    { id: 'big_ls', job: 'bigtree', label: `large tree: ls -lR ${what}, cold`, unit: 's', better: 'lower' },
    {
      id: 'big_find',
      job: 'bigtree',
      label: 'large tree: find -type f, cold',
      unit: 's',
      better: 'lower',
      notFor: ['http'],
    },
    { id: 'big_du', job: 'bigtree', label: 'large tree: du -s, cold', unit: 's', better: 'lower', notFor: ['http'] },
    {
      id: 'rss_bigtree',
      job: 'bigtree',
      label: 'large tree: peak RSS in ls -lR',
      unit: 'MiB',
      better: 'lower',
      notFor: ['http', 'memfs'],
    },
    {
      id: 'meta_entries',
      job: 'bigtree',
      label: 'large tree: metadata cache entries after ls -lR',
      unit: 'entries',
      better: 'lower',
      notFor: seafsOnly,
    },
    {
      id: 'meta_mib',
      job: 'bigtree',
      label: 'large tree: metadata cache size (estimate)',
      unit: 'MiB',
      better: 'lower',
      notFor: seafsOnly,
    },
  ];
};

/** Upload the large tree: one folder per request (mkdir, upload link, one multipart upload of its files). */
export async function seedBigTree(server, c, log) {
  const { api, repo } = server;
  const t0 = Date.now();
  const byFolder = new Map();
  treeLayout(c.bigTreeFolders, c.bigTreeFiles, SEED, MAX_SIZE).forEach((f, i) => {
    if (!byFolder.has(f.folder)) byFolder.set(f.folder, []);
    byFolder.get(f.folder).push({ name: f.name, data: contentFor(i, f.size) });
  });
  let done = 0;
  await pool([...byFolder], 8, async ([folder, files]) => {
    const dir = `${BIGTREE_ROOT}/${folder}`;
    await api.mkdir(repo, dir);
    await api.upload(await api.uploadLink(repo, dir), dir, files);
    if (++done % 250 === 0) log(`large tree: ${done}/${byFolder.size} folders seeded`);
  });
  const { files } = await api.walk(repo, BIGTREE_ROOT, 16);
  if (files.length !== c.bigTreeFiles)
    throw new Error(`seeding ${BIGTREE_ROOT}: server lists ${files.length} files, want ${c.bigTreeFiles}`);
  const s = (Date.now() - t0) / 1000;
  log(`seeded the large tree (${c.bigTreeFiles} files in ${c.bigTreeFolders} folders) in ${s.toFixed(1)} s`);
  return s;
}

const COMMANDS = {
  big_ls: (root) => ['ls', ['-lR', root]],
  big_find: (root) => ['find', [root, '-type', 'f']],
  big_du: (root) => ['du', ['-s', root]],
};

/** Each command on a fresh mount with the page cache dropped; peak RSS and the metadata cache after ls -lR. */
export async function bigTreeJob(contender, ctx) {
  const c = ctx.config;
  const out = {};
  if (contender.http) {
    dropCaches();
    const t0 = Date.now();
    const { files } = await ctx.server.api.walk(ctx.server.repo, BIGTREE_ROOT, 8);
    if (files.length !== c.bigTreeFiles) throw new Error(`listed ${files.length} files, want ${c.bigTreeFiles}`);
    out.big_ls = (Date.now() - t0) / 1000;
    return out;
  }
  for (const [id, command] of Object.entries(COMMANDS)) {
    const h = await contender.mount(ctx, 'read');
    try {
      dropCaches();
      const rss = id === 'big_ls' && h.pid && !h.inMemory ? rssSampler(h.pid) : null;
      const [cmd, args] = command(join(h.path, BIGTREE_ROOT));
      let r;
      try {
        r = await run(cmd, args, { timeoutMs: ctx.timeoutMs, keepStdout: id !== 'big_find' });
      } finally {
        if (rss) out.rss_bigtree = rss.stop();
      }
      if (id === 'big_ls') {
        const n = r.stdout.split('\n').filter((l) => l.startsWith('-')).length;
        if (n !== c.bigTreeFiles) throw new Error(`ls -lR saw ${n} files, want ${c.bigTreeFiles}`);
        if (h.status) {
          const meta = (await h.status()).metaCache;
          if (meta) {
            out.meta_entries = meta.entries;
            out.meta_mib = meta.bytes / 2 ** 20;
            out.x_meta_folders = meta.folders;
          }
        }
      } else if (id === 'big_find' && r.stdoutLines !== c.bigTreeFiles) {
        throw new Error(`find saw ${r.stdoutLines} files, want ${c.bigTreeFiles}`);
      } else if (id === 'big_du') {
        out.x_big_du_kib = Number(r.stdout.split(/\s/)[0]);
      }
      out[id] = r.ms / 1000;
    } finally {
      await h
        .close()
        .catch((err) => process.stderr.write(`bench: ${contender.name}: unmount after ${id} failed: ${err.message}\n`));
    }
  }
  return out;
}
