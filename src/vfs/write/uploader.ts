// One upload attempt: of one file (the stream that ran while it was written,
// an update of its server copy, or a new upload), or of several new small
// files of one folder in one POST. Attempts only: when to try, how often and
// what to do with the files a batch could not take is upload-queue.ts's job.
// Every upload that replaces a server copy goes through `once` (and the
// replace=1 of a batch through `batch`): the place for a check of the
// server's version before replacing it.
import { ApiError } from '../../client/errors.js';
import { mayHaveLanded, VfsError } from '../errors.js';
import { lockedLibrary } from '../libraries/encrypted-unlock.js';
import type { BatchFile, DirEntry, SeafileApi } from '../../client/types.js';
import { baseOf, joinPath, nfc, parentOf } from '../common/paths.js';
import type { TransferLinks } from './transfer-links.js';
import type { BlockUploads } from './blocks/block-uploads.js';
import type { FileState } from './file-state.js';
import type { FileJournal } from './file-journal.js';
import type { LocalData } from './local-data.js';
import { freeConflictName } from './conflict-name.js';
import type { Streams } from './streaming.js';
import { setTimeOf, uploadsUnderTempName, type UploadResult, type WriteBackHooks, type WriteStats } from './types.js';
import type { Verdict, VersionCheck } from './version-check.js';

/** Runs fn holding the locks of every state. */
function lockAll<T>(states: FileState[], fn: () => Promise<T>): Promise<T> {
  let f = fn;
  for (const s of states) {
    const inner = f;
    f = () => s.lock(inner);
  }
  return f();
}

/** uploads of one file the server stored at the wrong size, in a row, before the queue's own retries */
const WRONG_SIZE_TRIES = 3;

export class Uploader {
  constructor(
    private readonly api: SeafileApi,
    private readonly links: TransferLinks,
    private readonly streams: Streams,
    private readonly journal: FileJournal,
    private readonly data: LocalData,
    private readonly stats: WriteStats,
    private readonly hooks: WriteBackHooks,
    private readonly check: VersionCheck,
    /** resolves once the folder (made in the mount, maybe not on the server yet) is there; throws why not */
    private readonly folderReady: (repo: string, dir: string) => Promise<void> = async () => {},
    /** large files of unencrypted libraries: only the blocks the server lacks are sent */
    private readonly blocks: BlockUploads | null = null,
  ) {}

  /** whether several files can go in one POST */
  get batches(): boolean {
    return !!this.api.uploadBatch;
  }

  /** Version `v` of `s` landed at (repo, path): note it, drop the journal entry when clean, tell the vfs. */
  async record(s: FileState, v: number, repo: string, path: string, res: UploadResult): Promise<void> {
    const clean = s.uploaded(v, path, res.id);
    this.stats.uploads++;
    this.stats.uploadedBytes += res.size;
    // still dirty (written meanwhile): the entry is rewritten with the new base
    if (clean) await this.journal.forget(s);
    else await this.journal.moved(s);
    this.hooks.onUploaded(s, res, repo, path);
  }

  /**
   * One upload of the current content of `s` to (repo, path); the caller holds
   * the file's lock. Nothing the mount did not see is replaced: when the server
   * holds another version than the one the local data started from, the local
   * version is saved beside it as a conflict copy, and `landed` names it.
   */
  async once(s: FileState, repo: string, path: string): Promise<UploadResult> {
    await this.folderReady(repo, parentOf(path));
    // the link the upload will most likely use comes while the check lists the folder
    this.links.prefetch(s.uploadKind(path) === 'update' ? 'update' : 'upload', repo, parentOf(path));
    const v = await this.check.verdict(s, repo, path);
    const checked = Date.now();
    const res = await this.afterCheck(s, repo, path, v);
    this.noteWindow(Date.now() - checked);
    return res;
  }

  /** how long a change by someone else could still be replaced: from the check to the upload's answer */
  private noteWindow(ms: number): void {
    this.stats.checkWindows++;
    this.stats.checkWindowTotalMs += ms;
    this.stats.checkWindowMaxMs = Math.max(this.stats.checkWindowMaxMs, ms);
  }

