// The upload POST of the mount over a bare socket: the multipart body is
// streamed from the temp files through two reused buffers (no allocation
// per read), which leaves more of a 2-core machine to the server. Plain
// http only; the caller uses the API client for anything else.
import { open } from 'node:fs/promises';
import net from 'node:net';
import { ApiError } from './errors.js';
import { parseAnswer } from './http-answer.js';
import { errorMessageOf } from './error-body.js';
import { kindFor } from './status-map.js';
import type { BatchFile } from './types.js';
import { requestHead, uploadTarget } from './raw/request-head.js';
import { batchFraming } from './upload-batch.js';
import type { TokenBucket } from './bandwidth.js';

const BUF = 256 * 1024;

function parseResponse(raw: Buffer): { status: number; text: string } {
  const a = parseAnswer(raw);
  if (!a)
    throw new ApiError({ kind: 'protocol', status: 0, operation: 'upload', serverMessage: 'no valid answer header' });
  return a;
}

/** POST files to an upload link; resolves with the answer body of a 2xx, throws ApiError otherwise. */
export async function rawUpload(
  url: string,
  fields: [string, string][],
  files: BatchFile[],
  idleMs = 5 * 60_000,
  /** the upload limit: each write waits while it is in debt */
  bucket?: TokenBucket,
): Promise<{ text: string; sizes: number[] }> {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new Error('rawUpload: http only');
  const frame = await batchFraming(fields, files);
  const sock = net.connect({ host: u.hostname, port: Number(u.port || 80) });
  sock.setNoDelay(true);
  const answer: Buffer[] = [];
  let failed: unknown = null;
  const closed = new Promise<void>((resolve) => {
    sock.on('data', (d: Buffer) => answer.push(d));
    sock.on('error', (e) => {
      failed ??= new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: e.message, cause: e });
      resolve();
    });
    sock.on('close', () => resolve());
  });
  sock.setTimeout(idleMs, () => {
    failed ??= new ApiError({ kind: 'timeout', status: 0, operation: 'upload' });
    sock.destroy();
  });
  const write = async (b: Buffer) => {
    const wait = bucket?.ready();
    if (wait) {
      // a wait for the limit is not the server's silence: no idle timeout meanwhile
      sock.setTimeout(0);
      await wait;
      sock.setTimeout(idleMs);
    }
    bucket?.spend(b.length);
    return send(b);
  };
  const send = (b: Buffer) =>
    new Promise<void>((resolve, reject) => {
      if (sock.destroyed)
        return reject(
          failed ??
            new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: 'connection closed' }),
        );
      sock.write(b, (err) => (err ? reject(failed ?? err) : resolve()));
    });
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    await write(
      requestHead('POST', uploadTarget(u), u.host, [
        ['Content-Type', frame.contentType],
        ['Content-Length', String(frame.length)],
      ]),
    );
    // two buffers: one is read into while the other is being sent (none for files held in memory)
    let bufs: Buffer[] | null = null;
    for (let i = 0; i < files.length; i++) {
      await write(frame.heads[i]);
      const size = frame.sizes[i];
      if (size === 0) continue;
      const data = files[i].data;
      if (data) {
        await write(data);
        continue;
      }
      bufs ??= [Buffer.allocUnsafe(BUF), Buffer.allocUnsafe(BUF)];
      const fh = await open(files[i].path, 'r');
      try {
        let pos = 0;
        let which = 0;
        let inFlight: Promise<void> = Promise.resolve();
        while (pos < size) {
          const buf = bufs[which];
          const want = Math.min(BUF, size - pos);
          const { bytesRead } = await fh.read(buf, 0, want, pos);
          if (bytesRead === 0) throw Object.assign(new Error(`${files[i].path} shrank during upload`), { code: 'EIO' });
          await inFlight; // the other buffer's send must be done before it is reused next round
          inFlight = write(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead));
          pos += bytesRead;
          which ^= 1;
        }
        await inFlight;
      } finally {
        await fh.close();
      }
    }
    await write(frame.tail);
  } catch (e) {
    sock.destroy();
    await closed;
    throw failed ?? e;
  }
  await closed;
  if (failed && answer.length === 0) throw failed;
  const { status, text } = parseResponse(Buffer.concat(answer));
  if (status < 200 || status >= 300) {
    const msg = errorMessageOf(text);
    throw new ApiError({ kind: kindFor(status, msg, 'upload'), status, operation: 'upload', serverMessage: msg });
  }
  return { text, sizes: frame.sizes };
}
