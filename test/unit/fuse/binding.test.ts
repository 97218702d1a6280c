// Which fuse-native binding is in use (src/fuse/binding.ts): the rebuilt one
// with seafs's fixes or the prebuilt one, told by the marker in the binary;
// the mount's warning, `seafs --version`'s text, and the xattrs turned off.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { bindingWarning, fuseBinding, isFixedBinary, rebuildHint, versionText } from '../../../src/fuse/binding.js';
import { checkBinding } from '../../../src/cli/mount/binding-check.js';
import { wantsVersion } from '../../../src/cli/version.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** a package root whose fuse-native has a prebuilt binary and, if given, a build/Release one */
function fakeRoot(built?: string): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'seafs-binding-'));
  dirs.push(root);
  writeFileSync(path.join(root, 'package.json'), '{"name":"x"}');
  const fn = path.join(root, 'node_modules', 'fuse-native');
  mkdirSync(path.join(fn, 'prebuilds', `${process.platform}-${process.arch}`), { recursive: true });
  writeFileSync(path.join(fn, 'package.json'), '{"name":"fuse-native","version":"2.2.6"}');
  writeFileSync(path.join(fn, 'prebuilds', `${process.platform}-${process.arch}`, 'node.napi.node'), 'ELF prebuilt');
  symlinkSync(path.join(ROOT, 'node_modules', 'node-gyp-build'), path.join(root, 'node_modules', 'node-gyp-build'));
  if (built !== undefined) {
    mkdirSync(path.join(fn, 'build', 'Release'), { recursive: true });
    writeFileSync(path.join(fn, 'build', 'Release', 'fuse.node'), built);
  }
  return root;
}

describe('fuse-native binding', () => {
  it('tells the fixed binary by its marker (or an older build by its guard symbol)', () => {
    expect(isFixedBinary(Buffer.from('\0ELF..seafs-fuse-native-fixes: utimens-mtime ...\0'))).toBe(true);
    expect(isFixedBinary(Buffer.from('\0ELF..seafs_getxattr\0'))).toBe(true);
    expect(isFixedBinary(Buffer.from('\0ELF..fuse_native_getxattr\0'))).toBe(false);
  });

  it('names the file node-gyp-build loads: the build when there is one, else the prebuilt one', () => {
    const pre = fuseBinding(fakeRoot());
    expect(pre.kind).toBe('prebuilt');
    expect(pre.file).toMatch(/prebuilds\/.*node\.napi\.node$/);
    expect(pre.version).toBe('2.2.6');
    expect(fuseBinding(fakeRoot('ELF seafs-fuse-native-fixes: utime-omit-ok utime-special\0')).kind).toBe('fixed');
    // an earlier seafs's build: UTIME_NOW and UTIME_OMIT arrive alike, so touch FILE sets no time
    const older = fuseBinding(
      fakeRoot('ELF seafs-fuse-native-fixes: utimens-mtime utime-omit-ok xattr-guards\0utime-special'),
    );
    expect(older.kind).toBe('outdated');
    // a build from the unfixed source (fuse-native's own install script) is no better than the prebuilt one
    const unfixed = fuseBinding(fakeRoot('ELF plain build'));
    expect(unfixed.kind).toBe('prebuilt');
    expect(unfixed.file).toMatch(/build\/Release\/fuse\.node$/);
    const none = mkdtempSync(path.join(os.tmpdir(), 'seafs-binding-'));
    dirs.push(none);
    expect(fuseBinding(none)).toEqual({ kind: 'missing', file: null, version: null });
  });

  it('warns about the prebuilt binding only, saying what is lost and the command that fixes it', () => {
    const info = fuseBinding(fakeRoot());
    const w = bindingWarning(info, 'node /opt/seafs/scripts/fix-fuse-native.mjs')!;
    expect(w).toContain(info.file!);
    expect(w).toContain('modification times set by touch -d, cp -p, rsync -a or tar x are not kept');
    expect(w).toContain('extended attributes are off');
    expect(w).toMatch(/then run: node \/opt\/seafs\/scripts\/fix-fuse-native\.mjs$/);
    expect(bindingWarning(fuseBinding(fakeRoot('seafs-fuse-native-fixes: utime-special')), 'x')).toBeNull();
    const outdated = bindingWarning(fuseBinding(fakeRoot('seafs-fuse-native-fixes: xattr-guards')), 'bash setup')!;
    expect(outdated).toContain('touch FILE');
    expect(outdated).toMatch(/run: bash setup$/);
    // a checkout is fixed by its setup, an installed package by its script
    expect(rebuildHint(ROOT)).toBe(`bash ${ROOT}/scripts/setup`);
    const installed = fakeRoot();
    expect(rebuildHint(installed)).toBe(`node ${installed}/scripts/fix-fuse-native.mjs`);
  });

  it('turns the extended attributes off with the prebuilt binding, leaves them alone with the fixed one', () => {
    const s: { xattrs?: boolean } = { xattrs: true };
    expect(checkBinding(s, fuseBinding(fakeRoot()))).toContain("lacks seafs's fixes");
    expect(s.xattrs).toBe(false);
    const t: { xattrs?: boolean } = { xattrs: true };
    expect(checkBinding(t, fuseBinding(fakeRoot('seafs-fuse-native-fixes: utime-special')))).toBeNull();
    expect(t.xattrs).toBe(true);
    // an earlier fixed build keeps them (its buffers are fixed) and says what it lacks
    const u: { xattrs?: boolean } = { xattrs: true };
    expect(checkBinding(u, fuseBinding(fakeRoot('seafs-fuse-native-fixes: xattr-guards')))).toContain('earlier seafs');
    expect(u.xattrs).toBe(true);
  });

  it('--version prints the version and the build in use', () => {
    expect(versionText('1.2.3', { kind: 'fixed', file: '/x/fuse.node', version: '2.2.6' })).toBe(
      "seafs 1.2.3\nfuse-native 2.2.6: fixed (rebuilt with seafs's fixes), /x/fuse.node",
    );
    expect(versionText('1.2.3', { kind: 'prebuilt', file: '/p.node', version: '2.2.6' })).toContain(
      'fuse-native 2.2.6: prebuilt (without',
    );
    expect(versionText('1.2.3', { kind: 'missing', file: null, version: null })).toBe(
      'seafs 1.2.3\nfuse-native: not found',
    );
    expect(wantsVersion(['--version'])).toBe(true);
    expect(wantsVersion(['mount', '--version'])).toBe(true);
    expect(wantsVersion(['mount', '--', '--version'])).toBe(false);
    expect(wantsVersion(['--get-yargs-completions', 'seafs', '--version'])).toBe(false);
  });
});
