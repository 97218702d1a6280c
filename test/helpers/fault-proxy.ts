// A fault-injecting HTTP proxy for tests: it sits between a client and
// `seafs serve` and, per request, from a seeded random sequence, answers 500
// or 429 itself (the server never sees the request), forwards the request and
// then resets the client's connection instead of answering (the server did
// the work, the answer is lost), or stalls before forwarding. It can also
// freeze (hold every request without answering, as a SIGSTOPped server) or
// refuse (close every connection at once). A test may also script the fault
// of chosen requests (`script`), including a 500 given after the server did
// the work.
//
// Links: the server builds download and upload URLs from the Host header it
// receives, and the proxy forwards the client's Host unchanged, so the links
// a client gets through the proxy point at the proxy too and the file server
// paths get the same faults.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { prng as seededRandom } from './tree.js';
export { seededRandom };

export interface FaultRates {
  /** probability of answering 500 without forwarding */
  error500?: number;
  /** probability of answering 429 with Retry-After without forwarding */
  throttle429?: number;
  /** probability of forwarding, reading the server's whole answer, then resetting the client's connection */
  resetAfter?: number;
  /** probability of waiting stallMs before forwarding */
  stall?: number;
}

export interface FaultProxyOptions extends FaultRates {
  /** where requests go, e.g. http://127.0.0.1:PORT */
  target: string;
  seed: number;
  /** Retry-After of the injected 429s, seconds (default 1) */
  retryAfterSec?: number;
  /** length of an injected stall (default 4000 ms); [min, max]: drawn from the seeded sequence */
  stallMs?: number | [number, number];
  /** requests the faults may hit (default: all) */
  only?: (method: string, url: string) => boolean;
  /** a status to answer a request with instead of forwarding it (null: forward); applies in every mode but freeze/refuse */
  answer?: (method: string, url: string) => number | null;
  /** cut the client's connection once this many bytes of one request's body to the file server passed (null: never) */
  cutUploadAfter?: (method: string, url: string) => number | null;
  /**
   * a fault chosen by the test for a request (its body read whole first; the
   * seeded draw still happens, so the sequence of the other requests stays):
   * null leaves the request to the rates
   */
  script?: (req: { method: string; url: string; body: string }) => ScriptedFault | null;
}

/** what `script` may ask for: the seeded faults, and a 500 answered after forwarding (the server did the work) */
export type ScriptedFault = 'error500' | 'error500After' | 'throttle429' | 'resetAfter';

export interface FaultCounts {
  requests: number;
  forwarded: number;
  error500: number;
  throttle429: number;
  resetAfter: number;
  stall: number;
  frozen: number;
  refused: number;
  /** body bytes of the file server's answers (/seafhttp/: downloads) passed on to clients */
  downloadBytes: number;
  /** body bytes of requests to the file server (/seafhttp/: uploads) received from clients */
  uploadBytes: number;
  /** connections cut mid-body by cutUploadAfter */
  cut: number;
  /** requests that got a fault from `script` */
  scripted: number;
}

export type ProxyMode = 'faults' | 'freeze' | 'refuse' | 'clean';

export interface FaultProxy {
  /** the proxy's base URL */
  url: string;
  counts: FaultCounts;
  /** body bytes of requests to the file server by its path's first part (upload-api, upload-raw-blks-api...) */
  uploadsByKind: Record<string, number>;
  /** 'faults' (the rates), 'clean' (forward all), 'freeze' (hold all), 'refuse' (close all connections) */
  setMode(mode: ProxyMode): void;
  close(): Promise<void>;
}

type Fault = 'error500' | 'throttle429' | 'resetAfter' | 'stall' | null;

/** The fault for one draw: the rates stacked on [0, 1) in a fixed order. */
export function pickFault(r: number, rates: FaultRates): Fault {
  let edge = 0;
  for (const k of ['error500', 'throttle429', 'resetAfter', 'stall'] as const) {
    edge += rates[k] ?? 0;
    if (r < edge) return k;
  }
  return null;
}

