// A new modification time for a file (touch -d, cp -p, rsync -a, tar x;
// needs the fuse-native fix of scripts/fix-fuse-native, without which the
// atime arrives here). The server stores a time only with content, so the
// file is uploaded (again) with it as last_modify: a clean file is fetched
// and sent back unchanged (the server keeps its blocks once). A time equal
// to the shown one changes nothing (a second rsync -a sends nothing), and
// folders keep the server's times. UTIME_NOW arrives here as the current
// time and UTIME_OMIT never does (src/fuse/utime.ts).
import { VfsError } from '../errors.js';
import { writable } from '../libraries/library-paths.js';
import { localCopy, refuseLocked } from '../copies/editable-copy.js';
import type { VfsComponents } from '../components.js';

/** whole seconds, as the server keeps them */
const seconds = (ms: number) => Math.floor(ms / 1000) * 1000;

/**
 * utimens of a file with local data (tar x sets the time of each file it
 * has just closed), done at once; false: utimens must run.
 */
export function setMtimeNow(c: Pick<VfsComponents, 'libraries' | 'writeBack'>, p: string, mtimeMs: number): boolean {
  const loc = c.libraries.resolveNow(p);
  if (!loc || loc.path === '/' || loc.path.startsWith('/.seafile-')) return false;
  const s = c.writeBack.get(loc.repo, loc.path);
  if (!s) return false;
  const ms = seconds(mtimeMs);
  if (seconds(s.mtime) === ms) return true;
  if (loc.readOnly) return false;
  c.writeBack.setTime(s, ms);
  if (s.writers === 0) c.writeBack.scheduleAfterClose(s);
  return true;
}

export async function setMtime(
  c: Pick<VfsComponents, 'libraries' | 'hiddenDirs' | 'writeBack' | 'reader' | 'unlinked' | 'host'>,
  p: string,
  mtimeMs: number,
): Promise<void> {
  const loc = await c.libraries.resolve(p);
  if (loc.repo === null || loc.path === '/') return;
  await c.hiddenDirs.refuse(loc);
  const { repo, path } = loc;
  const ms = seconds(mtimeMs);
  const s = c.writeBack.get(repo, path);
  if (s) {
    if (seconds(s.mtime) === ms) return;
    writable(loc);
    c.writeBack.setTime(s, ms);
    if (s.writers === 0) c.writeBack.scheduleAfterClose(s);
    return;
  }
  if (c.unlinked.has(repo, path)) return;
  const e = await c.host.lookup(repo, path);
  if (!e) throw new VfsError('ENOENT', p);
  if (e.type === 'dir' || (e.mtime || 0) * 1000 === ms) return;
  writable(loc);
  refuseLocked(p, e);
  const st = await localCopy(c, repo, path, e, false);
  c.writeBack.setTime(st, ms);
  if (st.writers === 0) c.writeBack.scheduleAfterClose(st);
}
