// `seafs --version`: the package's version and the fuse-native build in use
// (fixed or prebuilt, src/fuse/binding.ts). Answered before yargs parses, which
// would otherwise ask for a command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fuseBinding, PACKAGE_ROOT, versionText } from '../fuse/binding.js';

/** true when the arguments ask for the version (before any `--`) */
export function wantsVersion(args: string[]): boolean {
  // a shell completing `seafs ... --version` asks yargs, not for the version
  if (args.includes('--get-yargs-completions')) return false;
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).includes('--version');
}

export function seafsVersion(): string {
  const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
  return versionText(pkg.version, fuseBinding());
}
