import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import {
  FileSink,
  Logger,
  guessLevel,
  redact,
  streamSink,
  unexpectedErrorHandler,
  type LogSink,
} from '../../../src/cli/log.js';
import { FakeApi, apiError, makeVfs, writeWhole } from '../../helpers/fake-api.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-log-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A sink that records lines, and throws an error with `code` while `failing` says so. */
function recorder(code?: string) {
  const lines: string[] = [];
  let calls = 0;
  const s = {
    failing: !!code,
    lines,
    get calls() {
      return calls;
    },
    write(text: string) {
      calls++;
      if (s.failing) throw Object.assign(new Error(`write ${code}`), { code });
      lines.push(text);
    },
  };
  return s;
}

describe('logger: a failing sink never fails the caller', () => {
  it('a sink that throws EPIPE does not throw out of log(), and is not written to again', () => {
    const sink = recorder('EPIPE');
    const log = new Logger({ stderr: sink });
    expect(() => {
      for (let i = 0; i < 1000; i++) log.error(`line ${i}`);
    }).not.toThrow();
    expect(sink.calls, 'the dead sink is tried once').toBe(1);
    expect(log.silent).toBe(true);
  });

  it('EIO (a closed terminal) and EBADF also silence the sink for good', () => {
    for (const code of ['EIO', 'EBADF']) {
      const sink = recorder(code);
      const log = new Logger({ stderr: sink });
      log.warn('a');
      sink.failing = false;
      log.warn('b');
      expect(sink.lines, code).toEqual([]);
    }
  });

  it('a real pipe whose reader is gone: the EPIPE error event is heard, and the sink is dropped at the next line', async () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    closeSync(reader);
    const stream = new net.Socket({ fd: writer, readable: false, writable: true });
    const errors: string[] = [];
    stream.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? ''));
    const log = new Logger({ stderr: streamSink(stream) });
    expect(() => log.error('nobody reads this')).not.toThrow();
    await new Promise((r) => setTimeout(r, 50));
    expect(errors).toEqual(['EPIPE']);
    expect(() => {
      for (let i = 0; i < 1000; i++) log.error(`and nobody reads this ${i}`);
    }).not.toThrow();
    expect(log.silent).toBe(true);
    stream.destroy();
  });

  it('a reader too slow: lines queue up to the cap, then are dropped and counted, and the sink lives on', () => {
    class SlowReader extends EventEmitter {
      destroyed = false;
      queued = 0;
      written: string[] = [];
      get writableLength() {
        return this.queued;
      }
      write(text: string) {
        this.queued += text.length;
        this.written.push(text);
        return false;
      }
    }
    const slow = new SlowReader();
    const log = new Logger({ stderr: streamSink(slow as never, 100) });
    for (let i = 0; i < 10; i++) log.info(`line ${i} ${'x'.repeat(20)}`);
    expect(slow.written.length).toBe(3); // lines of 35 bytes: written while at most 100 bytes are queued
    slow.queued = 0; // the reader caught up
    log.info('caught up');
    expect(slow.written.slice(3)).toEqual(['seafs: warning: 7 log line(s) were lost (EAGAIN)\n', 'seafs: caught up\n']);
  });

  it('ENOSPC pauses the sink for a minute, then says how many lines were lost', () => {
    let now = 1_000_000;
    const sink = recorder('ENOSPC');
    const log = new Logger({ stderr: sink, now: () => now });
    log.info('first');
    sink.failing = false;
    now += 30_000;
    log.info('second');
    expect(sink.calls, 'not retried within the minute').toBe(1);
    now += 31_000;
    log.info('third');
    expect(sink.lines).toEqual(['seafs: warning: 2 log line(s) were lost (ENOSPC)\n', 'seafs: third\n']);
  });

  it('a real full disk (/dev/full) under the log file neither throws nor stops the caller', () => {
    const log = new Logger({ file: '/dev/full' });
    expect(() => {
      for (let i = 0; i < 100; i++) log.error(`line ${i}`);
    }).not.toThrow();
    log.close();
  });

  it('EAGAIN (a full non-blocking pipe) loses the line but keeps the sink', () => {
    const sink = recorder('EAGAIN');
    const log = new Logger({ stderr: sink });
    log.info('dropped');
    sink.failing = false;
    log.info('kept');
    expect(sink.lines).toEqual(['seafs: warning: 1 log line(s) were lost (EAGAIN)\n', 'seafs: kept\n']);
  });

  it('the uncaught-exception handler neither throws nor recurses when logging fails or raises again', () => {
    let handler: (e: unknown) => void = () => {};
    let reentered = 0;
    const sink: LogSink = {
      write() {
        reentered++;
        handler(new Error('raised while logging')); // as if the failed write came back as another exception
        throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
      },
    };
    const log = new Logger({ stderr: sink });
    handler = unexpectedErrorHandler(log, 'unexpected error');
    expect(() => handler(new Error('boom'))).not.toThrow();
    expect(() => handler(new Error('boom again'))).not.toThrow();
    expect(reentered, 'the sink was written once: the nested call returned, then the sink was dead').toBe(1);
  });
});

