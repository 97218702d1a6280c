// The server's thumbnail of a picture (seahub's api2 ThumbnailView): the
// server reads and scales the picture itself, so a client gets a small image
// without downloading the file.
import { ApiError } from '../errors.js';
import { header, protocolError, transportError, type HttpCore } from '../http.js';
import type { Thumbnail } from '../types.js';
import { q, repoPath } from './paths.js';

/** a thumbnail's answer larger than this is not one (seahub's are a few KiB to a few hundred) */
const MAX_THUMBNAIL_BYTES = 8 * 1024 * 1024;

/** GET /api2/repos/{id}/thumbnail/?p=&size=: the picture scaled to fit size x size (PNG on seahub 7+). */
export async function thumbnail(http: HttpCore, repoId: string, path: string, size: number): Promise<Thumbnail> {
  const op = 'thumbnail';
  const res = await http.send({
    op,
    method: 'GET',
    repo: repoId,
    url: repoPath(repoId, 'thumbnail/'),
    query: { p: q(path), size },
    // the client's usual Accept (application/json) is kept: seahub's API views negotiate it before they run and
    // answer 406 to `image/*`, though this one answers an image
    retry: 'read',
  });
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of res.body) {
      n += (chunk as Buffer).length;
      if (n > MAX_THUMBNAIL_BYTES) throw protocolError(op, `answer over ${MAX_THUMBNAIL_BYTES} bytes`, res.status);
      chunks.push(chunk as Buffer);
    }
  } catch (e) {
    throw e instanceof ApiError ? e : transportError(e, op);
  }
  const type = (header(res.headers, 'content-type') ?? '').split(';')[0].trim().toLowerCase();
  return { type, bytes: Buffer.concat(chunks) };
}