  private async afterCheck(s: FileState, repo: string, path: string, v: Verdict): Promise<UploadResult> {
    const dir = parentOf(path);
    const name = baseOf(path);
    if (v.kind === 'changed') {
      this.streams.stop(s, 'conflict');
      return this.conflictCopy(s, repo, path, v.entry, v.names);
    }
    if (v.kind === 'no-folder') {
      this.streams.stop(s, 'folder gone');
      this.hooks.log(`the folder of ${path} is gone on the server; creating it again to save the file`);
      await this.api.mkdir(repo, dir, { createParents: true });
      this.hooks.folderRecreated?.(repo, dir);
    }
    if (v.kind !== 'base' && s.uploadKind(path) === 'update') {
      this.streams.stop(s, 'server copy gone');
      this.hooks.log(`${path} was deleted or moved on the server; saving the local version under its name`);
    }
    // the stream that ran while the file was written, when it is still a pure append
    // these two answer with no size of the server's: asked (one call beside a large upload); stored
    // wrong, the file goes whole below, over that copy
    const streamed = await this.streams.finish(s, repo, path);
    if (streamed && (await this.storedAsSent(s, repo, path, streamed))) return streamed;
    const byBlocks = await this.blocks?.upload(s, repo, path, () => this.data.toDisk(s));
    if (byBlocks && (await this.storedAsSent(s, repo, path, byBlocks))) return byBlocks;
    const size = s.size;
    if (v.kind === 'base' && s.uploadKind(path) === 'update') {
      await this.data.toDisk(s); // the update call sends a file
      try {
        const time = setTimeOf(s, true);
        const id = await this.links.use('update', repo, dir, (url) =>
          this.api.update(url, path, s.tmp, { lastModify: s.mtime, repoId: repo }),
        );
        return { id, size, ...time };
      } catch (e) {
        if (!(e instanceof ApiError && (e.kind === 'target_missing' || e.kind === 'not_found'))) throw e;
        // the server copy went away after the check: upload it as a new file
      }
    }
    return this.fresh(s, repo, dir, name);
  }

  /** A file of a multi-file POST: its bytes when it is in memory, else its temp file. */
  private part(s: FileState, name: string): BatchFile {
    const data = this.data.bytes(s);
    return data ? { path: s.tmp, name, data } : { path: s.tmp, name };
  }

  /** Upload the local data as the file `name` of `dir` (replacing what is there). */
  private async fresh(s: FileState, repo: string, dir: string, name: string): Promise<UploadResult> {
    if (uploadsUnderTempName(name)) return this.awkward(s, repo, dir, name);
    // the multi-file body when available: it also carries the file's modification time
    const many = this.api.uploadBatch;
    if (!many) await this.data.toDisk(s); // the single upload call sends a file
    for (let attempt = 1; ; attempt++) {
      const size = s.size;
      const time = setTimeOf(s, !!many);
      const res = await this.links.use('upload', repo, dir, (url) =>
        many
          ? many(url, dir, [this.part(s, name)], { replace: true, lastModify: s.mtime, repoId: repo })
          : this.api.upload(url, dir, s.tmp, name, { replace: true, repoId: repo }),
      );
      // the server answers with the name NFC-normalised (paths reach here normalised already)
      const r = res.find((x) => nfc(x.name) === nfc(name)) ?? res[0];
      // stored wrong: sent again over it (replace), a few times, then left to the queue's retries
      if (r && this.wrongSize(joinPath(dir, r.name), size, r.size)) {
        if (attempt < WRONG_SIZE_TRIES) continue;
        s.storedWrong(joinPath(dir, r.name), r.id);
        throw new VfsError('EIO', `${joinPath(dir, name)}: the server stored another size than was sent`);
      }
      const other = r && nfc(r.name) !== nfc(name);
      if (other) this.hooks.log(`upload of ${joinPath(dir, name)} landed as ${r.name}`);
      return { id: r?.id ?? '', size, landed: other ? joinPath(dir, r.name) : undefined, ...time };
    }
  }

