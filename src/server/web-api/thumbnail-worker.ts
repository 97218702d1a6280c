// A worker thread of the thumbnail endpoint (thumbnail-render.ts): decoding a
// photo in pure JS takes seconds (a 12 MP JPEG: about 4 s here), which on the
// server's own thread would hold every other request that long.
import { parentPort } from 'node:worker_threads';
import { renderThumbnail, type ImageFormat } from './thumbnail-image.js';

export interface RenderJob {
  bytes: ArrayBuffer;
  format: ImageFormat;
  size: number;
}

export type RenderAnswer = { png: ArrayBuffer } | { error: string };

parentPort?.on('message', (job: RenderJob) => {
  try {
    const png = renderThumbnail(Buffer.from(job.bytes), job.format, job.size);
    const out = png.buffer.slice(png.byteOffset, png.byteOffset + png.length) as ArrayBuffer;
    parentPort!.postMessage({ png: out } satisfies RenderAnswer, [out]);
  } catch (e) {
    parentPort!.postMessage({ error: e instanceof Error ? e.message : String(e) } satisfies RenderAnswer);
  }
});
