// What the face's own operation modules (attributes/, open/) take: the parts
// components.ts built, the table of open handles, and the two optional
// features the face builds itself (null when off).
import type { VfsComponents } from './components.js';
import type { HandleTable } from './handles.js';
import type { Symlinks } from './links/symlinks.js';
import type { OfficeLockFiles } from './locks/office-lock-files.js';

export interface VfsCore {
  parts: VfsComponents;
  handles: HandleTable;
  /** symbolic links as NAME.rclonelink files (links/symlinks.ts); null: --links is off */
  links: Symlinks | null;
  /** Office programs' lock files lock their documents on the server; null: off */
  officeLocks: OfficeLockFiles | null;
}

/** tells the Office lock files of a namespace change at `p` (never fails the operation) */
export async function officeChange(core: VfsCore, p: string, how: 'created' | 'removed'): Promise<void> {
  if (!core.officeLocks) return;
  const loc = await core.parts.libraries.resolve(p).catch(() => null);
  if (loc?.repo) await core.officeLocks[how](loc.repo, loc.path);
}
