// The log of the seafs commands (mount, demo, serve): four levels, stderr or a
// file (timestamped, size-capped), secrets redacted, and no way to fail.
//
// A log line must never take a mount down. Writing to a closed terminal (EIO),
// to a pipe whose reader is gone (EPIPE), to a closed descriptor (EBADF) or to
// a full disk (ENOSPC) only silences the sink that failed: nothing is thrown,
// nothing is retried in a loop. The 'error' event of a dead stderr is heard by
// the sink's own listener (unheard, it was an uncaught exception that the
// handler logged onto the same dead stream: a loop at full CPU).
// Long on purpose: the sinks' failure handling and the redaction rules are
// kept together, with the reason for each beside it.
import { closeSync, fstatSync, openSync, renameSync, statSync, writeSync } from 'node:fs';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** A destination of log text; `write` may throw, the logger catches. */
export interface LogSink {
  write(text: string): void;
  close?(): void;
}

/** Write all of `text` to a file descriptor. */
function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text);
  for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off);
}

const failure = (code: string) => Object.assign(new Error(`log output: ${code}`), { code });

/**
 * A sink over a stream (process.stderr): a slow reader gets Node's queue, up
 * to `maxQueued` bytes, then lines are dropped (a stalled reader never stalls
 * the mount nor grows its memory); after an 'error' (EPIPE, EIO) every write
 * throws, and the logger stops writing.
 */
export function streamSink(
  stream: NodeJS.WritableStream & { writableLength: number; destroyed: boolean },
  maxQueued = 1 << 20,
): LogSink {
  let failed: string | null = null;
  stream.on('error', (e) => {
    failed = (e as NodeJS.ErrnoException)?.code ?? 'EIO';
  });
  return {
    write(text) {
      if (failed || stream.destroyed) throw failure(failed ?? 'EPIPE');
      if (stream.writableLength > maxQueued) throw failure('EAGAIN');
      stream.write(text);
    },
  };
}

let stderr: LogSink | null = null;
/** The one sink over process.stderr (one 'error' listener however often the logger is configured). */
function stderrSink(): LogSink {
  stderr ??= streamSink(process.stderr);
  return stderr;
}

/**
 * A log file opened for appending (mode 0600: it names the user's files). Past
 * `maxBytes` it is renamed to F.1 (replacing the previous one) and started
 * again, so it holds at most twice that. A file renamed or deleted from outside
 * (logrotate) is noticed within 10 s and opened again.
 */
export class FileSink implements LogSink {
  private fd: number;
  private size: number;
  private ino: number;
  private checkedAt = Date.now();

  constructor(
    readonly path: string,
    private readonly maxBytes = 10 * 1024 * 1024,
  ) {
    this.fd = openSync(path, 'a', 0o600);
    const st = fstatSync(this.fd);
    this.size = st.size;
    this.ino = st.ino;
  }

  write(text: string): void {
    const now = Date.now();
    if (now - this.checkedAt > 10_000) {
      this.checkedAt = now;
      let ino = -1;
      try {
        ino = statSync(this.path).ino;
      } catch {
        // gone: open it again below
      }
      if (ino !== this.ino) this.reopen();
    }
    if (this.size > 0 && this.size + text.length > this.maxBytes) {
      try {
        renameSync(this.path, `${this.path}.1`);
      } catch {
        // keep writing to the same file rather than lose lines
      }
      this.reopen();
    }
    writeAll(this.fd, text);
    this.size += Buffer.byteLength(text);
  }

