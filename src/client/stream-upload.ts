// An upload whose length is not known when it starts: a multipart POST to an
// upload or update link sent with Transfer-Encoding: chunked, fed piece by
// piece while the file is still being written. Over a bare socket (net or
// tls), so the caller controls backpressure: write() resolves once the socket
// took the piece. Fields can go before the file part (known at the start) or
// after it (known only at the end, like the final modification time).
import net from 'node:net';
import tls from 'node:tls';
import { ApiError, EarlyAnswer } from './errors.js';
import { parseAnswer } from './http-answer.js';
import { closingBoundary, fieldParts, filePartHead, formDataType, newBoundary } from './raw/form-data.js';
import { requestHead, uploadTarget } from './raw/request-head.js';
import { errorMessageOf } from './error-body.js';
import { kindFor } from './status-map.js';
import { transportError } from './http.js';
import { TlsTrust } from './tls.js';
import type { TokenBucket } from './bandwidth.js';
import type { StartUploadStream } from './types.js';
import { parseUploadAnswer } from './upload-answer.js';

export interface UploadStream {
  /** sends bytes of the file part; resolves when the socket accepted them */
  write(b: Buffer): Promise<void>;
  /** sends `trailing` fields and ends the body; resolves with the text of a 2xx answer */
  finish(trailing?: [string, string][]): Promise<string>;
  /** drops the request: the body never ends, so the server stores nothing */
  abort(): void;
  /** file bytes written so far */
  readonly sent: number;
}

const CRLF = Buffer.from('\r\n');
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/**
 * Opens the request and sends the header, the leading fields and the file
 * part's header. A server that answers before the body ended (refusal, over
 * quota, too large) makes the next write() or finish() throw its ApiError.
 */
