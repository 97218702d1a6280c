// Builds what the operations of the face take (VfsCore): the parts, the handle
// table, and the two optional features wired to the face's own operations:
// Office lock files (on unless turned off) and symbolic links (--links).
import { constants as C } from 'node:fs';
import { lookupEntry } from './attributes/lookups.js';
import { getattr } from './attributes/path-attrs.js';
import type { VfsComponents, VfsOptions } from './components.js';
import type { VfsCore } from './core.js';
import type { HandleTable } from './handles.js';
import { Symlinks } from './links/symlinks.js';
import { OfficeLockFiles } from './locks/office-lock-files.js';
import { flush, readAt, release, writeState } from './open/handle-io.js';
import { createFile, open } from './open/open-create.js';
import { unlinkFile } from './remove/unlink.js';

export function buildCore(parts: VfsComponents, handles: HandleTable, opts: VfsOptions): VfsCore {
  const core: VfsCore = { parts, handles, links: null, officeLocks: null };
  if (opts.officeLocks !== false)
    core.officeLocks = new OfficeLockFiles({
      api: parts.api,
      // listed afresh: who holds a lock now is not in a cached listing
      entries: async (repo, dir) => (await parts.listingCache.list(repo, dir, true)).entries.values(),
      log: parts.log,
    });
  if (opts.links)
    core.links = new Symlinks({
      resolve: (x) => parts.libraries.resolve(x),
      hidden: async (loc) => (await parts.hiddenDirs.at(loc)) !== null,
      getattr: (x) => getattr(core, x),
      unlink: (x) => unlinkFile(parts, x),
      freshListing: (repo, dir) => {
        const l = parts.listingCache.peek(repo, dir);
        return l && parts.listingCache.fresh(l) ? l : null;
      },
      lookup: (repo, path) => lookupEntry(parts, repo, path),
      state: (repo, path) => parts.writeBack.get(repo, path),
      create: (x) => createFile(core, x),
      open: (x) => open(core, x, C.O_RDONLY),
      read: (_x, fh, buf, len, pos) => readAt(core, fh, buf, len, pos),
      write: async (_x, fh, buf, len, pos) => parts.writeBack.write(writeState(core, fh), buf, len, pos),
      flush: (_x, fh) => flush(core, fh),
      release: (_x, fh) => release(core, fh),
    });
  return core;
}
