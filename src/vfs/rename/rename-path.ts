// rename(2) as the vfs takes it: the hidden folders' own moves (a restore
// out of .seafile-trash), then folders made here and not yet on the server
// waited for, the move itself (rename/renamer.ts), and pinned files following it.
import { errnoOf, VfsError } from '../errors.js';
import type { VfsComponents } from '../components.js';
import { parentOf } from '../common/paths.js';

export async function renamePath(
  c: Pick<VfsComponents, 'hiddenDirs' | 'writeBack' | 'renamer' | 'pins' | 'libraries'>,
  src: string,
  dst: string,
): Promise<void> {
  if (await c.hiddenDirs.rename(src, dst)) return;
  if (c.writeBack.folders.size > 0) await foldersReady(c, src, dst);
  await c.renamer.rename(src, dst);
  if (c.pins.any) await c.pins.moved(src, dst);
}

/** A rename from or into a folder made here waits until the server holds it (then it moves as any other). */
async function foldersReady(
  c: Pick<VfsComponents, 'writeBack' | 'libraries'>,
  src: string,
  dst: string,
): Promise<void> {
  const a = await c.libraries.resolve(src);
  const b = await c.libraries.resolve(dst);
  try {
    if (a.repo !== null) await c.writeBack.folders.readyWithin(a.repo, a.path);
    if (b.repo !== null && b.path !== '/') await c.writeBack.folders.ready(b.repo, parentOf(b.path));
  } catch (e) {
    throw new VfsError(errnoOf(e), `a folder made here is not on the server yet: ${(e as Error).message}`, {
      cause: e,
    });
  }
}
