#!/usr/bin/env node
// Fixes fuse-native 2.2.6's C source and rebuilds its binding. Run by seafs's
// postinstall (npm install -g ./seafs-X.tgz, npm ci in a checkout) and by
// scripts/setup; plain Node, no dependencies, so it runs before anything is built.
//
// fuse-native 2.2.6 loses the modification times that touch -d, cp -p, rsync -a
// and tar x set, in two ways:
// - its utimens packs l->atime into both argument slots: the handler gets the
//   access time twice and never the new modification time;
// - it does not set libfuse's flag_utime_omit_ok, so libfuse 2.9 drops every
//   time change that leaves one of the two times alone (UTIME_OMIT): tar x
//   sets only the modification time, and nothing reached the handler;
// - with that flag set, libfuse hands UTIME_NOW and UTIME_OMIT through, and
//   the conversion to milliseconds turns both into the same 1073 ms (touch
//   FILE then set no time): they now reach JS as two values no real time
//   takes (src/fuse/utime.ts reads them).
// And three about extended attributes (seafs's user.seafile.* attributes):
// - once getxattr is implemented, the kernel asks it for security.capability
//   on every write() (file_remove_privs): names outside user.* are answered
//   here in C (ENODATA on get, ENOTSUP on set/remove), never reaching JS;
// - getxattr/listxattr hand JS the caller's buffer, and a value longer than
//   it was copied cut short while its full length was returned (libfuse then
//   replies with bytes past the buffer): JS now always gets a 64 KiB buffer
//   (the kernel's limit) and C answers ERANGE when the caller's is too small;
// - JS wrote a name list past a short buffer (a RangeError in the callback,
//   so no answer until the timeout): the same 64 KiB buffer prevents it.
// A marker string goes into the binary, so that seafs can tell at run time
// which binding it loaded (src/fuse/binding.ts).
//
// The binding is then rebuilt from its bundled source with npm's node-gyp
// against the machine's Node headers (Debian's nodejs: /usr/include/node;
// otherwise node-gyp fetches them). node-gyp-build then loads
// build/Release/fuse.node before the package's prebuilt binary. Idempotent:
// nothing is done when the source is fixed and the build is newer than it.
// A failed build leaves the prebuilt binary (mounts work, times are not kept,
// seafs mount says so) and exits 0: an install must not fail for it.
//
// Usage: node scripts/fix-fuse-native.mjs [FUSE_NATIVE_DIR]
// (default: the fuse-native that this package resolves).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const say = (m) => process.stderr.write(`seafs: ${m}\n`);
// as npm's postinstall, nothing fails the install: seafs mount tells what the unfixed binding loses
const failCode = process.env.npm_lifecycle_event === 'postinstall' ? 0 : 1;
const pkgRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
let dir = process.argv[2];
if (!dir) {
  try {
    dir = dirname(createRequire(join(pkgRoot, 'package.json')).resolve('fuse-native/package.json'));
  } catch {
    say('fuse-native is not installed (npm dependencies missing?)');
    process.exit(failCode);
  }
}
const src = join(dir, 'fuse-native.c');
const built = join(dir, 'build', 'Release', 'fuse.node');
if (!existsSync(src)) {
  say(`${src} is missing (npm dependencies not installed?)`);
  process.exit(failCode);
}

// the marker src/fuse/binding.ts looks for in the loaded binary
const MARKER = 'seafs-fuse-native-fixes: utimens-mtime utime-omit-ok utime-special xattr-guards';
// what builds before utime-special carried: replaced, so the source is rebuilt
const OLD_MARKERS = ['seafs-fuse-native-fixes: utimens-mtime utime-omit-ok xattr-guards'];

let c = readFileSync(src, 'utf8');
const before = c;
const fail = (what) => {
  say(`${src} does not look like fuse-native 2.2.6: its ${what} fix was not applied`);
  process.exit(failCode);
};
c = c.replace('FUSE_UINT64_TO_INTS_ARGV(l->atime, 5)', 'FUSE_UINT64_TO_INTS_ARGV(l->mtime, 5)');
c = c.replace(
  'if (implemented[op_utimens]) ops.utimens = fuse_native_utimens;',
  'if (implemented[op_utimens]) { ops.utimens = fuse_native_utimens; ops.flag_utime_omit_ok = 1; }',
);
if (!c.includes('FUSE_UINT64_TO_INTS_ARGV(l->mtime, 5)') || !c.includes('ops.flag_utime_omit_ok = 1;')) fail('utimens');

// UTIME_NOW and UTIME_OMIT as 2^53 - 2 and 2^53 - 1 ms: exact in a JS number, far past any real time
const specialAnchor = 'FUSE_METHOD_VOID(utimens,';
const special = `// seafs: UTIME_NOW and UTIME_OMIT kept apart (scripts/fix-fuse-native.mjs)
#ifndef UTIME_NOW
#define UTIME_NOW ((1l << 30) - 1l)
#define UTIME_OMIT ((1l << 30) - 2l)
#endif
static uint64_t seafs_utime_ms (const struct timespec* ts) {
  if (ts->tv_nsec == UTIME_OMIT) return 9007199254740991ULL;
  if (ts->tv_nsec == UTIME_NOW) return 9007199254740990ULL;
  return timespec_to_uint64(ts);
}

`;
if (!c.includes('seafs_utime_ms')) {
  const conv = ['l->atime = timespec_to_uint64(&tv[0]);', 'l->mtime = timespec_to_uint64(&tv[1]);'];
  if (!c.includes(specialAnchor) || !conv.every((x) => c.includes(x))) fail('utime-special');
  c = c.replace(specialAnchor, special + specialAnchor);
  for (const x of conv) c = c.replace(x, x.replace('timespec_to_uint64', 'seafs_utime_ms'));
}
if (!c.includes('l->mtime = seafs_utime_ms(&tv[1]);')) fail('utime-special');