describe('logger: levels and format', () => {
  it('at warn, info and debug lines are dropped; at debug everything passes', () => {
    const sink = recorder();
    const log = new Logger({ stderr: sink, level: 'warn' });
    log.error('e');
    log.warn('w');
    log.info('i');
    log.debug('d');
    expect(sink.lines).toEqual(['seafs: error: e\n', 'seafs: warning: w\n']);
    const all = recorder();
    const verbose = new Logger({ stderr: all, level: 'debug' });
    verbose.info('i');
    verbose.debug('d');
    expect(all.lines).toEqual(['seafs: i\n', 'seafs: d\n']);
    const quiet = recorder();
    new Logger({ stderr: quiet, level: 'error' }).warn('w');
    expect(quiet.lines).toEqual([]);
  });

  it('a log file gets lines with an ISO timestamp and the level, and is readable by its owner only', () => {
    const file = path.join(dir, 'mount.log');
    const log = new Logger({ file, level: 'debug' });
    log.warn('upload of /a.txt failed: 500');
    log.debug('detail\nsecond line');
    log.close();
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARN {2}upload of \/a\.txt failed: 500$/);
    expect(lines[1]).toMatch(/^\S+Z DEBUG detail$/);
    expect(lines[2]).toBe('    second line');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a log file past its size cap is renamed to F.1 and started again', () => {
    const file = path.join(dir, 'capped.log');
    const log = new Logger({ file, fileMaxBytes: 2000 });
    for (let i = 0; i < 60; i++) log.info(`line ${String(i).padStart(3, '0')} ${'x'.repeat(40)}`);
    log.close();
    const now = readFileSync(file, 'utf8');
    const old = readFileSync(`${file}.1`, 'utf8');
    expect(now.length).toBeLessThanOrEqual(2000);
    expect(old.length).toBeLessThanOrEqual(2000);
    expect(now).toContain('line 059');
    expect(now + old).toContain('line 030');
  });

  it('a log file renamed from outside (logrotate) is opened again under its name', () => {
    const file = path.join(dir, 'rotated.log');
    let t = Date.now();
    const sink = new FileSink(file);
    const realNow = Date.now;
    try {
      sink.write('before\n');
      renameSync(file, `${file}.old`);
      Date.now = () => t;
      t += 11_000;
      sink.write('after\n');
    } finally {
      Date.now = realNow;
      sink.close();
    }
    expect(readFileSync(`${file}.old`, 'utf8')).toBe('before\n');
    expect(readFileSync(file, 'utf8')).toBe('after\n');
  });

  it('a log file that cannot be opened is an error when the logger is configured, not later', () => {
    const log = new Logger();
    expect(() => log.configure({ file: path.join(dir, 'missing', 'x.log') })).toThrow(/ENOENT/);
    writeFileSync(path.join(dir, 'ok.log'), '');
    expect(() => log.configure({ file: path.join(dir, 'ok.log') })).not.toThrow();
    expect(log.file).toBe(path.join(dir, 'ok.log'));
    log.close();
  });
});

describe('logger: secrets never reach a log line', () => {
  it('redacts upload, update and download link tokens in URLs', () => {
    expect(redact('POST http://127.0.0.1:8000/seafhttp/upload-api/0f1e2d3c-aaaa-bbbb failed')).toBe(
      'POST http://127.0.0.1:8000/seafhttp/upload-api/<redacted> failed',
    );
    expect(redact('GET https://cloud.example.com/seafhttp/files/abc123def/report.pdf: 404')).toBe(
      'GET https://cloud.example.com/seafhttp/files/<redacted>/report.pdf: 404',
    );
    expect(redact('update link "https://h/seafhttp/update-api/tok-9?ret-json=1"')).toBe(
      'update link "https://h/seafhttp/update-api/<redacted>?ret-json=1"',
    );
    expect(redact('share https://h/f/0123456789abcdef/ and https://h/d/fedcba9876543210/')).toBe(
      'share https://h/f/<redacted>/ and https://h/d/<redacted>/',
    );
  });

  it('redacts passwords and tokens in query strings, forms, headers, JSON and URLs', () => {
    expect(redact('GET /api2/x/?password=hunter2&p=/a')).toBe('GET /api2/x/?password=<redacted>&p=/a');
    expect(redact('body username=a%40b&password=s3cret')).toBe('body username=a%40b&password=<redacted>');
    expect(redact('Authorization: Token 0123456789abcdef0123456789abcdef01234567')).toBe(
      'Authorization: Token <redacted>',
    );
    expect(redact('{"token":"0123456789abcdef","email":"a@b"}')).toBe('{"token":"<redacted>","email":"a@b"}');
    expect(redact('X-Seafile-OTP: 123456')).toBe('X-Seafile-OTP: <redacted>');
    expect(redact('cannot reach https://me:pa55word@cloud.example.com/')).toBe(
      'cannot reach https://me:<redacted>@cloud.example.com/',
    );
    expect(redact('password: hunter2')).toBe('password: <redacted>');
  });

  it('redacts the values the logger was told are secrets, wherever they appear', () => {
    const sink = recorder();
    const log = new Logger({ stderr: sink });
    log.addSecret('correct-horse-battery');
    log.addSecret('d41d8cd98f00b204e9800998ecf8427e00000000');
    log.warn('login with correct-horse-battery refused; token d41d8cd98f00b204e9800998ecf8427e00000000 expired');
    expect(sink.lines).toEqual(['seafs: warning: login with <redacted> refused; token <redacted> expired\n']);
  });

  it('leaves ordinary messages alone', () => {
    const msgs = [
      'upload of /Documents/report.docx failed (attempt 2): the server answered 500',
      'login refused: wrong user or password',
      'the password file /etc/seafs/pw is empty',
      '/d/deadbeef12/x.bin: uploaded while it was written (12 bytes, one streamed request)',
      'file id 0123456789abcdef0123456789abcdef01234567 changed',
    ];
    for (const m of msgs) expect(redact(m)).toBe(m);
  });
});