export async function openUploadStream(
  url: string,
  leading: [string, string][],
  filename: string,
  opts: { idleMs?: number; field?: string; tls?: TlsTrust; bucket?: TokenBucket } = {},
): Promise<UploadStream> {
  const u = new URL(url);
  const secure = u.protocol === 'https:';
  if (!secure && u.protocol !== 'http:') throw new Error(`stream upload: unsupported protocol ${u.protocol}`);
  const port = Number(u.port || (secure ? 443 : 80));
  const host = u.hostname.replace(/^\[|\]$/g, '');
  let secureContext;
  try {
    secureContext = secure ? (opts.tls ?? new TlsTrust()).context() : undefined;
  } catch (e) {
    throw transportError(e, 'upload', u.host);
  }
  const sock: net.Socket = secure
    ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, secureContext })
    : net.connect({ host, port });
  sock.setNoDelay(true);
  const answer: Buffer[] = [];
  let failed: ApiError | null = null;
  let closed = false;
  const closedP = new Promise<void>((resolve) => {
    sock.on('data', (d: Buffer) => answer.push(d));
    sock.on('error', (e) => {
      // a certificate refused after the handshake (TLS 1.3 checks the client's late) is told as such
      const tlsFailure = transportError(e, 'upload', u.host);
      failed ??=
        tlsFailure.kind === 'certificate'
          ? tlsFailure
          : new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: e.message, cause: e });
      resolve();
    });
    sock.on('close', () => {
      closed = true;
      resolve();
    });
  });
  const idleMs = opts.idleMs ?? 5 * 60_000;
  sock.setTimeout(idleMs, () => {
    failed ??= new ApiError({ kind: 'timeout', status: 0, operation: 'upload' });
    sock.destroy();
  });

  /** the error of an answer that came (or a connection that ended) before the body did */
  const early = async (): Promise<ApiError> => {
    sock.end();
    await closedP;
    const a = parseAnswer(Buffer.concat(answer));
    if (a) {
      const msg = errorMessageOf(a.text);
      return new EarlyAnswer({
        kind: kindFor(a.status, msg, 'upload'),
        status: a.status,
        operation: 'upload',
        serverMessage: msg || `answered ${a.status} before the body ended`,
      });
    }
    const why = failed ? `${failed.kind}: ${failed.serverMessage}` : 'connection closed during the upload';
    return new EarlyAnswer({
      kind: failed?.kind ?? 'network',
      status: 0,
      operation: 'upload',
      serverMessage: why,
      cause: failed ?? undefined,
    });
  };

  const send = (pieces: Buffer[]) =>
    new Promise<void>((resolve, reject) => {
      if (answer.length || closed || sock.destroyed) return void early().then(reject);
      sock.cork();
      for (let i = 0; i < pieces.length - 1; i++) sock.write(pieces[i]);
      sock.write(pieces[pieces.length - 1], (err) => (err ? void early().then(reject) : resolve()));
      sock.uncork();
    });
  const chunk = (b: Buffer) => [Buffer.from(`${b.length.toString(16)}\r\n`, 'latin1'), b, CRLF];

  await new Promise<void>((resolve, reject) => {
    sock.once(secure ? 'secureConnect' : 'connect', resolve);
    sock.once('error', reject);
  }).catch((e) => {
    sock.destroy();
    // a failed handshake in words (tls-errors.ts), anything else as a network failure
    throw transportError(e, 'upload', u.host);
  });

  const boundary = newBoundary();
  const head = requestHead('POST', uploadTarget(u), u.host, [
    ['Content-Type', formDataType(boundary)],
    ['Transfer-Encoding', 'chunked'],
  ]);
  const preamble = fieldParts(boundary, leading) + filePartHead(boundary, opts.field ?? 'file', filename);
  try {
    await send([head, ...chunk(Buffer.from(preamble, 'utf8'))]);
  } catch (e) {
    sock.destroy();
    throw e;
  }

  let sent = 0;
  let ended = false;
  return {
    get sent() {
      return sent;
    },
    async write(b: Buffer) {
      if (ended) throw new Error('stream upload: write after finish or abort');
      if (b.length === 0) return;
      // the upload limit: wait while it is in debt, then count the piece
      const wait = opts.bucket?.ready();
      if (wait) {
        // a wait for the limit is not the server's silence: no idle timeout meanwhile
        sock.setTimeout(0);
        await wait;
        sock.setTimeout(idleMs);
      }
      opts.bucket?.spend(b.length);
      await send(chunk(b));
      sent += b.length;
    },
    async finish(trailing = []) {
      if (ended) throw new Error('stream upload: finished or aborted already');
      ended = true;
      const tail = Buffer.from(`\r\n${fieldParts(boundary, trailing)}${closingBoundary(boundary)}`, 'utf8');
      try {
        await send([...chunk(tail), LAST_CHUNK]);
      } catch (e) {
        sock.destroy();
        throw e;
      }
      await closedP;
      const a = parseAnswer(Buffer.concat(answer));
      if (!a)
        throw failed ?? new ApiError({ kind: 'network', status: 0, operation: 'upload', serverMessage: 'no answer' });
      if (a.status < 200 || a.status >= 300) {
        const msg = errorMessageOf(a.text);
        throw new ApiError({
          kind: kindFor(a.status, msg, 'upload'),
          status: a.status,
          operation: 'upload',
          serverMessage: msg,
        });
      }
      return a.text;
    },
    abort() {
      ended = true;
      sock.destroy();
    },
  };
}

/** The client's startUploadStream capability (the answer parsed as the client's uploads are). */
export function streamUploadFor(trust?: TlsTrust, bucket?: TokenBucket): StartUploadStream {
  return async (link, leading, filename) => {
    const up = await openUploadStream(link, leading, filename, { tls: trust, bucket });
    return {
      write: (b) => up.write(b),
      abort: () => up.abort(),
      get sent() {
        return up.sent;
      },
      async finish(trailing) {
        const text = await up.finish(trailing);
        const out = parseUploadAnswer('upload', text, { name: filename, size: up.sent });
        // real servers answer with the name NFC-normalised
        return (out.find((x) => x.name.normalize('NFC') === filename.normalize('NFC')) ?? out[0]).id;
      },
    };
  };
}
