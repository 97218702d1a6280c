// Checks of what a mount wrote, made through the web API rather than through
// the mount: a file's sha256 via downloadLink + download, and whole trees
// (names, kinds and contents) against a local source folder.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import type { SeafileClient } from '../../src/client/client.js';
import type { DirEntry } from '../../src/client/types.js';

export function sha256(b: Buffer | string): string {
  return createHash('sha256').update(b).digest('hex');
}

export async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** The sha256 and size of a file as the server serves it (streamed, never buffered whole). */
export async function remoteSha(api: SeafileClient, repo: string, p: string): Promise<{ sha: string; size: number }> {
  // a reusable link: a one-time one is spent by a refusal for want of the library's password (as on real
  // servers), and the client's resend after unlocking again would find it gone
  const link = await api.downloadLink(repo, p, { reuse: true });
  const res = await api.download(link.url, undefined, { repoId: repo });
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of res.body) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha: h.digest('hex'), size };
}

/** A small file's content as the server serves it. */
export async function remoteBytes(api: SeafileClient, repo: string, p: string): Promise<Buffer> {
  const link = await api.downloadLink(repo, p, { reuse: true }); // see remoteSha
  const res = await api.download(link.url, undefined, { repoId: repo });
  const parts: Buffer[] = [];
  for await (const chunk of res.body) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** Asserts the server's copy of `remotePath` has the sha256 of `local` (a path or the expected bytes). */
export async function expectRemoteFile(
  api: SeafileClient,
  repo: string,
  remotePath: string,
  local: string | Buffer,
): Promise<void> {
  const want = typeof local === 'string' ? await sha256File(local) : sha256(local);
  const got = await remoteSha(api, repo, remotePath);
  expect(got.sha, `sha256 of ${remotePath} through the API`).toBe(want);
}

/** Names in a folder on the server, or null when the folder does not exist. */
/** The entries of a folder on the server (a full listing: never "up to date"). */
export async function remoteEntries(api: SeafileClient, repo: string, dir: string): Promise<DirEntry[]> {
  const l = await api.listDir(repo, dir);
  if (l.uptodate) throw new Error('unexpected uptodate');
  return l.entries;
}

export async function remoteNames(api: SeafileClient, repo: string, dir: string): Promise<string[] | null> {
  try {
    return (await remoteEntries(api, repo, dir)).map((e) => e.name).sort();
  } catch (e) {
    if ((e as { kind?: string }).kind === 'not_found') return null;
    throw e;
  }
}

/** Whether a path exists on the server (file or folder). */
export async function remoteExists(api: SeafileClient, repo: string, p: string): Promise<boolean> {
  const parent = path.posix.dirname(p);
  const names = await remoteNames(api, repo, parent);
  return !!names && names.includes(path.posix.basename(p));
}

export type TreeMap = Map<string, 'dir' | { size: number }>;

/** Every file and folder under `root` on the server, keyed by relative path. */
export async function remoteTree(api: SeafileClient, repo: string, root: string): Promise<TreeMap> {
  const out: TreeMap = new Map();
  const walk = async (dir: string, rel: string) => {
    const l = await api.listDir(repo, dir);
    if (l.uptodate) throw new Error('unexpected uptodate');
    for (const e of l.entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.type === 'dir') {
        out.set(r, 'dir');
        await walk(path.posix.join(dir, e.name), r);
      } else out.set(r, { size: e.size ?? -1 });
    }
  };
  await walk(root, '');
  return out;
}

/** Every file and folder under a local folder (symlinks are reported, not followed). */
export async function localTree(root: string): Promise<TreeMap & Map<string, 'dir' | 'symlink' | { size: number }>> {
  const out = new Map<string, 'dir' | 'symlink' | { size: number }>();
  const walk = async (dir: string, rel: string) => {
    for (const name of await readdir(dir)) {
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(path.join(dir, name));
      if (st.isSymbolicLink()) out.set(r, 'symlink');
      else if (st.isDirectory()) {
        out.set(r, 'dir');
        await walk(path.join(dir, name), r);
      } else out.set(r, { size: st.size });
    }
  };
  await walk(root, '');
  return out as never;
}

/**
 * Asserts the server's folder `remoteDir` holds exactly the tree of `localDir`:
 * the same relative paths, kinds and sizes, and every file's sha256 equal.
 * Returns the number of files compared.
 */
