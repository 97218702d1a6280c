// The account's share links of a library, for user.seafile.share_link: listed
// once and kept a minute; a link is made only when asked for. Seahub's v2.1
// create answers 400 "Share link <token> already exists." when the account
// has any link for that path, an expired one included (FileShareManager's
// get_file_link_by_path/get_dir_link_by_path do not look at expiry). So an
// expired link is deleted before a new one is made, and a 400 at creation
// (a link made elsewhere within the minute) lists that path afresh and
// reuses what it finds.
import { ApiError } from '../../client/errors.js';
import type { SeafileApi, ShareLink } from '../../client/types.js';
import { VfsError } from '../errors.js';

const LINKS_TTL_MS = 60_000;
const trimSlash = (p: string) => (p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p);

interface RepoLinks {
  at: number;
  /** the links that work, by path */
  byPath: Map<string, string>;
  /** tokens of expired links, by path: they block a new link for that path */
  expired: Map<string, string>;
  p?: Promise<void>;
}

/** "already exists" (seahub 7+); older servers handed the existing link back instead */
const isAlreadyExists = (e: unknown) =>
  e instanceof ApiError && e.kind === 'bad_request' && /already exists/i.test(e.serverMessage);

export class ShareLinks {
  private readonly links = new Map<string, RepoLinks>();
  /** calls that created a share link (for tests and the log) */
  created = 0;

  constructor(private readonly api: SeafileApi) {}

  /** The working link of `path`, from the library's list (null: none, or the server cannot say). */
  async existing(repo: string, path: string): Promise<string | null> {
    return (await this.linksOf(repo))?.byPath.get(path) ?? null;
  }

  /** The working link of `path`, or a new one. */
  async getOrCreate(repo: string, path: string): Promise<string> {
    const have = await this.existing(repo, path);
    if (have) return have;
    const create = this.api.createShareLink;
    if (!create) throw new VfsError('ENODATA', 'this server does not make share links');
    await this.dropExpired(repo, path);
    try {
      return this.made(repo, path, await create.call(this.api, repo, path, {}));
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    // made elsewhere since the list was read (or an expired one the list did not show yet)
    const fresh = await this.listPath(repo, path);
    if (fresh.link) return fresh.link;
    if (!fresh.expired) throw new VfsError('EIO', `the server says ${path} has a share link but does not list it`);
    await this.dropExpired(repo, path);
    return this.made(repo, path, await create.call(this.api, repo, path, {}));
  }

  private made(repo: string, path: string, link: ShareLink): string {
    this.created++;
    this.links.get(repo)?.byPath.set(path, link.link);
    return link.link;
  }

  /** delete the account's expired link of `path` (it would refuse a new one) */
  private async dropExpired(repo: string, path: string): Promise<void> {
    const c = this.links.get(repo);
    const token = c?.expired.get(path);
    if (!token) return;
    const del = this.api.deleteShareLink;
    if (!del) throw new VfsError('EIO', `${path}: its share link expired and this server cannot delete it`);
    await del.call(this.api, token);
    c!.expired.delete(path);
  }

  /** the links of one path, listed now (and noted in the library's list) */
  private async listPath(repo: string, path: string): Promise<{ link: string | null; expired: boolean }> {
    const all = (await this.api.listShareLinks?.({ repoId: repo, path })) ?? [];
    let c = this.links.get(repo);
    if (!c) this.links.set(repo, (c = { at: 0, byPath: new Map(), expired: new Map() }));
    let link: string | null = null;
    let expired = false;
    for (const l of all) {
      if (l.repo_id !== repo || trimSlash(l.path) !== path) continue;
      if (l.is_expired) {
        expired = true;
        c.expired.set(path, l.token);
      } else {
        link = l.link;
        c.byPath.set(path, l.link);
      }
    }
    return { link, expired };
  }

  /** The library's links, listed once a minute; null when the server cannot say. */
  private async linksOf(repo: string): Promise<RepoLinks | null> {
    const list = this.api.listShareLinks;
    if (!list) return null;
    const c = this.links.get(repo);
    if (c && !c.p && Date.now() - c.at < LINKS_TTL_MS) return c;
    if (c?.p) {
      await c.p.catch(() => {});
      return this.links.get(repo) ?? null;
    }
    const p = (async () => {
      const all = await list.call(this.api, { repoId: repo });
      const byPath = new Map<string, string>();
      const expired = new Map<string, string>();
      for (const l of all) {
        if (l.repo_id !== repo) continue;
        if (l.is_expired) expired.set(trimSlash(l.path), l.token);
        else byPath.set(trimSlash(l.path), l.link);
      }
      this.links.set(repo, { at: Date.now(), byPath, expired });
    })();
    this.links.set(repo, { at: 0, byPath: c?.byPath ?? new Map(), expired: c?.expired ?? new Map(), p });
    try {
      await p;
    } catch {
      if (c) this.links.set(repo, c);
      else this.links.delete(repo);
      return c ?? null;
    }
    return this.links.get(repo)!;
  }
}
