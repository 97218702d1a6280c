// Sends byte ranges of local files to a writable (an HTTP answer) through two
// buffers used in turn: one is read into while the other is being written.
// A buffer is read into again only once its write is done, so nothing is
// allocated per read; a fresh buffer per read (what fs read streams do) made
// the garbage collector a large share of a download's CPU in `seafs serve`.
// Awaiting each write is the backpressure: at most two buffers are in flight.
import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/** bytes `start`..`end` (inclusive) of the file at `path` */
export interface FileRange {
  path: string;
  start: number;
  end: number;
}

const BUFFER_BYTES = 1024 * 1024;

/**
 * Writes the ranges to `out` in order; resolves once the last write is done
 * (without ending `out`). A file shorter than its range ends the body there
 * (a short body). Rejects when `out` fails or closes first.
 */
export async function pumpRanges(ranges: readonly FileRange[], out: Writable): Promise<void> {
  const bufs = [Buffer.allocUnsafe(BUFFER_BYTES), Buffer.allocUnsafe(BUFFER_BYTES)];
  const inFlight: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  let turn = 0;
  let short = false;
  // a closed receiver may never call back the writes it held: waiting ends with it (the buffers are this
  // call's own and are not read into again)
  let onClose = () => {};
  const closed = new Promise<never>((_, reject) => {
    onClose = () => reject(new Error('the receiver closed before the body was sent'));
  });
  closed.catch(() => {});
  out.once('close', onClose);
  const done = (p: Promise<unknown>) => Promise.race([p, closed]);
  try {
    for (const r of ranges) {
      const fh = await open(r.path, 'r');
      try {
        for (let pos = r.start; pos <= r.end;) {
          await done(inFlight[turn]);
          const buf = bufs[turn];
          const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, r.end - pos + 1), pos);
          // the file is shorter than its record: the body ends here (what follows would be misplaced)
          if (bytesRead === 0) {
            short = true;
            break;
          }
          pos += bytesRead;
          inFlight[turn] = written(out, buf.subarray(0, bytesRead));
          inFlight[turn].catch(() => {});
          turn ^= 1;
        }
      } finally {
        await fh.close().catch(() => {});
      }
      if (short) break;
    }
    await done(Promise.all(inFlight));
  } finally {
    out.off('close', onClose);
  }
}

function written(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (out.destroyed) return reject(new Error('the receiver closed before the body was sent'));
    out.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}
