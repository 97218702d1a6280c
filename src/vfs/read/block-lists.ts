// The block lists of file versions, as the server gives them
// (GET file/?p=...&op=downloadblks): a file id and its block ids in order.
// A list counts only when the server says it is that of the version read
// (its file_id), never for an encrypted library (its blocks hold other
// bytes than the file's), nor for a version whose size is not known (a
// file the server changed after it was listed: block-reuse.ts places
// blocks from the end by the size). Kept per file id (a file id names one
// list). A server that does not answer the call (405, 400, 501, an answer
// that is no list; or three error answers) before it ever answered one is
// not asked again. A 404 is a file gone since it was listed (seahub
// answers it for a missing path whatever the op): that file only.
import { ApiError } from '../../client/errors.js';
import type { SeafileApi } from '../../client/types.js';
import type { RemoteFile } from './types.js';

const ID = /^[0-9a-f]{40}$/;
const ZERO_ID = '0'.repeat(40);
const MAX_KEPT = 4096;

export class BlockLists {
  /** the server does not give block lists */
  off = false;
  private answered = false;
  private failures = 0;
  private readonly lists = new Map<string, Promise<string[] | null>>();
  readonly stats = { asked: 0, got: 0 };

  constructor(
    private readonly api: SeafileApi,
    /** whether the library is unencrypted (false when unknown) */
    private readonly plain: (repo: string) => Promise<boolean>,
  ) {}

  /** whether a list may be had for this file at all */
  possible(f: RemoteFile): boolean {
    return (
      !this.off && !!this.api.fileBlocks && !f.commit && !f.sizeUnsure && ID.test(f.version) && f.version !== ZERO_ID
    );
  }

  /** the list asked for or had already (no call) */
  cached(version: string): Promise<string[] | null> | undefined {
    return this.lists.get(version);
  }

  /** The version's block ids, or null (none to be had); never rejects. */
  get(f: RemoteFile): Promise<string[] | null> {
    if (!this.possible(f)) return Promise.resolve(null);
    const version = f.version;
    const had = this.lists.get(version);
    if (had) return had;
    const p = this.ask(f, version);
    this.lists.set(version, p);
    if (this.lists.size > MAX_KEPT) this.lists.delete(this.lists.keys().next().value as string);
    return p;
  }

  private async ask(f: RemoteFile, version: string): Promise<string[] | null> {
    if (!(await this.plain(f.repo).catch(() => false))) return null;
    this.stats.asked++;
    try {
      const fb = await this.api.fileBlocks!(f.repo, f.path);
      this.answered = true;
      if (fb.encrypted || fb.fileId !== version || (fb.ids.length === 0) !== (f.size === 0)) return null;
      this.stats.got++;
      return fb.ids;
    } catch (e) {
      const status = e instanceof ApiError ? e.status : 0;
      if (status === 404) return null;
      const refused = [400, 405, 501].includes(status) || (e instanceof ApiError && e.kind === 'protocol');
      // (an error answer counts; a server out of reach does not)
      if (status >= 500) this.failures++;
      if (!this.answered && (refused || this.failures >= 3)) this.off = true;
      // a failure that may pass (the network, the server busy): asked again by a later first read
      if (!refused) this.lists.delete(version);
      return null;
    }
  }
}