describe('logger: a failure repeated by a retry loop is logged once', () => {
  it('the same message from the layers below is written once per window, then with the count of repeats', () => {
    let now = 0;
    const sink = recorder();
    const log = new Logger({ stderr: sink, now: () => now, repeatWindowMs: 600_000 });
    const hook = log.hook();
    for (let attempt = 1; attempt <= 6; attempt++) {
      hook(`upload of /a.bin failed (attempt ${attempt}): the server answered 500`);
      now += 1000;
    }
    hook('upload of /b.bin failed (attempt 1): the server answered 500');
    hook('upload of /a.bin failed (attempt 1): quota exceeded');
    expect(sink.lines).toEqual([
      'seafs: warning: upload of /a.bin failed (attempt 1): the server answered 500\n',
      'seafs: warning: upload of /b.bin failed (attempt 1): the server answered 500\n',
      'seafs: warning: upload of /a.bin failed (attempt 1): quota exceeded\n',
    ]);
    now = 700_000;
    hook('upload of /a.bin failed (attempt 3): the server answered 500');
    expect(sink.lines[3]).toBe(
      'seafs: warning: upload of /a.bin failed (attempt 3): the server answered 500 (and 5 time(s) more since 1970-01-01T00:00:00.000Z)\n',
    );
  });

  it('an upload that fails five times in the vfs retry loop is one warning in the log, with its path', async () => {
    const api = new FakeApi();
    const repo = api.addLibrary('lib');
    const sink = recorder();
    const log = new Logger({ stderr: sink });
    const m = await makeVfs(api, { library: 'lib', log: log.hook() });
    try {
      api.failNext.set(
        'upload',
        Array.from({ length: 5 }, () => apiError('server', 500, 'upload')),
      );
      await writeWhole(m.vfs, '/r.txt', 'retried');
      expect(await m.vfs.drain()).toEqual([]);
      expect(api.content(repo, '/r.txt')!.toString()).toBe('retried');
      expect(api.calls.upload, 'five failed attempts and the one that worked').toBe(6);
      const failures = sink.lines.filter((l) => l.includes('/r.txt'));
      expect(failures).toHaveLength(1);
      expect(failures[0]).toMatch(/^seafs: warning: upload of \/r\.txt failed \(attempt 1\)/);
    } finally {
      await m.cleanup();
    }
  });

  it('direct calls are never collapsed (progress lines repeat on purpose)', () => {
    const sink = recorder();
    const log = new Logger({ stderr: sink });
    log.info('waiting for 1 upload(s)');
    log.info('waiting for 1 upload(s)');
    expect(sink.lines.length).toBe(2);
  });

  it('messages without a level get warn for failures and info otherwise', () => {
    expect(guessLevel('upload of /a failed (attempt 1): reset')).toBe('warn');
    expect(guessLevel('readdir /x: EIO (the server did not answer)')).toBe('warn');
    expect(guessLevel('cannot reach the server')).toBe('warn');
    expect(
      guessLevel(
        "conflict: /a.txt: changed on the server; the server's version keeps the name, the local version is saved as x",
      ),
    ).toBe('warn');
    expect(guessLevel('/a.txt was deleted or moved on the server; saving the local version under its name')).toBe(
      'warn',
    );
    expect(guessLevel('recovering /a.bin (3 bytes) from the journal')).toBe('info');
    expect(guessLevel('/a.bin: uploaded while it was written (12 bytes, one streamed request)')).toBe('info');
  });
});

describe('a command that ends after printing', () => {
  it('exits only once its output has left, all of it, through a pipe read late', async () => {
    const { spawn } = await import('node:child_process');
    const log = path.resolve('dist/cli/log.js');
    // 1 MiB in lines, far beyond what a pipe holds: process.exit() right away would cut it short
    const script = `import { exitAfterOutput } from ${JSON.stringify(log)};
      const line = 'x'.repeat(1023) + '\\n';
      for (let i = 0; i < 1024; i++) process.stdout.write(line);
      process.stderr.write('done\\n');
      exitAfterOutput(3);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pause();
    await new Promise((r) => setTimeout(r, 300));
    let out = 0;
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.length));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.stdout.resume();
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(err).toBe('done\n');
    expect(out).toBe(1024 * 1024);
    expect(code).toBe(3);
  });
});
