// What a `seafs mount` process loads (the built CLI, dist/): every module it
// loads stays resident, and some it never uses were most of its memory's
// growth. A mount is run against a server that refuses the login, with
// module hooks recording every module loaded, so the test sees the modules of
// the command line and of the client (the login goes through it).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI } from '../../helpers/server.js';

// ES modules through a load hook; CommonJS ones (undici) and node's own from the process at exit
const HOOKS = `
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.MODULES_LOG, 'esm ' + url + '\\n');
  return next(url, context);
}
`;
const REGISTER = (hooks: string) => `
import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
register(${JSON.stringify(hooks)});
const require = createRequire(import.meta.url);
process.on('exit', () => {
  const lines = [
    ...Object.keys(require.cache).map((f) => 'cjs ' + f),
    ...process.moduleLoadList.map((m) => 'node ' + m),
  ];
  appendFileSync(process.env.MODULES_LOG, lines.join('\\n') + '\\n');
});
`;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** the modules a mount loaded before it gave up on a login the server refused */
async function mountModules(): Promise<{ lines: string[]; stderr: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-modules-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'hooks.mjs'), HOOKS);
  // an empty mount point: a missing one is refused before the login (mount-preflight.ts)
  mkdirSync(path.join(dir, 'mnt'));
  writeFileSync(path.join(dir, 'register.mjs'), REGISTER(pathToFileURL(path.join(dir, 'hooks.mjs')).href));
  const server = http.createServer((_req, res) => {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ non_field_errors: ['Unable to login with provided credentials.'] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const log = path.join(dir, 'modules.log');
    const args = ['--import', path.join(dir, 'register.mjs'), CLI, 'mount', url, path.join(dir, 'mnt')];
    const stderr = await new Promise<string>((resolve) => {
      execFile(
        process.execPath,
        [...args, '--user', 'a@example.com', '--library', 'L'],
        {
          env: { ...process.env, SEAFS_PASSWORD: 'wrong', MODULES_LOG: log, SEAFS_RUNTIME_DIR: path.join(dir, 'run') },
          timeout: 30_000,
        },
        (_err, _out, err) => resolve(err),
      );
    });
    return { lines: readFileSync(log, 'utf8').split('\n'), stderr };
  } finally {
    server.close();
  }
}

describe('the modules a mount process loads', () => {
  it('are the client with undici’s Agent alone, neither the rest of undici nor the server', async () => {
    const { lines, stderr } = await mountModules();
    // the mount got as far as the login, through the client and its Agent
    expect(stderr).toMatch(/log/i);
    expect(lines.some((l) => l.startsWith('esm ') && l.includes('/dist/client/http.js'))).toBe(true);
    expect(lines.some((l) => l.startsWith('cjs ') && l.includes('/undici/lib/dispatcher/agent.js'))).toBe(true);
    // undici's index (fetch, WebSocket, caches, mocks) and, through it, node's own bundled undici
    expect(lines.filter((l) => l.startsWith('cjs ') && /\/undici\/index\.js$/.test(l))).toEqual([]);
    expect(lines.filter((l) => /undici\/lib\/(web|mock|cache)\//.test(l))).toEqual([]);
    expect(lines).not.toContain('node NativeModule internal/deps/undici/undici');
    // `seafs serve`'s server, which the serve command imports when it runs
    expect(lines.some((l) => l.startsWith('esm ') && l.includes('/dist/cli/serve.js'))).toBe(true);
    expect(lines.filter((l) => l.includes('/dist/server/'))).toEqual([]);
  });
});