  private reopen(): void {
    const fd = openSync(this.path, 'a', 0o600);
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = fd;
    const st = fstatSync(fd);
    this.size = st.size;
    this.ino = st.ino;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

// Errors after which a sink is tried again later (the disk may be freed), and
// errors that lose one line but leave the sink alive (a reader too slow).
// Anything else (EPIPE, EIO, EBADF, ENXIO...) means the reader is gone for good.
const PAUSE = new Set(['ENOSPC', 'EDQUOT', 'EFBIG', 'ENOMEM']);
const DROP = new Set(['EAGAIN', 'EWOULDBLOCK', 'EINTR']);
const PAUSE_MS = 60_000;

interface Output {
  sink: LogSink;
  /** file lines carry an ISO timestamp and the level; stderr lines the prefix */
  stamped: boolean;
  dead: boolean;
  pausedUntil: number;
  lost: number;
  lastError: string;
}

/** Secrets that may appear in messages (URLs of links, headers, forms, JSON). */
const REDACTIONS: [RegExp, string][] = [
  // upload/download/update link tokens: /seafhttp/files/TOKEN/name, /seafhttp/upload-api/TOKEN
  [/(\/seafhttp\/[\w-]+\/)[^/\s?#"'<>]+/gi, '$1<redacted>'],
  // share links: /f/TOKEN/, /d/TOKEN/
  [/(\bhttps?:\/\/[^/\s]+\/(?:f|d)\/)[0-9a-f]{8,}/gi, '$1<redacted>'],
  // query or form fields: ?password=..., &token=...
  [/([?&;](?:password|passwd|pwd|token|auth_token|access_token|secret|otp|code)=)[^&\s#"']*/gi, '$1<redacted>'],
  // user:password@ in a URL
  [/(\b[a-z][\w+.-]*:\/\/[^/\s:@]+:)[^@\s/]+@/gi, '$1<redacted>@'],
  // headers: Authorization: Token abc, X-Seafile-OTP: 123456
  [/\b((?:Authorization|X-Seafile-OTP)"?\s*[:=]\s*"?(?:(?:Token|Bearer|Basic)\s+)?)[^\s,;"'}]+/gi, '$1<redacted>'],
  [/(\b(?:Token|Bearer)\s+)[0-9a-f]{20,}/gi, '$1<redacted>'],
  // JSON fields and key=value / key: value
  [/("(?:password|passwd|token|auth_token|secret|otp)"\s*:\s*")[^"]*/gi, '$1<redacted>'],
  [/(\b(?:password|passwd|token|secret)\s*[=:]\s*)(?!<redacted>)[^\s,;&"'}]+/gi, '$1<redacted>'],
];

/** `text` without the secrets named in `secrets` nor those that look like secrets. */
export function redact(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('<redacted>');
  for (const [re, to] of REDACTIONS) out = out.replace(re, to);
  return out;
}

/** The level of a message from a hook that has none (the vfs, fuse and server hooks). */
export function guessLevel(msg: string): LogLevel {
  if (
    /\b(fail(s|ed|ure)?|cannot|could not|refused|error|lost|unreachable|timed out|conflict|deleted or moved|is gone)\b/i.test(
      msg,
    )
  )
    return 'warn';
  if (/\bE(IO|NOSPC|ACCES|TIMEDOUT|CONNREFUSED|CONNRESET|NOTCONN|DQUOT|ROFS|PIPE)\b/.test(msg)) return 'warn';
  return 'info';
}

/** What makes two messages "the same" for collapsing: retry counters and timings do not count. */
export function repeatKey(msg: string): string {
  return msg.replace(/\battempt \d+/g, 'attempt #').replace(/\b\d+(\.\d+)? ?(ms|s)\b/g, '# ms');
}

export interface LoggerOptions {
  level?: LogLevel;
  /** a file that receives timestamped lines instead of stderr */
  file?: string;
  /** largest size of the log file before it is renamed to F.1 */
  fileMaxBytes?: number;
  /** starts every stderr line ('seafs: ') */
  prefix?: string;
  /** the stderr sink (tests pass their own) */
  stderr?: LogSink;
  /** how long a collapsed message stays quiet after it was written */
  repeatWindowMs?: number;
  now?: () => number;
}

/** Keys of collapsed messages kept at most (oldest forgotten first). */
const MAX_KEYS = 5000;

export class Logger {
  level: LogLevel = 'info';
  private prefix = 'seafs: ';
  private outputs: Output[] = [];
  private readonly secrets = new Set<string>();
  private repeatWindow = 10 * 60_000;
  private now: () => number = Date.now;
  /** collapsed messages: when last written and how many were kept quiet since */
  private readonly repeats = new Map<string, { at: number; quiet: number }>();

  constructor(opts: LoggerOptions = {}) {
    this.configure(opts);
  }

  /** Sets level and destination; opening the log file may throw (a clear error for the user). */
  configure(opts: LoggerOptions): void {
    const file = opts.file ? new FileSink(opts.file, opts.fileMaxBytes) : null;
    for (const o of this.outputs) o.sink.close?.();
    this.level = opts.level ?? 'info';
    this.prefix = opts.prefix ?? 'seafs: ';
    this.repeatWindow = opts.repeatWindowMs ?? 10 * 60_000;
    this.now = opts.now ?? Date.now;
    const fresh = (sink: LogSink, stamped: boolean): Output => ({
      sink,
      stamped,
      dead: false,
      pausedUntil: 0,
      lost: 0,
      lastError: '',
    });
    this.outputs = [file ? fresh(file, true) : fresh(opts.stderr ?? stderrSink(), false)];
  }

  /** A value (password, token) never to be written, wherever it appears. */
  addSecret(value: string | undefined): void {
    if (value && value.length >= 4) this.secrets.add(value);
  }

  enabled(level: LogLevel): boolean {
    return RANK[level] <= RANK[this.level];
  }

  error(msg: string): void {
    this.write('error', msg);
  }
  warn(msg: string): void {
    this.write('warn', msg);
  }
  info(msg: string): void {
    this.write('info', msg);
  }
  debug(msg: string): void {
    this.write('debug', msg);
  }

  /**
   * A log function for the layers below (vfs, fuse): messages without a level
   * get one from their words; a message repeated by a retry loop is written
   * once per repeat window, then with the count of those kept quiet.
   */
  hook(): (msg: string, level?: LogLevel) => void {
    return (msg, level) => this.write(level ?? guessLevel(msg), msg, true);
  }

  /** Writes one message; never throws. `collapse`: quiet repeats of the same message. */
  write(level: LogLevel, msg: string, collapse = false): void {
    try {
      if (!this.enabled(level)) return;
      const now = this.now();
      let text = String(msg);
      if (collapse) {
        const key = repeatKey(text);
        const r = this.repeats.get(key);
        if (r && now - r.at < this.repeatWindow) {
          r.quiet++;
          return;
        }
        if (r?.quiet) text += ` (and ${r.quiet} time(s) more since ${new Date(r.at).toISOString()})`;
        this.repeats.delete(key);
        this.repeats.set(key, { at: now, quiet: 0 });
        if (this.repeats.size > MAX_KEYS) this.repeats.delete(this.repeats.keys().next().value!);
      }
      text = redact(text, this.secrets);
      for (const o of this.outputs) this.emit(o, level, text, now);
    } catch {
      // a log line is never worth an exception
    }
  }

  private emit(o: Output, level: LogLevel, text: string, now: number): void {
    if (o.dead) return;
    if (o.pausedUntil > now) {
      o.lost++;
      return;
    }
    const line = (l: LogLevel, t: string) =>
      o.stamped
        ? `${new Date(now).toISOString()} ${l.toUpperCase().padEnd(5)} ${t.replace(/\n/g, '\n    ')}\n`
        : `${this.prefix}${l === 'error' ? 'error: ' : l === 'warn' ? 'warning: ' : ''}${t}\n`;
    try {
      if (o.lost) {
        o.sink.write(line('warn', `${o.lost} log line(s) were lost (${o.lastError})`));
        o.lost = 0;
      }
      o.sink.write(line(level, text));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException)?.code ?? 'error';
      o.lastError = code;
      o.lost++;
      if (PAUSE.has(code)) o.pausedUntil = now + PAUSE_MS;
      else if (!DROP.has(code)) o.dead = true;
    }
  }

  /** The log file lines go to, if any (else stderr). */
  get file(): string | undefined {
    const o = this.outputs[0];
    return o?.sink instanceof FileSink ? o.sink.path : undefined;
  }

  /** True once every output has failed for good (the log goes nowhere). */
  get silent(): boolean {
    return this.outputs.every((o) => o.dead);
  }

  close(): void {
    for (const o of this.outputs) {
      o.dead = true;
      try {
        o.sink.close?.();
      } catch {
        // nothing to do
      }
    }
  }
}

/** The process's logger: stderr at info until a command configures it. */
export const logger = new Logger();

let stdoutDead = false;
let stderrDead = false;

/**
 * Output meant for the user's eyes on stdout (the "mounted" line, the demo's
 * banner, unmount progress): dropped silently once stdout is gone.
 */
export function printOut(text: string): void {
  if (stdoutDead || process.stdout.destroyed) return;
  try {
    process.stdout.write(text);
  } catch {
    stdoutDead = true;
  }
}

/**
 * Ends the process with `code` once what was written to stdout and stderr has
 * left. To a pipe Node writes in the background, and process.exit() at once
 * cuts off what is still queued: `status --json` of a mount with thousands of
 * waiting files (200 KB) reached `jq` cut short. A reader that never reads
 * gets 10 s. The promise never settles: `return exitAfterOutput(0)`.
 */
export function exitAfterOutput(code: number): Promise<never> {
  process.exitCode = code;
  let left = 2;
  const done = () => {
    if (--left === 0) process.exit(code);
  };
  for (const s of [process.stdout, process.stderr]) {
    // an empty write's callback runs once the writes queued before it are out (or failed)
    if (s.destroyed || !s.writable) done();
    else s.write('', done);
  }
  setTimeout(() => process.exit(code), 10_000);
  return new Promise<never>(() => {});
}

/** A command's final error on stderr (also when the log goes to a file); dropped once stderr is gone. */
export function printErr(text: string): void {
  if (stderrDead || process.stderr.destroyed) return;
  try {
    process.stderr.write(text);
  } catch {
    stderrDead = true;
  }
}

let guarded = false;

/**
 * Makes the standard streams harmless: an 'error' on process.stdout or
 * process.stderr (EPIPE, EIO once the reader or terminal is gone) is ignored
 * instead of becoming an uncaught exception, and SIGPIPE (ignored by Node, but
 * a native library could restore its default) never ends the process.
 */
export function guardStdio(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on('error', () => {
    stdoutDead = true;
  });
  process.stderr.on('error', () => {
    stderrDead = true;
  });
  process.on('SIGPIPE', () => {});
}

/**
 * A handler for 'uncaughtException' / 'unhandledRejection' that logs and keeps
 * the process running. It cannot recurse: a failure while logging is dropped,
 * and an error raised while it runs is not logged again.
 */
export function unexpectedErrorHandler(log: Logger, what: string): (e: unknown) => void {
  let busy = false;
  return (e: unknown) => {
    if (busy) return;
    busy = true;
    try {
      const text = e instanceof Error ? (e.stack ?? e.message) : String(e);
      log.write('error', `${what}: ${text}`, true);
    } catch {
      // nothing more can be done
    } finally {
      busy = false;
    }
  };
}
