// GET /api2/repos/{id}/thumbnail/?p=PATH&size=N, answered as seahub 10 does
// (api2/views.py ThumbnailView, thumbnail/utils.py generate_thumbnail): the
// picture scaled to fit size x size (never up, aspect kept) as PNG, made once
// per file id and size and then served from memory. Checks, in seahub's
// order: library (404), size (400 "Size is missing." / "Invalid size."), path
// (400 "Wrong path." unless it names a file), encrypted library (403
// "Permission denied."), file over 30 MB (400 "Invalid argument"), picture
// over 256 MB as RGBA (403 "Forbidden"), not a picture it decodes (400
// "Invalid argument"); and before them all, 406 to an Accept header without
// JSON, as Django REST framework answers it. A JPEG is turned upright by its
// EXIF orientation. Pillow reads more formats than JPEG and PNG (GIF, BMP,
// TIFF, ...): serve answers those 400 as it would a text file.
import { buffer } from 'node:stream/consumers';
import { LRUCache } from 'lru-cache';
import type { Ctx, Req } from '../context.js';
import { HttpError } from '../http.js';
import type { Route } from '../router.js';
import { getEntry } from '../store/library-changes.js';
import { readImageHeader } from './thumbnail-image.js';
import { render } from './thumbnail-render.js';

/** seahub's THUMBNAIL_IMAGE_SIZE_LIMIT (MB of file) and THUMBNAIL_IMAGE_ORIGINAL_SIZE_LIMIT (MB of RGBA pixels) */
export const THUMBNAIL_FILE_LIMIT = 30 * 1024 ** 2;
export const THUMBNAIL_PIXEL_LIMIT_MB = 256;

/** Thumbnails made, by file id and size: seahub keeps them on disk under the file id (THUMBNAIL_ROOT/size/id). */
const made = new WeakMap<Ctx, LRUCache<string, Buffer>>();

function cacheOf(ctx: Ctx): LRUCache<string, Buffer> {
  let c = made.get(ctx);
  if (!c)
    made.set(ctx, (c = new LRUCache<string, Buffer>({ maxSize: 64 * 1024 ** 2, sizeCalculation: (b) => b.length })));
  return c;
}

/** Python's int() of a query value: surrounding blanks, a sign and digits (with single underscores between). */
function pythonInt(v: string): number | null {
  return /^\s*[+-]?\d+(_\d+)*\s*$/.test(v) ? Number(v.replace(/_/g, '')) : null;
}

async function makeThumbnail(ctx: Ctx, fileId: string, fileSize: number, size: number): Promise<Buffer> {
  const invalid = () => new HttpError(400, 'Invalid argument');
  if (fileSize > THUMBNAIL_FILE_LIMIT) throw invalid();
  const bytes = fileSize === 0 ? Buffer.alloc(0) : await buffer(await ctx.blocks.open(fileId, 0, fileSize - 1));
  const head = readImageHeader(bytes);
  if (!head) throw invalid();
  if ((head.width * head.height * 4) / 1024 / 1024 > THUMBNAIL_PIXEL_LIMIT_MB) throw new HttpError(403, 'Forbidden');
  // Pillow fails to resize to nothing; seahub's catch-all answers 400 for that and for a picture that does not decode
  if (size < 1) throw invalid();
  return render(bytes, head.format, size).catch(() => {
    throw invalid();
  });
}

/**
 * Whether an Accept header lets Django REST framework answer with its one
 * renderer (seahub's settings name JSONRenderer only): it negotiates before
 * the view runs, so asking for `image/*` is 406 although this view answers an image.
 */
function acceptsJson(accept: string | undefined): boolean {
  if (!accept?.trim()) return true;
  return accept.split(',').some((range) => {
    const type = range.split(';')[0].trim().toLowerCase();
    return type === '*/*' || type === 'application/*' || type === 'application/json';
  });
}

async function thumbnail(ctx: Ctx, r: Req): Promise<void> {
  if (!acceptsJson(r.raw.headers.accept))
    throw new HttpError(406, 'Could not satisfy the request Accept header.', {
      detail: 'Could not satisfy the request Accept header.',
    });
  const user = r.user!;
  const { repo } = ctx.repoFor(user, r.params[0]);
  const sizeArg = r.query.get('size');
  if (sizeArg === null) throw new HttpError(400, 'Size is missing.');
  const size = pythonInt(sizeArg);
  if (size === null) throw new HttpError(400, 'Invalid size.');
  const p = r.query.get('p');
  const e = p ? await getEntry(ctx, repo.id, p).catch(() => null) : null;
  if (e?.type !== 'file') throw new HttpError(400, 'Wrong path.');
  if (repo.encrypted) throw new HttpError(403, 'Permission denied.');
  const key = `${size}/${e.id}`;
  const cache = cacheOf(ctx);
  let png = cache.get(key);
  if (!png) {
    png = await makeThumbnail(ctx, e.id, e.size, size);
    cache.set(key, png);
  }
  // seahub's HttpResponse(thumbnail, 'image/png'): no caching headers
  r.res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': png.length });
  r.res.end(png);
}

export const thumbnailRoutes: Route[] = [
  { method: 'GET', path: '/api2/repos/:repo/thumbnail', auth: 'user', handler: thumbnail },
];
