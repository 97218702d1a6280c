// Path helpers for slash-separated absolute paths ('/', '/a', '/a/b').
import { VfsError } from '../errors.js';

export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

export function baseOf(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

export function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** true when `p` is `dir` itself or inside it */
export function isWithin(p: string, dir: string): boolean {
  return dir === '/' || p === dir || p.startsWith(dir + '/');
}

export function splitPath(p: string): string[] {
  return p.split('/').filter((s) => s.length > 0);
}

/**
 * `p` in Unicode NFC. Both real fileservers and seafile's tree operations
 * store every name NFC-normalised (an "e" + U+0301 upload lands as "é"), so
 * the mount takes each path the kernel gives it in that form: both spellings
 * reach the one server entry, and nothing is uploaded under a name the server
 * would then list differently. README "Unicode names" says what this changes.
 */
export function nfc(p: string): string {
  return NOT_ASCII.test(p) ? p.normalize('NFC') : p;
}

const NOT_ASCII = /[\u0080-\uffff]/;

/**
 * A name the mount refuses to create; the FUSE adapter logs it (one line)
 * although EINVAL and ENAMETOOLONG are otherwise ordinary answers.
 */
export class RefusedName extends VfsError {
  readonly loud = true;
}

/**
 * Names the service refuses, checked locally for a precise errno. U+FFFD is
 * what the kernel's bytes become when they are not UTF-8 (fuse-native decodes
 * paths with napi_create_string_utf8): the real bytes are gone, so such a
 * name is refused rather than stored as another one. A backslash is allowed
 * in a file's name (seahub keeps it) although fileservers cut upload names at
 * it: such files are uploaded under a temporary name (write/types.ts
 * uploadsUnderTempName). Folders: see checkFolderName.
 */
export function checkName(name: string): void {
  if (name.includes('\ufffd'))
    throw new RefusedName('EINVAL', `name refused (not valid UTF-8): ${JSON.stringify(name)}`);
  if (Buffer.byteLength(name, 'utf8') > 255)
    throw new RefusedName('ENAMETOOLONG', `name over 255 bytes: ${name.slice(0, 40)}...`);
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new RefusedName('EINVAL', `name refused: ${JSON.stringify(name)}`);
  }
}

/**
 * The C server turns every `\` of the folder it is told to change into `/`
 * (repo-op.c get_canonical_path, for uploads, create, delete, rename, move,
 * mkdir): a change inside a folder named "a\b" happens in "a/b" when there is
 * one (checked on a real CE 10.0: an upload landed there and a delete removed
 * the file there), and fails otherwise. So no folder gets such a name here...
 */
export function checkFolderName(name: string): void {
  if (name.includes('\\')) {
    throw new RefusedName(
      'EINVAL',
      `folder name with a backslash refused (the server would put its content elsewhere): ${name}`,
    );
  }
}

/** ...and nothing is changed inside one the server already holds (`path` within its library). */
export function checkChangeAt(path: string): void {
  const parent = parentOf(path);
  if (parent.includes('\\')) {
    throw new RefusedName(
      'EINVAL',
      `change inside ${parent} refused: the server would make it in ${parent.replace(/\\/g, '/')}`,
    );
  }
}

/**
 * Names the newest seahub refuses in mkdir, create and rename (400 "name
 * invalid."; `is_valid_dirent_name` rejects U+1F300-U+1FAD6, emoji) while
 * older ones (10.0) and uploads take them. A folder so named is created
 * before mkdir answers, so a refusal is an EINVAL the user sees rather than a
 * folder that can never reach the server.
 */
export function serverMayRefuseName(name: string): boolean {
  return /[\u{1F300}-\u{1FAD6}]/u.test(name);
}
