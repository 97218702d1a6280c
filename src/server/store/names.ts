// Name rules of real servers: what is refused, how names are normalised, and
// how clashes are renamed.
import { HttpError } from '../http.js';
import type { DirEnt } from './tree.js';

/**
 * Refused: empty, `.`, `..`, a slash, NUL, over 255 bytes. A backslash is
 * kept, as seahub keeps it in mkdir, create and rename (checked on a real
 * CE 10.0: `a\b` is stored as is); only uploads cut at it (uploadName).
 */
export function isValidName(name: string): boolean {
  if (!name || name === '.' || name === '..') return false;
  if (name.includes('/') || name.includes('\0')) return false;
  return Buffer.byteLength(name, 'utf8') <= 255;
}

/**
 * A name as real servers store it: NFC. seafile's tree operations (post_dir,
 * post_empty_file, rename, move, copy: rpc-service.c normalize_utf8_path) and
 * both fileservers (upload-file.c, Go norm.NFC) normalise every new name, so
 * an "e" + U+0301 upload is listed as "é" and replaces an "é" already there.
 * Lookups (seahub's `p=`) are not normalised: an NFD path is 404.
 */
export function nfcName(name: string): string {
  return name.normalize('NFC');
}

/** A name of a new entry, checked (400 "name invalid.") and normalised. */
export function checkName(name: string | undefined): string {
  if (name === undefined || !isValidName(name)) throw new HttpError(400, 'name invalid.');
  return nfcName(name);
}

/**
 * The name an upload's file part stores: the C fileserver keeps only what
 * follows the last `/` or `\` of its filename (upload-file.c get_basename,
 * meant for IE's full paths), so "a\b.txt" is stored as "b.txt"; then NFC.
 */
export function uploadName(filename: string): string {
  return nfcName(filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1));
}

/**
 * The folder a change of the C server acts on: every `\` of its path taken
 * for a `/` (repo-op.c and upload-file.c get_canonical_path, for uploads,
 * deletes and mkdir with parents; checked on a real CE 10.0: an upload into
 * "a\b" landed in "a/b", a delete of "a\b/in.txt" removed "a/b/in.txt").
 */
export function canonicalDir(p: string): string {
  return p.replace(/\\/g, '/');
}

/** `name` if free in `entries`, else `name (1).ext`, `name (2).ext`, ... */
export function uniqueName(entries: DirEnt[], name: string): string {
  const taken = new Set(entries.map((e) => e.name));
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf('.');
  const base = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  for (let i = 1; ; i++) {
    const candidate = `${base} (${i})${ext}`;
    if (!taken.has(candidate)) return candidate;
  }
}
