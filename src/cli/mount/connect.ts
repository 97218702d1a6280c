// The mount's login: a client holding a token (logged in, or the token given
// or kept), the account checked, and each failure explained in one line
// (unreachable servers are told apart, for --retry-for).
import type { ClientOptions } from '../../client/client.js';
import { SeafileClient } from '../../client/client.js';
import { ApiError } from '../../client/errors.js';
import type { TlsFiles } from '../../client/tls.js';
import { loginDevice } from '../accounts/device.js';
import { logger } from '../log.js';
import { certificateError } from '../tls-options.js';
import { TokenRefused, UserError } from '../user-error.js';
import { log } from './mount-log.js';
import { unlockRefreshMs } from './password-resend.js';
import { UnreachableError } from './retry-login.js';
import type { Secrets } from './secrets.js';

/** A failure of the login or the account check, as the user is told it. */
export function explain(e: unknown, url: string, usingToken: boolean): Error {
  if (e instanceof ApiError) {
    switch (e.kind) {
      case 'network':
      case 'timeout':
        return new UnreachableError(`cannot reach the server at ${url}: ${e.message}`);
      case 'server':
        // a proxy in front of a server that is still starting answers 502/503
        return new UnreachableError(`the server at ${url} answered: ${e.message}`, true);
      case 'otp_required':
        return new UserError(
          'the account uses two-factor authentication: pass the current code with --otp CODE (it was missing or refused)',
        );
      case 'certificate':
        return certificateError(e);
      case 'unauthorized':
      case 'bad_request':
        return usingToken
          ? new TokenRefused('the server refused the token')
          : new UserError('login refused: wrong user or password');
      default:
        return new UserError(`the server at ${url} answered: ${e.message}`);
    }
  }
  return e as Error;
}

/**
 * The client's upload choices, from switches kept for troubleshooting:
 * SEAFS_STREAM_UPLOAD=0 uploads large files only after their last close,
 * SEAFS_RAW_UPLOAD=0 sends multi-file uploads through undici, not a bare socket.
 */
export function uploadSwitches(): Pick<ClientOptions, 'streamUploads' | 'rawUploads'> {
  return { streamUploads: process.env.SEAFS_STREAM_UPLOAD !== '0', rawUploads: process.env.SEAFS_RAW_UPLOAD !== '0' };
}

function clientOptions(baseUrl: string, timeoutSec?: number, tls?: TlsFiles) {
  return {
    baseUrl,
    tls,
    timeoutMs: timeoutSec !== undefined ? Math.round(timeoutSec * 1000) : undefined,
    unlockRefreshMs: unlockRefreshMs(),
    // --log-level debug: each API call with its time (operation names only: URLs hold link tokens)
    onAttempt: logger.enabled('debug')
      ? (op: string, method: string, outcome: number | string, ms: number) =>
          logger.debug(`api ${method} ${op}: ${outcome} in ${ms} ms`)
      : undefined,
  };
}

/** A client with a token kept by an earlier mount, made without asking the server (a start offline). */
export function offlineClient(url: string, token: string, timeoutSec?: number, tls?: TlsFiles): SeafileClient {
  return new SeafileClient({ ...clientOptions(url.replace(/\/+$/, ''), timeoutSec, tls), token, ...uploadSwitches() });
}

/** Log in (or check the token); returns a client holding a token and the account's e-mail. */
export async function connect(
  url: string,
  user: string | undefined,
  secrets: Secrets,
  otp?: string,
  timeoutSec?: number,
  tls?: TlsFiles,
): Promise<{ client: SeafileClient; token: string; email: string }> {
  const baseUrl = url.replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl))
    throw new UserError(
      `the server URL must start with http:// or https:// (got ${url}; a saved account is written NAME: or NAME:Library)`,
    );
  let client: SeafileClient;
  let token: string;
  const opts = clientOptions(baseUrl, timeoutSec, tls);
  try {
    if (secrets.token) {
      token = secrets.token;
      client = new SeafileClient({ ...opts, token, ...uploadSwitches() });
    } else {
      // a token of this machine's own, which the user sees and can revoke under the account's devices
      let device;
      try {
        device = loginDevice(baseUrl, user!);
      } catch (e) {
        log(`logging in without a device id (the account's shared token): ${(e as Error).message}`);
      }
      ({ client, token } = await SeafileClient.login(
        { ...opts, ...uploadSwitches() },
        user!,
        secrets.password!,
        otp,
        device,
      ));
    }
  } catch (e) {
    throw explain(e, baseUrl, false);
  }
  try {
    const info = await client.accountInfo();
    return { client, token, email: info.email || user || 'unknown' };
  } catch (e) {
    await client.close();
    throw explain(e, baseUrl, !!secrets.token);
  }
}
