// Where a thumbnail is made: in a worker thread (thumbnail-worker.ts) so that
// the server keeps answering while a large photo is decoded; at most two at
// once (each may hold a picture's pixels), a worker kept 30 s after its last
// job. Run from the TypeScript sources (the tests that start the server in
// their own process), where there is no compiled worker, it is made inline.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import pLimit from 'p-limit';
import { renderThumbnail, type ImageFormat } from './thumbnail-image.js';
import type { RenderAnswer, RenderJob } from './thumbnail-worker.js';

const WORKER = new URL('./thumbnail-worker.js', import.meta.url);
const IDLE_MS = 30_000;

const limit = pLimit(2);
const idle: { worker: Worker; timer: NodeJS.Timeout }[] = [];
let compiled: boolean | null = null;

function takeWorker(): Worker {
  const kept = idle.pop();
  if (kept) {
    clearTimeout(kept.timer);
    return kept.worker;
  }
  const w = new Worker(WORKER);
  w.unref(); // never what keeps a process alive
  return w;
}

function giveBack(worker: Worker): void {
  const timer = setTimeout(() => {
    const i = idle.findIndex((k) => k.worker === worker);
    if (i >= 0) idle.splice(i, 1);
    void worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idle.push({ worker, timer });
}

function inWorker(bytes: Buffer, format: ImageFormat, size: number): Promise<Buffer> {
  const w = takeWorker();
  return new Promise<Buffer>((resolve, reject) => {
    const off = () => {
      w.off('message', onMessage);
      w.off('error', onError);
      w.off('exit', onExit);
    };
    const onMessage = (a: RenderAnswer) => {
      off();
      giveBack(w);
      if ('png' in a) resolve(Buffer.from(a.png));
      else reject(new Error(a.error));
    };
    const onError = (e: Error) => {
      off();
      void w.terminate();
      reject(e);
    };
    const onExit = (code: number) => {
      off();
      reject(new Error(`thumbnail worker exited (${code})`));
    };
    w.on('message', onMessage);
    w.on('error', onError);
    w.on('exit', onExit);
    // a copy of its own: a Buffer may share its memory with others, which a transfer would take away
    const own = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer;
    w.postMessage({ bytes: own, format, size } satisfies RenderJob, [own]);
  });
}

/** The PNG thumbnail of a JPEG or PNG (thumbnail-image.ts renderThumbnail); rejects when it does not decode. */
export function render(bytes: Buffer, format: ImageFormat, size: number): Promise<Buffer> {
  compiled ??= WORKER.protocol === 'file:' && existsSync(fileURLToPath(WORKER));
  return limit(async () => (compiled ? inWorker(bytes, format, size) : renderThumbnail(bytes, format, size)));
}
