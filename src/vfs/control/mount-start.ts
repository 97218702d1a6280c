// A mount's start, once its parts are built: the library chosen (and unlocked),
// the caches opened, the files an earlier mount left taken over for upload,
// and the server's pushed changes followed.
import type { Library } from '../../client/types.js';
import type { VfsComponents, VfsOptions } from '../components.js';

export async function startMount(parts: VfsComponents, opts: VfsOptions): Promise<void> {
  const lib = opts.library !== undefined ? await parts.libraries.choose(opts.library) : null;
  if (lib?.encrypted && opts.libraryPassword) await parts.locks.unlock(lib, await opts.libraryPassword(lib));
  await parts.writeBack.init();
  await parts.chunkCache?.init();
  await parts.mtimes.init(parts.api);
  await parts.pins.init((repo) => !lib || repo === lib.id, !lib);
  const recovered = await parts.writeBack.recover((repo) => (lib ? repo === lib.id : true));
  if (recovered) parts.log(`recovered ${recovered} file(s) left by an earlier mount; uploading them`);
  followChanges(parts, lib);
}

/** the mounted library's changes, or every library's the account has at the start */
function followChanges(parts: VfsComponents, lib: Library | null): void {
  if (!parts.live.available) return;
  if (lib) return parts.live.start([lib.id]);
  // asked directly: the mount's own list of libraries keeps its cache time from its first real use
  parts.api.listLibraries().then(
    (all) => parts.live.start([...new Set(all.map((l) => l.id))]),
    () => parts.log('notifications: the library list is unavailable; changes made elsewhere are polled'),
  );
}
