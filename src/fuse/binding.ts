// Which fuse-native binding this process loads: the one rebuilt with seafs's
// fixes (scripts/fix-fuse-native.mjs: modification times, extended attribute
// buffers) or the package's prebuilt one, which loses modification times and
// mishandles long extended attributes. Found without loading it (node-gyp-build
// names the file it would load), so `seafs --version` stays cheap.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** the string scripts/fix-fuse-native.mjs compiles into the binary */
const MARKER = 'seafs-fuse-native-fixes:';
/** a guard's symbol: builds made before the marker existed carry it (not stripped) */
const OLD_MARKER = 'seafs_getxattr';
/** the newest fix's name in the marker: UTIME_NOW and UTIME_OMIT passed apart */
const NEWEST_FIX = 'utime-special';

export interface BindingInfo {
  /**
   * fixed: rebuilt with seafs's fixes; outdated: with the fixes of an earlier
   * seafs (touch FILE sets no time); prebuilt: without them; missing: not found
   */
  kind: 'fixed' | 'outdated' | 'prebuilt' | 'missing';
  /** the .node file node-gyp-build loads */
  file: string | null;
  /** fuse-native's version */
  version: string | null;
}

/** the package root: dist/fuse/binding.js and src/fuse/binding.ts are both two folders down */
export const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Tells a fixed binary from a prebuilt one by the marker it carries. */
export function isFixedBinary(bytes: Buffer): boolean {
  return bytes.includes(MARKER) || bytes.includes(OLD_MARKER);
}

/** A fixed binary with every fix of this seafs (an earlier one's lacks the newest). */
export function isCurrentBinary(bytes: Buffer): boolean {
  const at = bytes.indexOf(MARKER);
  if (at < 0) return false;
  const end = bytes.indexOf(0, at);
  return bytes.subarray(at, end < 0 ? undefined : end).includes(NEWEST_FIX);
}

/** The binding fuse-native resolved from `root` would load. */
export function fuseBinding(root = PACKAGE_ROOT): BindingInfo {
  let dir: string;
  let version: string | null = null;
  try {
    const pkg = createRequire(join(root, 'package.json')).resolve('fuse-native/package.json');
    dir = dirname(pkg);
    version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version ?? null;
  } catch {
    return { kind: 'missing', file: null, version: null };
  }
  let file: string | null = null;
  try {
    const gypBuild = createRequire(join(dir, 'package.json'))('node-gyp-build') as { path(d: string): string };
    file = gypBuild.path(dir);
  } catch {
    // no binary for this platform
  }
  if (!file || !existsSync(file)) return { kind: 'missing', file: null, version };
  const bytes = readFileSync(file);
  const kind = !isFixedBinary(bytes) ? 'prebuilt' : isCurrentBinary(bytes) ? 'fixed' : 'outdated';
  return { kind, file, version };
}

/** How to rebuild: the checkout's setup, or the installed package's script. */
export function rebuildHint(root = PACKAGE_ROOT): string {
  if (existsSync(join(root, '.git'))) return `bash ${join(root, 'scripts', 'setup')}`;
  return `node ${join(root, 'scripts', 'fix-fuse-native.mjs')}`;
}

/** The one warning `seafs mount` gives when the binding lacks the fixes (null: nothing to say). */
export function bindingWarning(info: BindingInfo, hint: string): string | null {
  if (info.kind === 'outdated') {
    return (
      `warning: the fuse-native binding in use (${info.file}) was rebuilt by an earlier seafs: ` +
      'touch FILE (and other changes of a time to "now") leaves the modification time as it is. ' +
      `To fix it, run: ${hint}`
    );
  }
  if (info.kind !== 'prebuilt') return null;
  return (
    `warning: the fuse-native binding in use (${info.file}) lacks seafs's fixes: ` +
    'modification times set by touch -d, cp -p, rsync -a or tar x are not kept (rsync then re-sends every file), ' +
    'and the user.seafile.* extended attributes are off (the prebuilt binding mishandles their buffers). ' +
    `To fix it, install a C compiler, make and python3 (Debian: apt-get install g++ make python3), then run: ${hint}`
  );
}

/** `seafs --version`: the version and the binding in use. */
export function versionText(version: string, info: BindingInfo): string {
  const build =
    info.kind === 'fixed'
      ? "fixed (rebuilt with seafs's fixes)"
      : info.kind === 'outdated'
        ? "outdated (rebuilt with an earlier seafs's fixes: touch sets no time)"
        : "prebuilt (without seafs's fixes: modification times are not kept)";
  const b =
    info.kind === 'missing' ? 'fuse-native: not found' : `fuse-native ${info.version ?? '?'}: ${build}, ${info.file}`;
  return `seafs ${version}\n${b}`;
}
