// The transfer-link cache and its one rule: a link that fails with 401, 403
// or 404 when used is fetched afresh once; a failure to get a link is not.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/client/errors.js';
import { linkExpired, TransferLinks } from '../../../src/vfs/write/transfer-links.js';

function fakeLinks() {
  const asked: string[] = [];
  let n = 0;
  const api = {
    uploadLink: async (repo: string, dir: string) => {
      asked.push(`upload ${repo} ${dir}`);
      return `u${++n}`;
    },
    updateLink: async (repo: string, dir: string) => {
      asked.push(`update ${repo} ${dir}`);
      return `p${++n}`;
    },
  };
  return { api, asked };
}

const err = (status: number, kind: ConstructorParameters<typeof ApiError>[0]['kind'] = 'forbidden') =>
  new ApiError({ kind, status, operation: 'upload' });

describe('transfer links', () => {
  it('asks the server once per kind and folder while the link is young', async () => {
    const { api, asked } = fakeLinks();
    let requests = 0;
    const links = new TransferLinks(api, 60_000, () => requests++);
    expect(await links.get('upload', 'r', '/a')).toBe('u1');
    expect(await links.get('upload', 'r', '/a')).toBe('u1');
    expect(await links.get('update', 'r', '/a')).toBe('p2');
    expect(await links.get('upload', 'r', '/b')).toBe('u3');
    expect(asked).toEqual(['upload r /a', 'update r /a', 'upload r /b']);
    expect(requests).toBe(3);
  });

  it('a prefetch and the transfer that follows it share one request; a prefetch that fails leaves the next get to ask again', async () => {
    const asked: string[] = [];
    let fail = true;
    const release: (() => void)[] = [];
    const api = {
      uploadLink: async (repo: string, dir: string) => {
        asked.push(`upload ${repo} ${dir}`);
        await new Promise<void>((r) => release.push(r));
        if (fail) throw err(500, 'server');
        return 'u-ok';
      },
      updateLink: async () => 'p',
    };
    const links = new TransferLinks(api, 60_000);
    links.prefetch('upload', 'r', '/a'); // fails: nobody sees it
    await Promise.resolve();
    release.shift()!();
    await new Promise((r) => setImmediate(r));
    fail = false;
    links.prefetch('upload', 'r', '/a');
    const got = links.get('upload', 'r', '/a'); // joins the prefetch under way
    await Promise.resolve();
    expect(asked).toEqual(['upload r /a', 'upload r /a']);
    release.shift()!();
    expect(await got).toBe('u-ok');
    expect(await links.get('upload', 'r', '/a')).toBe('u-ok'); // cached
    expect(asked).toHaveLength(2);
  });

  it('asks again once the link is older than its time to live', async () => {
    const { api, asked } = fakeLinks();
    const links = new TransferLinks(api, 0);
    await links.get('upload', 'r', '/');
    await links.get('upload', 'r', '/');
    expect(asked).toHaveLength(2);
  });

  it('a transfer failing with 403 is tried once more with a fresh link', async () => {
    const { api, asked } = fakeLinks();
    const links = new TransferLinks(api, 60_000);
    const used: string[] = [];
    const out = await links.use('upload', 'r', '/', async (url) => {
      used.push(url);
      if (used.length === 1) throw err(403);
      return 'stored';
    });
    expect(out).toBe('stored');
    expect(used).toEqual(['u1', 'u2']);
    expect(asked).toHaveLength(2);
  });

  it('a second expiry, or a failure of another kind, reaches the caller', async () => {
    const { api } = fakeLinks();
    const links = new TransferLinks(api, 60_000);
    let tries = 0;
    await expect(
      links.use('update', 'r', '/', async () => {
        tries++;
        throw err(404, 'not_found');
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect(tries).toBe(2);
    tries = 0;
    await expect(
      links.use('upload', 'r', '/', async () => {
        tries++;
        throw err(500, 'server');
      }),
    ).rejects.toMatchObject({ status: 500 });
    expect(tries).toBe(1);
  });

  it('a failure to get the link is not retried by the rule', async () => {
    let asked = 0;
    const api = {
      uploadLink: async () => {
        asked++;
        throw err(403);
      },
      updateLink: async () => 'x',
    };
    const links = new TransferLinks(api, 60_000);
    await expect(links.use('upload', 'r', '/', async () => 'never')).rejects.toMatchObject({ status: 403 });
    expect(asked).toBe(1);
  });

  it('names 401, 403 and 404 (or a forbidden/unauthorized kind) as an expired link, nothing else', () => {
    expect([401, 403, 404].map((s) => linkExpired(err(s, 'bad_request')))).toEqual([true, true, true]);
    expect(linkExpired(err(0, 'unauthorized'))).toBe(true);
    expect(linkExpired(err(500, 'server'))).toBe(false);
    expect(linkExpired(err(441, 'target_missing'))).toBe(false);
    expect(linkExpired(new Error('403'))).toBe(false);
  });
});