  /** whether the server's file at `path` (when it is still the one `res` names) has the size sent */
  private async storedAsSent(s: FileState, repo: string, path: string, res: UploadResult): Promise<boolean> {
    const d = await this.api.fileDetail(repo, path).catch(() => null);
    if (!d || d.id !== res.id || !this.wrongSize(path, res.size, d.size)) return true;
    s.storedWrong(path, res.id);
    return false;
  }

  /**
   * Whether the server's answer gives a size other than the bytes sent.
   * Seafile's C fileserver (10.0 at least) can store one stray CR at the end
   * of a multipart part: its parser writes out a buffer ending in the CR of
   * the CRLF before the boundary when a network read stops between the two.
   * Rare (a read boundary at that very byte) but seen in tests; a server
   * that gives no size is taken at its word.
   */
  private wrongSize(path: string, sent: number, got: number | undefined): boolean {
    if (typeof got !== 'number' || !Number.isFinite(got) || got === sent) return false;
    this.stats.storedWrong++;
    this.hooks.log(`upload of ${path}: the server stored ${got} bytes where ${sent} were sent; sending it again`);
    return true;
  }

  /** The server holds another version at `path`: upload ours as a conflict copy beside it. */
  private async conflictCopy(
    s: FileState,
    repo: string,
    path: string,
    theirs: DirEntry,
    names: Set<string>,
  ): Promise<UploadResult> {
    const dir = parentOf(path);
    const author = await this.author();
    const copy = freeConflictName(baseOf(path), author, new Date(s.mtime), (n) => names.has(n));
    const what = theirs.type === 'dir' ? 'a folder now has its name' : 'it was changed on the server';
    this.hooks.log(
      `conflict: ${path}: ${what}; the server's version keeps the name, the local version is saved as ${copy}`,
    );
    this.stats.conflicts++;
    const res = await this.fresh(s, repo, dir, copy);
    return { ...res, landed: res.landed ?? joinPath(dir, copy) };
  }

  private authorName: Promise<string> | null = null;

  /** the account's e-mail for conflict names (asked once; empty when the server will not say) */
  private author(): Promise<string> {
    this.authorName ??= this.api.accountInfo().then(
      (a) => a.email ?? '',
      () => {
        this.authorName = null;
        return '';
      },
    );
    return this.authorName;
  }

  /**
   * A name an upload cannot carry as is (uploadsUnderTempName: a double quote
   * would arrive as %22, a backslash would cut the name, a long one fails):
   * upload under a plain temporary name, then rename through the API
   * (form-encoded, kept as sent) onto the real name.
   */
  private async awkward(s: FileState, repo: string, dir: string, name: string): Promise<UploadResult> {
    await this.data.toDisk(s);
    const tmpName = `.seafs-upload-${s.id}`;
    const tmpPath = dir === '/' ? `/${tmpName}` : `${dir}/${tmpName}`;
    for (let attempt = 1; ; attempt++) {
      const size = s.size;
      const time = setTimeOf(s, false);
      const res = await this.links.use('upload', repo, dir, (url) =>
        this.api.upload(url, dir, s.tmp, tmpName, { replace: true, repoId: repo }),
      );
      if (res[0] && this.wrongSize(joinPath(dir, name), size, res[0].size)) {
        if (attempt < WRONG_SIZE_TRIES) continue;
        throw new VfsError('EIO', `${joinPath(dir, name)}: the server stored another size than was sent`);
      }
      const path = dir === '/' ? `/${name}` : `${dir}/${name}`;
      await this.api.deleteFile(repo, path); // the write replaces whatever is there
      await this.api.renameFile(repo, tmpPath, name);
      return { id: res[0]?.id ?? '', size, ...time };
    }
  }

