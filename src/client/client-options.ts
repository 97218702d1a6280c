// The options of SeafileClient and the HTTP core's settings they give
// (the defaults live here, in one place).
import { Bandwidth, type RateLimits } from './bandwidth.js';
import type { HttpOptions } from './http.js';
import type { UnlockEvent } from './library-passwords.js';
import { USER_AGENT } from './raw/request-head.js';
import { TlsTrust, type TlsFiles } from './tls.js';

export interface ClientOptions {
  baseUrl: string;
  token?: string;
  /** told of every HTTP attempt of an API call (operation, method, status or failure kind, ms): the debug log */
  onAttempt?: (op: string, method: string, outcome: number | string, ms: number) => void;
  /**
   * headers and body timeout of API calls, and the time after which no retry
   * of a call starts; default 30 s
   */
  timeoutMs?: number;
  /** idle timeout of upload/download bodies and wait for an upload's answer; default timeoutMs */
  transferTimeoutMs?: number;
  /** how long the first login retries a server that resets, fails or throttles; default 30 s */
  loginRetryMs?: number;
  /** retries of a retriable failure (all within timeoutMs); default 5 */
  maxRetries?: number;
  /** first backoff step (ms, doubled each retry, with jitter); default 250 */
  retryBaseMs?: number;
  /** longest backoff step; default 8 s */
  retryMaxMs?: number;
  /** longest wait honoured from a Retry-After header; default 60 s */
  maxRetryAfterMs?: number;
  /** keep-alive connections per host; default 32 (16 may be busy with listings fetched ahead) */
  connections?: number;
  userAgent?: string;
  /** offer the streaming upload capability (startUploadStream); default true */
  streamUploads?: boolean;
  /**
   * follow changes through the server's notification server (default on); false: never. The
   * numbers are for tests: how often a server without one is asked again, the first wait
   * before reconnecting, and how long a silent socket lives (ms)
   */
  notifications?: false | { recheckMs?: number; retryMinMs?: number; deadMs?: number };
  /** multi-file uploads to a plain-http link over a bare socket (raw-post.ts) rather than undici; default true */
  rawUploads?: boolean;
  /** streamGet reads plain-http download URLs over a bare socket (raw-get.ts); default true. Off: it refuses, and readers use download() */
  rawStreams?: boolean;
  /**
   * how long after an encrypted library's last unlock its password is sent
   * again (servers forget it an hour after it was given); default 45 min
   */
  unlockRefreshMs?: number;
  /** told when the client sent a library password again by itself (timer or refusal), and whether that failed */
  onUnlockAgain?: (ev: UnlockEvent) => void;
  /** bytes per second of uploads and of downloads of file content (null or absent: no limit); changeable later (setBandwidth) */
  bandwidth?: Partial<RateLimits>;
  /** https: a CA file trusted besides Node's and the system's CAs, and a client certificate (tls.ts) */
  tls?: TlsFiles;
}

export function httpOptionsOf(opts: ClientOptions): HttpOptions {
  return {
    baseUrl: opts.baseUrl,
    token: opts.token,
    timeoutMs: opts.timeoutMs ?? 30_000,
    transferTimeoutMs: opts.transferTimeoutMs ?? opts.timeoutMs ?? 30_000,
    maxRetries: opts.maxRetries ?? 5,
    connections: opts.connections ?? 32,
    userAgent: opts.userAgent ?? USER_AGENT,
    onAttempt: opts.onAttempt,
    tls: new TlsTrust(opts.tls),
    bandwidth: new Bandwidth({ up: opts.bandwidth?.up ?? null, down: opts.bandwidth?.down ?? null }),
    backoff: {
      baseMs: opts.retryBaseMs ?? 250,
      maxMs: opts.retryMaxMs ?? 8_000,
      maxRetryAfterMs: opts.maxRetryAfterMs ?? 60_000,
    },
  };
}
