// The socket opener of the client's undici Agent: plain sockets as undici
// opens them, TLS ones with the client's secure context (tls.ts), which is
// built only when the first https connection is made.
import type { Socket } from 'node:net';
import type { buildConnector as BuildConnector } from 'undici';
import { buildConnector } from './undici-agent.js';
import type { TlsTrust } from './tls.js';

export function tlsConnector(timeoutMs: number, trust: TlsTrust): BuildConnector.connector {
  const plain = buildConnector({ timeout: timeoutMs });
  let secure: BuildConnector.connector | undefined;
  return (opts, callback) => {
    if (opts.protocol !== 'https:') return plain(opts, callback);
    if (!secure) {
      try {
        secure = buildConnector({ timeout: timeoutMs, secureContext: trust.context() });
      } catch (e) {
        // a CA or key file that cannot be used: the request fails with that reason
        return callback(e as Error, null);
      }
    }
    return secure(opts, (...args) => {
      if (args[1]) keepTlsAlert(args[1]);
      callback(...args);
    });
  };
}

/**
 * TLS 1.3 servers check a client certificate after the handshake: the alert
 * ("certificate required", "unknown ca") arrives as a socket error once the
 * request is sent, and undici then fails the request with its own "other side
 * closed". The alert is put as that error's cause, where the error mapping
 * (http.ts, tls-errors.ts) finds the reason. This listener runs before
 * undici's, which are added after the connect callback.
 */
function keepTlsAlert(socket: Socket): void {
  let alert: Error | undefined;
  socket.on('error', (e: Error & { code?: string; cause?: unknown }) => {
    if (!alert && /^ERR_SSL_/.test(e.code ?? '')) alert = e;
    else if (alert && e !== alert && e.cause === undefined) e.cause = alert;
  });
}
