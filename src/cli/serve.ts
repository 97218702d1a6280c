// `seafs serve`: a local server of the web API storing data on disk. The server's
// code is imported by the command's handler only: every seafs process reads
// this module (yargs lists the commands), and a mount never needs the server.
import type { CommandModule } from 'yargs';
import { LOG_LEVELS, logger, printOut, type LogLevel } from './log.js';
import { firstLine } from './mount/secrets.js';
import { parseSize } from './size-units.js';

interface ServeArgs {
  data: string;
  host: string;
  port: number;
  'admin-email': string;
  'admin-password-file'?: string;
  'latency-ms': number;
  'unlock-ttl': number;
  'link-ttl': number;
  /** bytes (coerced from the size given) */
  'max-upload-size'?: number;
  'throttle-per-min'?: number;
  'body-idle-timeout': number;
  'login-fail-limit': number;
  'login-fail-window': number;
  'server-version'?: string;
  'refuse-emoji-names': boolean;
  fileserver: 'c' | 'go';
  'max-library-files'?: number;
  notifications: boolean;
  'block-grace': number;
  verbose: boolean;
  'log-level'?: LogLevel;
  'log-file'?: string;
  edition: 'community' | 'pro';
}

export const serveCommand: CommandModule<object, ServeArgs> = {
  command: 'serve',
  describe: 'Run a local server of the web API, storing data on disk',
  builder: (y) =>
    y
      .option('data', { type: 'string', demandOption: true, describe: 'Data directory (created if missing)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'Address to listen on' })
      .option('port', { type: 'number', default: 8000, describe: 'Port (0 picks a free one; the real one is printed)' })
      .option('admin-email', { type: 'string', demandOption: true, describe: 'E-mail of the administrator account' })
      .option('admin-password-file', {
        type: 'string',
        describe:
          'File whose first line is the administrator password (or set SEAFS_ADMIN_PASSWORD; never on the command line)',
      })
      .option('latency-ms', {
        type: 'number',
        default: 0,
        describe: 'Delay every response by N ms (models a distant server)',
      })
      .option('unlock-ttl', {
        type: 'number',
        default: 3600,
        describe: 'Seconds after its password was given that an encrypted library stays unlocked (not extended by use)',
      })
      .option('link-ttl', {
        type: 'number',
        default: 3600,
        describe: 'Seconds download/upload links stay valid (for tests)',
      })
      .option('max-upload-size', {
        alias: 'max-upload-mb',
        type: 'string',
        describe:
          'Largest accepted upload, 442 above it: a size such as 5M or 1G, a plain number is MB of 1,000,000 bytes (for tests; default unlimited)',
        coerce: (v: unknown) =>
          parseSize((Array.isArray(v) ? v[v.length - 1] : v) as string, '--max-upload-size', 1_000_000),
      })
      .option('throttle-per-min', {
        type: 'number',
        describe: 'Answer 429 + Retry-After above N web API requests a minute per user (for tests; default off)',
      })
      .option('body-idle-timeout', {
        type: 'number',
        default: 30,
        describe: 'Seconds a request body (or a zip download) may stall before the connection is closed',
      })
      .option('login-fail-limit', {
        type: 'number',
        default: 10,
        describe: 'Wrong logins per account (5x per address) in a window before 429',
      })
      .option('login-fail-window', { type: 'number', default: 300, describe: 'That window in seconds' })
      .option('edition', {
        choices: ['community', 'pro'] as const,
        default: 'pro' as const,
        describe:
          'Answer as Seafile Pro (file locks) or Community Edition (server-info without "seafile-pro"; a lock answers 500, an unlock 403, as the real CE server does)',
      })
      .option('server-version', {
        type: 'string',
        describe:
          'The seafile-server version to behave as, X.Y.Z: 11.0 virtual user ids and Bearer tokens, 12.0 the ' +
          'direct download and 447 for too many files, 12.0.4 last_modify kept, 13.0 stricter names, 13.0.18 ' +
          'no api2 share-link views (default: reports 12.0.4, keeps last_modify, otherwise answers as 10.0)',
      })
      .option('fileserver', {
        choices: ['c', 'go'] as const,
        default: 'c' as const,
        describe:
          'Which file server to answer as: c (seafile-server up to 12) or go (the default of the 13+ images: ' +
          'errors as text/plain, no update-blks-api, flags read from the query or the form)',
      })
      .option('max-library-files', {
        type: 'number',
        describe: 'Files a library may hold before creating one is refused as "too many files" (442; 447 from 12.0)',
      })
      .option('refuse-emoji-names', {
        type: 'boolean',
        default: false,
        describe:
          'Refuse emoji in mkdir, create, rename and library names (400), as the newest seahub does; uploads take them',
      })
      .option('notifications', {
        type: 'boolean',
        default: true,
        describe:
          'Offer the notification server (a websocket at /notification that tells subscribed clients of every ' +
          'commit and lock change); --no-notifications turns it off, as on servers without one',
      })
      .option('block-grace', {
        type: 'number',
        default: 3600,
        describe:
          'Seconds a block sent by upload-raw-blks-api waits for a commit that uses it; then it is removed ' +
          '(until then it counts against the quota)',
      })
      .option('verbose', {
        type: 'boolean',
        default: false,
        describe: 'Log each request (link tokens and passwords redacted)',
      })
      .option('log-level', { choices: LOG_LEVELS, describe: 'Least important messages logged (default info)' })
      .option('log-file', { type: 'string', describe: 'Append timestamped log lines to this file instead of stderr' })
      .epilog(
        'Accounts: the administrator creates users with PUT /api2/accounts/{email}/ (password, name, ' +
          'storage = quota in MB, negative = unlimited, totp_secret = base32 secret that turns on two-factor auth).',
      ) as never,
  handler: async (argv) => {
    const version = argv['server-version'];
    const { parseServerVersion } = await import('../server/context.js');
    if (version !== undefined && !parseServerVersion(version))
      throw new Error(`--server-version must look like 12.0.4 (got "${version}")`);
    if (!(argv['block-grace'] > 0)) throw new Error(`--block-grace must be a number of seconds above 0`);
    const password = argv['admin-password-file']
      ? await firstLine(argv['admin-password-file'], 'password')
      : process.env.SEAFS_ADMIN_PASSWORD;
    if (!password)
      throw new Error('give the administrator password in SEAFS_ADMIN_PASSWORD or with --admin-password-file');
    try {
      // stderr lines stay bare (tests and scripts read the request lines as they are)
      logger.configure({ level: argv['log-level'] ?? 'info', file: argv['log-file'], prefix: '' });
    } catch (e) {
      throw new Error(
        `cannot open the log file ${argv['log-file']}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    logger.addSecret(password);
    const { startServer } = await import('../server/index.js');
    const server = await startServer({
      dataDir: argv.data,
      host: argv.host,
      port: argv.port,
      adminEmail: argv['admin-email'],
      adminPassword: password,
      latencyMs: argv['latency-ms'],
      unlockTtlSec: argv['unlock-ttl'],
      linkTtlSec: argv['link-ttl'],
      maxUploadBytes: argv['max-upload-size'],
      log: (line) => (line.startsWith('error: ') ? logger.error(line.slice(7)) : logger.info(line)),
      logRequests: argv.verbose,
      throttlePerMin: argv['throttle-per-min'],
      bodyIdleSec: argv['body-idle-timeout'],
      loginFailLimit: argv['login-fail-limit'],
      loginFailWindowSec: argv['login-fail-window'],
      edition: argv.edition,
      serverVersion: version,
      refuseEmojiNames: argv['refuse-emoji-names'],
      fileserver: argv.fileserver,
      maxLibraryFiles: argv['max-library-files'],
      notifications: argv.notifications,
      blockGraceSec: argv['block-grace'],
    });
    printOut(`listening on ${server.url}\n`);
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      server.close().then(
        () => process.exit(0),
        (e) => {
          logger.error(`seafs serve: ${(e as Error).message}`);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  },
};
