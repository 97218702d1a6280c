// Path helpers for slash-separated absolute paths ('/', '/a', '/a/b').
import { VfsError } from './errors.js';

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

/** Names the service refuses, checked locally for a precise errno. */
export function checkName(name: string): void {
  if (Buffer.byteLength(name, 'utf8') > 255) throw new VfsError('ENAMETOOLONG', name.slice(0, 40));
  if (
    name === '' ||
    name === '.' ||
    name === '..' ||
    name.includes('/') ||
    name.includes('\\') ||
    name.includes('\0')
  ) {
    throw new VfsError('EINVAL', `name refused: ${name}`);
  }
}
