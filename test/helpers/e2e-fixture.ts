// Shared set-up of the e2e files: one `seafs serve` child per test file, an
// API client logged in as the admin, a local source folder, and the cleanup of
// every mount and process the file started (afterAll runs even on failure).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { SeafileClient } from '../../src/client/client.js';
import { cleanupMounts } from './mount.js';
import { startTestServer, type TestServer } from './server.js';

export interface E2E {
  server: TestServer;
  api: SeafileClient;
  /** a local scratch folder for sources and copies back (not on a mount) */
  src: string;
  /** repo ids of the libraries created by setupE2E, by name */
  repos: Record<string, string>;
}

/** Registers beforeAll/afterAll; the returned object is filled in by beforeAll. */
export function setupE2E(
  libraries: string[],
  /** extraArgs: options of `seafs serve` (e.g. --server-version 10.0.1) */
  serverOpts: { latencyMs?: number; extraArgs?: string[] } = {},
): E2E {
  const ctx = { repos: {} } as E2E;
  beforeAll(async () => {
    ctx.server = await startTestServer(serverOpts);
    ({ client: ctx.api } = await SeafileClient.login(
      { baseUrl: ctx.server.url },
      ctx.server.adminEmail,
      ctx.server.adminPassword,
    ));
    for (const name of libraries) ctx.repos[name] = (await ctx.api.createLibrary(name)).repo_id;
    ctx.src = mkdtempSync(path.join(os.tmpdir(), 'seafs-e2e-src-'));
  });
  afterAll(async () => {
    try {
      await cleanupMounts();
    } finally {
      await ctx.api?.close().catch(() => {});
      await ctx.server?.stop();
      if (ctx.src) rmSync(ctx.src, { recursive: true, force: true });
    }
  });
  return ctx;
}

/** Writes `size` random bytes to `file` in 1 MiB chunks (async, never one huge buffer). */
export async function writeRandom(file: string, size: number): Promise<void> {
  const fh = await open(file, 'w');
  try {
    for (let done = 0; done < size;) {
      const n = Math.min(1 << 20, size - done);
      await fh.write(randomBytes(n));
      done += n;
    }
  } finally {
    await fh.close();
  }
}