export async function expectRemoteTree(
  api: SeafileClient,
  repo: string,
  remoteDir: string,
  localDir: string,
): Promise<number> {
  const local = await localTree(localDir);
  const symlinks = [...local].filter(([, v]) => v === 'symlink').map(([k]) => k);
  expect(symlinks, 'the source tree must not hold symlinks (the API has none)').toEqual([]);
  const remote = await remoteTree(api, repo, remoteDir);
  const kinds = (m: Map<string, unknown>) =>
    [...m].map(([k, v]) => `${k} ${v === 'dir' ? 'dir' : `file ${(v as { size: number }).size}`}`).sort();
  const remoteKinds = kinds(remote);
  const localKinds = kinds(local);
  if (JSON.stringify(remoteKinds) !== JSON.stringify(localKinds)) {
    // a file of another size: where its bytes part is the clue to why (a few small ones, fetched once)
    const why: string[] = [];
    for (const [rel, v] of local) {
      const r = remote.get(rel);
      if (why.length >= 3 || typeof v !== 'object' || typeof r !== 'object' || r.size === v.size || v.size > 1 << 16)
        continue;
      const theirs = await remoteBytes(api, repo, path.posix.join(remoteDir, rel)).catch((e: Error) => e);
      if (theirs instanceof Error) continue;
      const ours = await readFile(path.join(localDir, rel));
      let at = 0;
      while (at < ours.length && at < theirs.length && ours[at] === theirs[at]) at++;
      const around = (b: Buffer) => JSON.stringify(b.subarray(Math.max(0, at - 16), at + 16).toString('latin1'));
      why.push(
        `${rel}: server ${theirs.length} B, local ${ours.length} B, first differ at ${at}: server ${around(theirs)}, local ${around(ours)}`,
      );
    }
    expect(remoteKinds, `tree of ${remoteDir} through the API\n${why.join('\n')}`).toEqual(localKinds);
  }
  let n = 0;
  for (const [rel, v] of local) {
    if (v === 'dir' || v === 'symlink') continue;
    await expectRemoteFile(api, repo, path.posix.join(remoteDir, rel), path.join(localDir, rel));
    n++;
  }
  return n;
}

/**
 * Waits (polling, up to `timeoutMs`) until the server's copy of `remotePath`
 * has the sha256 of `local`: uploads run in the background after close().
 */
export async function waitRemoteFile(
  api: SeafileClient,
  repo: string,
  remotePath: string,
  local: string | Buffer,
  timeoutMs = 60_000,
): Promise<void> {
  const want = typeof local === 'string' ? await sha256File(local) : sha256(local);
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const got = await remoteSha(api, repo, remotePath);
      if (got.sha === want) return;
      last = `sha ${got.sha.slice(0, 12)}, ${got.size} bytes`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(last, `${remotePath} through the API after ${timeoutMs} ms (want sha ${want.slice(0, 12)})`).toBe(
    'the same content',
  );
}

/** Waits until `p` is gone (or present, with `present`) on the server. */
export async function waitRemoteExists(
  api: SeafileClient,
  repo: string,
  p: string,
  present: boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await remoteExists(api, repo, p)) !== present) {
    if (Date.now() > deadline) {
      expect(
        await remoteExists(api, repo, p),
        `${p} ${present ? 'present' : 'absent'} on the server after ${timeoutMs} ms`,
      ).toBe(present);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Downloads the server's folder `remoteDir` into the local folder `localDir` through the API. */
export async function downloadTree(
  api: SeafileClient,
  repo: string,
  remoteDir: string,
  localDir: string,
): Promise<number> {
  const { mkdir, writeFile } = await import('node:fs/promises');
  const tree = await remoteTree(api, repo, remoteDir);
  await mkdir(localDir, { recursive: true });
  let n = 0;
  for (const [rel, v] of [...tree].sort(([a], [b]) => a.localeCompare(b))) {
    const dst = path.join(localDir, rel);
    if (v === 'dir') await mkdir(dst, { recursive: true });
    else {
      await writeFile(dst, await remoteBytes(api, repo, path.posix.join(remoteDir, rel)));
      n++;
    }
  }
  return n;
}