// the xattr guards: C functions before the operations table, which then names them
const anchor = 'FUSE_METHOD_VOID(flush, 2, 0,';
const guards = `#ifndef __APPLE__
// seafs: extended attribute guards (scripts/fix-fuse-native.mjs)
#include <errno.h>
#define SEAFS_XATTR_MAX 65536
static int seafs_getxattr (const char *path, const char *name, char *value, size_t size) {
  if (strncmp(name, "user.", 5) != 0) return -ENODATA;
  char *buf = malloc(SEAFS_XATTR_MAX);
  if (buf == NULL) return -ENOMEM;
  int res = fuse_native_getxattr(path, name, buf, SEAFS_XATTR_MAX);
  if (res > SEAFS_XATTR_MAX) res = -E2BIG;
  else if (res >= 0 && size > 0) {
    if ((size_t) res > size) res = -ERANGE;
    else memcpy(value, buf, res);
  }
  free(buf);
  return res;
}
static int seafs_listxattr (const char *path, char *list, size_t size) {
  char *buf = malloc(SEAFS_XATTR_MAX);
  if (buf == NULL) return -ENOMEM;
  int res = fuse_native_listxattr(path, buf, SEAFS_XATTR_MAX);
  if (res > SEAFS_XATTR_MAX) res = -E2BIG;
  else if (res >= 0 && size > 0) {
    if ((size_t) res > size) res = -ERANGE;
    else memcpy(list, buf, res);
  }
  free(buf);
  return res;
}
static int seafs_setxattr (const char *path, const char *name, const char *value, size_t size, int flags) {
  if (strncmp(name, "user.", 5) != 0) return -ENOTSUP;
  return fuse_native_setxattr(path, name, value, size, flags);
}
static int seafs_removexattr (const char *path, const char *name) {
  if (strncmp(name, "user.", 5) != 0) return -ENOTSUP;
  return fuse_native_removexattr(path, name);
}
#else
#define seafs_getxattr fuse_native_getxattr
#define seafs_listxattr fuse_native_listxattr
#define seafs_setxattr fuse_native_setxattr
#define seafs_removexattr fuse_native_removexattr
#endif

`;
if (!c.includes('seafs_getxattr')) {
  if (!c.includes(anchor)) fail('xattr');
  c = c.replace(anchor, guards + anchor);
  for (const op of ['setxattr', 'getxattr', 'listxattr', 'removexattr']) {
    const from = `if (implemented[op_${op}]) ops.${op} = fuse_native_${op};`;
    if (!c.includes(from)) fail('xattr');
    c = c.replace(from, `if (implemented[op_${op}]) ops.${op} = seafs_${op};`);
  }
}
if (!c.includes('ops.getxattr = seafs_getxattr')) fail('xattr');
for (const old of OLD_MARKERS) c = c.replace(old, MARKER);
if (!c.includes(MARKER)) {
  if (!c.includes(anchor)) fail('marker');
  // "used": kept in the binary although nothing reads it
  c = c.replace(anchor, `__attribute__((used)) static const char seafs_fixes_marker[] = "${MARKER}";\n\n${anchor}`);
}
if (c !== before) writeFileSync(src, c);

if (existsSync(built) && statSync(built).mtimeMs > statSync(src).mtimeMs) process.exit(0);

/** npm's node-gyp: npm names it to lifecycle scripts; otherwise the one beside the npm on PATH */
function nodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout?.trim();
  if (npm) {
    const npmDir = join(dirname(realpathSync(npm)), '..');
    candidates.push(join(npmDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  }
  const root = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout?.trim();
  if (root) candidates.push(join(root, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  return candidates.find((p) => p && existsSync(p));
}

const gyp = nodeGyp();
const log = join(tmpdir(), `seafs-fuse-native-build-${process.getuid?.() ?? 0}.log`);
const args = ['rebuild', '--loglevel=error'];
// the machine's Node headers: node-gyp would otherwise download them
for (const d of ['/usr', '/usr/local', join(dirname(process.execPath), '..')]) {
  if (existsSync(join(d, 'include', 'node', 'node_api.h'))) {
    args.push(`--nodedir=${d}`);
    break;
  }
}
say('rebuilding fuse-native with its fixes (modification times, extended attributes)');
const r = gyp
  ? spawnSync(process.execPath, [gyp, ...args], { cwd: dir, encoding: 'utf8' })
  : { status: 1, stdout: '', stderr: 'node-gyp not found (it comes with npm)\n' };
writeFileSync(log, `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`);
if (r.status !== 0 || !existsSync(built)) {
  rmSync(join(dir, 'build'), { recursive: true, force: true });
  say(
    `WARNING: building fuse-native failed (log: ${log}); the prebuilt binding stays: mounts work, but ` +
      'modification times set by touch -d, cp -p, rsync -a and tar x are not kept and the user.seafile.* ' +
      'extended attributes are off. Install a C compiler, make and python3 (Debian: apt-get install g++ make ' +
      `python3), then run: node ${join(pkgRoot, 'scripts', 'fix-fuse-native.mjs')}`,
  );
  process.exit(0);
}
say(`fuse-native rebuilt (${built})`);
