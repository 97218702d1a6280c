// Time-dependent behaviour of `seafs serve`: --latency-ms, and expiry of
// download and upload links (--link-ttl).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminToken, apiAs, startTestServer, uploadTo, type TestServer } from '../helpers/server.js';

let server: TestServer;
let call: ReturnType<typeof apiAs>;
let repo: string;

beforeAll(async () => {
  server = await startTestServer({ latencyMs: 150, extraArgs: ['--link-ttl', '2'] });
  call = apiAs(server.url, await adminToken(server));
  repo = (await call('POST', '/api2/repos/', { form: { name: 't' } })).json.repo_id;
});

afterAll(async () => {
  await server?.stop();
});

describe('timing', () => {
  it('--latency-ms delays every response', async () => {
    const t0 = performance.now();
    expect((await call('GET', '/api2/ping/')).json).toBe('pong');
    const t1 = performance.now();
    expect(t1 - t0).toBeGreaterThanOrEqual(140);
    expect(t1 - t0).toBeLessThan(2000);
  });

  it('download links and upload links expire after --link-ttl', async () => {
    const up = (await call('GET', `/api2/repos/${repo}/upload-link/`)).json as string;
    expect((await uploadTo(up, '/', { 'a.txt': 'a' })).status).toBe(200);
    const reusable = (await call('GET', `/api2/repos/${repo}/file/`, { query: { p: '/a.txt', reuse: '1' } }))
      .json as string;
    expect((await fetch(reusable)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2300));
    const late = await fetch(reusable);
    expect(late.status).toBe(403);
    expect((await uploadTo(up, '/', { 'b.txt': 'b' })).status).toBe(403);
    // fresh links work again
    const up2 = (await call('GET', `/api2/repos/${repo}/upload-link/`)).json as string;
    expect((await uploadTo(up2, '/', { 'b.txt': 'b' })).status).toBe(200);
  });

  it('unknown paths get 404 and wrong methods 405, as JSON', async () => {
    const nf = await call('GET', '/api2/no-such-endpoint/');
    expect(nf.status).toBe(404);
    expect(nf.json).toBeDefined();
    const wm = await call('PATCH', '/api2/repos/');
    expect(wm.status).toBe(405);
  });
});

describe('throttling (test knob --throttle-per-min)', () => {
  it('answers 429 with Retry-After once a caller exceeds the limit, other callers unaffected', async () => {
    const s = await startTestServer({ extraArgs: ['--throttle-per-min', '5'] });
    try {
      const token = await adminToken(s); // 1 anonymous request
      const api = apiAs(s.url, token);
      for (let i = 0; i < 5; i++) expect((await api('GET', '/api2/auth/ping/')).status).toBe(200);
      const r = await api('GET', '/api2/auth/ping/');
      expect(r.status).toBe(429);
      expect(r.json.detail).toMatch(/^Request was throttled\. Expected available in \d+ seconds\.$/);
      const after = Number(r.headers.get('retry-after'));
      expect(after).toBeGreaterThanOrEqual(1);
      expect(after).toBeLessThanOrEqual(60);
      // the anonymous window of this address is separate from the user's
      expect((await apiAs(s.url, null)('GET', '/api2/ping/')).status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});