  /**
   * New files of one folder (one or several): one listing for the conflict
   * check, then one POST per modification time. Returns the files that must
   * go on their own (moved meanwhile, missing from the answer, written again,
   * or all of them when the POST failed): the queue takes them back.
   */
  async batch(states: FileState[]): Promise<FileState[]> {
    const uploadBatch = this.api.uploadBatch;
    if (!uploadBatch) return states;
    const rest: FileState[] = [];
    await lockAll(states, async () => {
      const repo = states[0].repo;
      const dir = parentOf(states[0].path);
      const ok: FileState[] = [];
      for (const s of states) {
        if (!s.dirty || s.deleted || s.hold) continue;
        if (s.remotePath !== null || s.repo !== repo || parentOf(s.path) !== dir) rest.push(s);
        else ok.push(s);
      }
      if (ok.length === 0) return;
      try {
        await this.folderReady(repo, dir);
      } catch {
        // its creation failed again: each file's own upload fails with that error (and is retried)
        rest.push(...ok);
        return;
      }
      let checkedAt = Date.now();
      this.links.prefetch('upload', repo, dir);
      try {
        // the batch replaces nothing: a name the server holds now goes on its own (conflict check);
        // a listing already under way may predate a change made before these files closed: not joined
        const there = await this.check.folder(repo, dir, Infinity);
        checkedAt = Date.now();
        for (let i = ok.length - 1; i >= 0; i--) {
          if (!there || there.has(baseOf(ok[i].path))) rest.push(...ok.splice(i, 1));
        }
      } catch (e) {
        if (!lockedLibrary(e))
          this.hooks.log(
            `listing ${dir} before a batch upload failed, uploading its files one by one: ${(e as Error).message}`,
          );
        rest.push(...ok.splice(0));
      }
      if (ok.length === 0) return;
      // one last_modify per POST, so files go in groups of one second: each keeps the time it was
      // written (or set) where the server keeps last_modify, instead of showing the upload's time
      // afterwards (a source would then look newer than the object built from it, and make rebuilds)
      const groups = new Map<number, FileState[]>();
      for (const s of ok) {
        const t = Math.floor(s.mtime / 1000) * 1000;
        const g = groups.get(t);
        if (g) g.push(s);
        else groups.set(t, [s]);
      }
      for (const [lastModify, group] of groups) {
        rest.push(...(await this.post(uploadBatch, repo, dir, group, lastModify, checkedAt)));
      }
    });
    return rest;
  }

  /** One POST of `ok` (checked new files of `dir`); returns the files that must go on their own. */
  private async post(
    uploadBatch: NonNullable<SeafileApi['uploadBatch']>,
    repo: string,
    dir: string,
    ok: FileState[],
    lastModify: number | undefined,
    checkedAt: number,
  ): Promise<FileState[]> {
    const rest: FileState[] = [];
    const versions = ok.map((s) => s.version);
    const paths = ok.map((s) => s.path);
    const began = ok.map((s) => s.attempt());
    // a file's own time went as last_modify when it is the POST's (its group's second)
    const sec = (ms: number) => Math.floor(ms / 1000);
    const times = ok.map((s) => setTimeOf(s, lastModify !== undefined && sec(lastModify) === sec(s.mtime)));
    try {
      await Promise.all(ok.map((s) => this.journal.persist(s)));
      const files = ok.map((s) => this.part(s, baseOf(s.path)));
      const res = await this.links.use('upload', repo, dir, (url) =>
        uploadBatch(url, dir, files, { replace: true, lastModify, repoId: repo }),
      );
      this.noteWindow(Date.now() - checkedAt);
      const byName = new Map(res.map((r) => [nfc(r.name), r]));
      for (let i = 0; i < ok.length; i++) {
        const s = ok[i];
        const r = byName.get(nfc(baseOf(paths[i])));
        if (!r) {
          rest.push(s);
          continue;
        }
        if (this.wrongSize(paths[i], began[i].size, r.size)) {
          // that copy is the file's base now: it goes again on its own, replacing it
          s.storedWrong(paths[i], r.id);
          rest.push(s);
          continue;
        }
        await this.record(s, versions[i], repo, paths[i], { id: r.id, size: r.size, ...times[i] });
        if (s.dirty && s.writers === 0) rest.push(s);
      }
      if (ok.length > 1) this.stats.batches++;
    } catch (e) {
      if (!lockedLibrary(e))
        this.hooks.log(
          `batch upload of ${ok.length} files to ${dir} failed, uploading them one by one: ${(e as Error).message}`,
        );
      // the POST may have stored them although its answer was lost: the conflict check must know
      if (mayHaveLanded(e)) ok.forEach((s, i) => s.unsure(began[i]));
      rest.push(...ok);
    }
    return rest;
  }
}