export async function startFaultProxy(opts: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(opts.target);
  const rnd = seededRandom(opts.seed);
  const counts: FaultCounts = {
    requests: 0,
    forwarded: 0,
    error500: 0,
    throttle429: 0,
    resetAfter: 0,
    stall: 0,
    frozen: 0,
    refused: 0,
    downloadBytes: 0,
    uploadBytes: 0,
    cut: 0,
    scripted: 0,
  };
  let mode: ProxyMode = 'faults';
  const byKind: Record<string, number> = {};
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const upstream = new http.Agent({ keepAlive: true, maxSockets: 64 });

  /** a fixed stall takes no draw, so the sequences of existing seeds stay as they were */
  const stallLength = (): number => {
    const s = opts.stallMs ?? 4000;
    return typeof s === 'number' ? s : s[0] + Math.floor(rnd() * (s[1] - s[0]));
  };
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  /**
   * Sends the request on; `lose` reads the server's whole answer and then resets the client instead,
   * `as500` answers 500 instead; `body`: the request's body, already read.
   */
  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    lose: boolean,
    body?: Buffer,
    as500 = false,
  ) => {
    counts.forwarded++;
    const kind = /^\/seafhttp\/([^/]+)\//.exec(req.url ?? '')?.[1];
    if (kind && body) {
      // read whole before (a scripted request): counted, never cut
      counts.uploadBytes += body.length;
      byKind[kind] = (byKind[kind] ?? 0) + body.length;
    } else if (kind) {
      const limit = opts.cutUploadAfter?.(req.method ?? '', req.url ?? '') ?? null;
      let n = 0;
      req.on('data', (d: Buffer) => {
        counts.uploadBytes += d.length;
        byKind[kind] = (byKind[kind] ?? 0) + d.length;
        n += d.length;
        if (limit !== null && n >= limit && !req.socket.destroyed) {
          counts.cut++;
          req.socket.resetAndDestroy();
        }
      });
    }
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent: upstream,
      },
      (ans) => {
        if (as500) {
          ans.resume();
          ans.on('end', () => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error_msg: 'injected 500 after the work' }));
          });
          return;
        }
        if (lose) {
          ans.resume();
          ans.on('end', () => req.socket.resetAndDestroy());
          ans.on('error', () => req.socket.resetAndDestroy());
          return;
        }
        res.writeHead(ans.statusCode ?? 502, ans.headers);
        if (req.url?.startsWith('/seafhttp/')) ans.on('data', (d: Buffer) => (counts.downloadBytes += d.length));
        ans.pipe(res);
        ans.on('error', () => res.destroy());
      },
    );
    up.on('error', () => res.destroy());
    if (body) up.end(body);
    else req.pipe(up);
  };

  const answer = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    status: number,
    headers: Record<string, string>,
    bodyRead = false,
  ) => {
    const send = () => {
      const body = JSON.stringify({ error_msg: `injected ${status}` });
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        ...headers,
      });
      res.end(body);
    };
    if (bodyRead) return send();
    // read the request body first, so the client is not cut off mid-upload
    req.resume();
    req.on('end', send);
  };

  /** A request whose fault `script` chose (its body read whole). */
  const scripted = (req: http.IncomingMessage, res: http.ServerResponse, fault: ScriptedFault, body: Buffer) => {
    counts.scripted++;
    if (fault === 'error500') return answer(req, res, 500, {}, true);
    if (fault === 'throttle429') return answer(req, res, 429, { 'retry-after': String(opts.retryAfterSec ?? 1) }, true);
    forward(req, res, fault === 'resetAfter', body, fault === 'error500After');
  };

  const server = http.createServer((req, res) => {
    counts.requests++;
    if (mode === 'freeze') {
      counts.frozen++;
      return; // held until the client gives up or the proxy closes
    }
    if (mode === 'refuse') {
      counts.refused++;
      req.socket.destroy();
      return;
    }
    const fixed = opts.answer?.(req.method ?? '', req.url ?? '') ?? null;
    if (fixed !== null) return answer(req, res, fixed, {});
    const draw = rnd(); // one draw per request, whatever the mode, keeps the sequence seeded
    const script = opts.script;
    if (script) {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const f =
          mode === 'faults' ? script({ method: req.method ?? '', url: req.url ?? '', body: body.toString() }) : null;
        if (f) return scripted(req, res, f, body);
        const fault =
          mode === 'faults' && (!opts.only || opts.only(req.method ?? '', req.url ?? ''))
            ? pickFault(draw, opts)
            : null;
        if (fault) counts[fault]++;
        if (fault === 'error500') return answer(req, res, 500, {}, true);
        if (fault === 'throttle429')
          return answer(req, res, 429, { 'retry-after': String(opts.retryAfterSec ?? 1) }, true);
        if (fault === 'stall') return later(stallLength(), () => forward(req, res, false, body));
        forward(req, res, fault === 'resetAfter', body);
      });
      return;
    }
    const fault =
      mode === 'faults' && (!opts.only || opts.only(req.method ?? '', req.url ?? '')) ? pickFault(draw, opts) : null;
    if (fault) counts[fault]++;
    switch (fault) {
      case 'error500':
        return answer(req, res, 500, {});
      case 'throttle429':
        return answer(req, res, 429, { 'retry-after': String(opts.retryAfterSec ?? 1) });
      case 'resetAfter':
        return forward(req, res, true);
      case 'stall':
        req.pause();
        return later(stallLength(), () => {
          req.resume();
          forward(req, res, false);
        });
      default:
        return forward(req, res, false);
    }
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s: Socket) => {
    if (mode === 'refuse') {
      counts.refused++;
      s.destroy();
      return;
    }
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    uploadsByKind: byKind,
    setMode(m) {
      mode = m;
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      upstream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
