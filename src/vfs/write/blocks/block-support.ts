// Whether an upload can go by blocks at all: the server's block path (off
// when the client lacks the calls, when switched off, or once the server
// showed it lacks the path: then noted in a file of the cache dir, so the
// next mounts do not ask again for a day), and each library's encryption
// (an encrypted library's blocks are the client's to encrypt: whole uploads).
import { readFile, writeFile } from 'node:fs/promises';
import type { SeafileApi } from '../../../client/types.js';

/** the server cannot take this upload by blocks: the whole-file upload runs instead */
export class NoBlocks extends Error {}

export class BlockSupport {
  private readonly plain = new Map<string, boolean | Promise<boolean>>();

  constructor(
    private readonly api: SeafileApi,
    private readonly log: (msg: string) => void,
    /** where the mount notes that the server lacks the block path */
    private readonly stateFile: string | undefined,
    /** why the server cannot take blocks (null: it can, as far as known) */
    private why: string | null,
  ) {}

  /** why uploads by blocks are off (null: they are on, as far as known) */
  get off(): string | null {
    return this.why;
  }

  /** Reads what an earlier mount noted about the server (it lacks the block path). */
  async init(): Promise<void> {
    if (this.why || !this.stateFile) return;
    try {
      const noted = JSON.parse(await readFile(this.stateFile, 'utf8')) as { reason?: string; at?: number };
      // asked again after a day: the server may have been upgraded
      if (noted.reason && Date.now() - (noted.at ?? 0) < 24 * 3600_000) this.why = noted.reason;
    } catch {
      // nothing noted
    }
  }

  /** the block path is unusable on this server (noted for later mounts) */
  turnOff(reason: string): void {
    if (this.why) return;
    this.why = reason;
    this.log(`uploads by blocks are off for this server (${reason}); large files are uploaded whole`);
    if (this.stateFile)
      void writeFile(this.stateFile, JSON.stringify({ reason, at: Date.now() }), { mode: 0o600 }).catch(() => {});
  }

  /** whether the library is unencrypted (asked once per library; undefined until known) */
  plainNow(repo: string): boolean | undefined {
    const v = this.plain.get(repo);
    if (typeof v === 'boolean') return v;
    if (!v) void this.plainOf(repo).catch(() => {});
    return undefined;
  }

  plainOf(repo: string): Promise<boolean> {
    const v = this.plain.get(repo);
    if (v !== undefined) return Promise.resolve(v);
    const p = this.api.getLibrary(repo).then(
      (lib) => {
        this.plain.set(repo, !lib.encrypted);
        return !lib.encrypted;
      },
      (e: unknown) => {
        this.plain.delete(repo);
        throw e;
      },
    );
    this.plain.set(repo, p);
    return p;
  }
}
