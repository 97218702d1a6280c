// Ports and helper scripts shared by the tests that start daemons of their own.
import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Runs `bash SCRIPT ARGS` (10 minutes at most); its stdout, or an error naming the script and its stderr. */
export function runScript(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', [script, ...args], { timeout: 10 * 60_000 }, (e, out, err) =>
      e ? reject(new Error(`${path.basename(script)} ${args[0]} failed: ${e.message}\n${err}`)) : resolve(out),
    ),
  );
}
