// How `seafs unmount` reaches a running mount: a unix socket in a runtime dir,
// named after the mount point. The mount process streams progress lines back
// and ends with "done ok" or "done failed". `seafs unlock` sends one line
// `unlock {"library":..,"password":..}` (the socket's folder is the user's
// own, mode 700) and gets "ok NAME" or "error MESSAGE".
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Where control sockets live. root: always /run/seafs, so that a mount started
 * at boot (no XDG_RUNTIME_DIR) and `seafs status`/`unmount` from a login shell
 * (XDG_RUNTIME_DIR=/run/user/0, removed at logout) meet at the same socket.
 */
export function runtimeDir(): string {
  if (process.env.SEAFS_RUNTIME_DIR) return process.env.SEAFS_RUNTIME_DIR;
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) return '/run/seafs';
  if (process.env.XDG_RUNTIME_DIR) return join(process.env.XDG_RUNTIME_DIR, 'seafs');
  return join(tmpdir(), `seafs-${uid}`);
}

export function controlPaths(mountpoint: string): { socket: string; log: string } {
  const h = createHash('sha256').update(mountpoint).digest('hex').slice(0, 16);
  const dir = runtimeDir();
  return { socket: join(dir, `${h}.sock`), log: join(dir, `${h}.log`) };
}

export interface ControlServer {
  /** send a line to every connected `seafs unmount` */
  broadcast(line: string): void;
  close(): Promise<void>;
}

/** Unlocks a library of the mount with a password; resolves with its name, rejects with a message for the user. */
export type UnlockHandler = (library: string, password: string) => Promise<string>;

/** Listen for control commands; `onUnmount` runs once, its lines go to every client. */
export async function listenControl(
  mountpoint: string,
  onUnmount: () => void,
  status: () => string,
  /** further one-line commands (`name [argument]`), each answered with one line */
  commands: Record<string, (arg: string) => string | Promise<string>> = {},
  onUnlock?: UnlockHandler,
): Promise<ControlServer> {
  const { socket } = controlPaths(mountpoint);
  mkdirSync(runtimeDir(), { recursive: true, mode: 0o700 });
  rmSync(socket, { force: true });
  const clients = new Set<net.Socket>();
  const server = net.createServer((c) => {
    c.setEncoding('utf8');
    let buf = '';
    c.on('error', () => clients.delete(c));
    c.on('close', () => clients.delete(c));
    c.on('data', (d: string) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const cmd = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (cmd === 'unmount') {
          clients.add(c);
          onUnmount();
        } else if (cmd === 'status') {
          c.end(status() + '\n');
        } else if (cmd.startsWith('unlock ') && onUnlock) {
          answerUnlock(c, cmd.slice('unlock '.length), onUnlock);
        } else if (Object.hasOwn(commands, cmd.split(' ')[0])) {
          const name = cmd.split(' ')[0];
          Promise.resolve()
            .then(() => commands[name](cmd.slice(name.length + 1)))
            .then(
              (answer) => c.end(answer + '\n'),
              (e: unknown) => c.end(`error ${(e as Error).message}\n`),
            );
        } else {
          c.end(`error unknown command ${cmd}\n`);
        }
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  return {
    broadcast(line: string) {
      for (const c of clients) if (!c.destroyed) c.write(line + '\n');
    },
    async close() {
      await Promise.all([...clients].map((c) => new Promise<void>((r) => (c.destroyed ? r() : c.end(() => r())))));
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(socket, { force: true });
    },
  };
}

function answerUnlock(c: net.Socket, json: string, onUnlock: UnlockHandler): void {
  let req: { library?: unknown; password?: unknown };
  try {
    req = JSON.parse(json) as typeof req;
  } catch {
    req = {};
  }
  if (typeof req.library !== 'string' || typeof req.password !== 'string') {
    c.end('error a library and a password are needed\n');
    return;
  }
  onUnlock(req.library, req.password).then(
    (name) => c.end(`ok ${name}\n`),
    (e: unknown) => c.end(`error ${(e instanceof Error ? e.message : String(e)).replace(/\n/g, ' ')}\n`),
  );
}

/**
 * Hands a library password to the mount at `mountpoint`. Resolves with the
 * mount's answer ("ok NAME" or "error MESSAGE"), or null when no mount answers.
 */
export function requestUnlock(
  mountpoint: string,
  library: string,
  password: string,
  timeoutMs = 60_000,
): Promise<string | null> {
  return queryControl(mountpoint, `unlock ${JSON.stringify({ library, password })}`, timeoutMs);
}

/**
 * Ask the mount at `mountpoint` to unmount; each progress line goes to
 * `onLine`. Resolves true for "done ok", false for "done failed", null when
 * no mount process answers.
 */
export function requestUnmount(mountpoint: string, onLine: (l: string) => void): Promise<boolean | null> {
  const { socket } = controlPaths(mountpoint);
  return new Promise((resolve) => {
    const c = net.connect(socket);
    let buf = '';
    let result: boolean | null = null;
    let connected = false;
    c.setEncoding('utf8');
    c.on('connect', () => {
      connected = true;
      c.write('unmount\n');
    });
    c.on('data', (d: string) => {
      buf += d;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === 'done ok') result = true;
        else if (line.startsWith('done failed')) result = false;
        else onLine(line);
      }
    });
    c.on('error', () => resolve(connected ? (result ?? false) : null));
    c.on('close', () => resolve(connected ? (result ?? false) : null));
  });
}

/** true when a live mount process answers on the control socket */
export function controlAlive(mountpoint: string): Promise<boolean> {
  const { socket } = controlPaths(mountpoint);
  return new Promise((resolve) => {
    const c = net.connect(socket);
    c.setEncoding('utf8');
    c.on('connect', () => c.write('status\n'));
    c.on('data', () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
    setTimeout(() => {
      c.destroy();
      resolve(false);
    }, 3000).unref();
  });
}

/** The mount's `status` answer (JSON text), or null when no mount process answers within `timeoutMs`. */
export function queryStatus(mountpoint: string, timeoutMs = 5000): Promise<string | null> {
  return queryControl(mountpoint, 'status', timeoutMs);
}

/** The mount's one-line answer to `cmd`, or null when no mount process answers within `timeoutMs`. */
export function queryControl(mountpoint: string, cmd: string, timeoutMs = 5000): Promise<string | null> {
  const { socket } = controlPaths(mountpoint);
  return new Promise((resolve) => {
    const c = net.connect(socket);
    let buf = '';
    const timer = setTimeout(() => {
      c.destroy();
      resolve(null);
    }, timeoutMs);
    c.setEncoding('utf8');
    c.on('connect', () => c.write(`${cmd}\n`));
    c.on('data', (d: string) => (buf += d));
    c.on('error', () => {
      clearTimeout(timer);
      resolve(null);
    });
    c.on('close', () => {
      clearTimeout(timer);
      resolve(buf.trim() ? buf.trim() : null);
    });
  });
}
