// A proxy in front of `seafs serve` that takes request bodies at a set rate,
// all connections together: a slow uplink, under which uploads lag behind a
// copy onto the mount. Answers pass as they come. The Host header goes
// through unchanged, so the upload links the server builds point at the proxy.
import http from 'node:http';
import type { Socket } from 'node:net';

export interface SlowProxy {
  url: string;
  close(): Promise<void>;
}

export async function startSlowProxy(target: string, bytesPerSec: number): Promise<SlowProxy> {
  const to = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const sockets = new Set<Socket>();
  /** when the bytes taken so far may have gone at the rate */
  let budgetAt = Date.now();
  const server = http.createServer((req, res) => {
    const up = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent },
      (ans) => {
        res.writeHead(ans.statusCode ?? 502, ans.headers);
        ans.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.on('data', (d: Buffer) => {
      budgetAt = Math.max(budgetAt, Date.now()) + (d.length / bytesPerSec) * 1000;
      const full = !up.write(d);
      if (full || budgetAt - Date.now() > 5) {
        req.pause();
        const go = () => setTimeout(() => req.resume(), Math.max(0, budgetAt - Date.now()));
        if (full) up.once('drain', go);
        else go();
      }
    });
    req.on('end', () => up.end());
    req.on('error', () => up.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      agent.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
