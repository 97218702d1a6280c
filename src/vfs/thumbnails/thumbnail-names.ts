// Where the Thumbnail Managing Standard (freedesktop.org) keeps a file's
// thumbnails: $XDG_CACHE_HOME/thumbnails/{normal,large}/MD5.png, MD5 the hex
// md5 of the file's canonical URI. The URI is escaped as GLib's
// g_filename_to_uri escapes it (what GNOME's file managers hash): every byte
// of the UTF-8 path but letters, digits and !$&'()*+,-./:=@_~ as %XX.
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** the two sizes of the standard: the folder and the box the picture fits in */
export const THUMBNAIL_SIZES = [
  { dir: 'normal', size: 128 },
  { dir: 'large', size: 256 },
] as const;

const KEPT = /[A-Za-z0-9!$&'()*+,\-./:=@_~]/;

/** file:// URI of an absolute path, escaped as GLib does. */
export function fileUri(absPath: string): string {
  let out = 'file://';
  for (const byte of Buffer.from(absPath, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && KEPT.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The thumbnail's file name for a URI: md5 of it, hex, then .png. */
export function thumbnailName(uri: string): string {
  return createHash('md5').update(uri).digest('hex') + '.png';
}

/** $XDG_CACHE_HOME/thumbnails (a relative or empty XDG_CACHE_HOME is ignored, as the XDG spec says). */
export function thumbnailRoot(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homedir(), '.cache'), 'thumbnails');
}
