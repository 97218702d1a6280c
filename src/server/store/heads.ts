// Library heads and commits. Each change of a library makes a commit object
// (parent, root, description, creator, time) and then moves the head, a tiny
// JSON file per library written atomically: objects first, head last, so a
// kill at any moment leaves the previous or the next state, never a mix.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from './atomic.js';
import { KeyedMutex } from './mutex.js';
import { type ObjectStore, ZERO_ID, sha1 } from './objects.js';
import { readDir, totalSize } from './tree.js';

export interface Commit {
  id: string;
  parent_id: string | null;
  second_parent_id: null;
  root_id: string;
  repo_id: string;
  creator: string; // 40-hex hash of the creator's e-mail, like real servers' "creator" ids
  creator_name: string; // e-mail
  ctime: number;
  desc: string;
  new_merge: boolean;
  conflict: boolean;
  version: number;
  /** internal: what kind of change this was (trash scans look at 'delete' commits) */
  kind?: string;
}

export interface Head {
  commit_id: string;
  root_id: string;
  size: number;
  mtime: number;
}

export interface Change<T> {
  root: string;
  desc: string;
  kind?: string;
  result: T;
}

interface Pending {
  user: string;
  fn: (roots: Map<string, string>) => Promise<Map<string, Change<unknown>> | Change<unknown>>;
  resolve: (value: unknown) => void;
  reject: (e: unknown) => void;
}

export class Heads {
  private dir: string;
  private cache = new Map<string, Head>();
  readonly mutex = new KeyedMutex();
  /** told of every move of a library's head (the notification server's repo-update) */
  onMove: ((repoId: string, commitId: string) => void) | null = null;

  constructor(
    dataDir: string,
    private store: ObjectStore,
  ) {
    this.dir = path.join(dataDir, 'heads');
  }

  async init(): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    // temp files of head writes cut short by a crash
    for (const f of await fsp.readdir(this.dir))
      if (f.startsWith('.tmp-')) await fsp.rm(path.join(this.dir, f), { force: true });
  }

  async get(repoId: string): Promise<Head> {
    const hit = this.cache.get(repoId);
    if (hit) return hit;
    const head = JSON.parse(await fsp.readFile(path.join(this.dir, `${repoId}.json`), 'utf8')) as Head;
    this.cache.set(repoId, head);
    return head;
  }

  /** Builds the commit object of a change (written in the background) and the head it leads to. */
  private async makeCommit(
    repoId: string,
    root: string,
    creator: string,
    desc: string,
    kind: string | undefined,
    parent: Head | null,
  ): Promise<Head> {
    const ctime = Math.floor(Date.now() / 1000);
    const body: Omit<Commit, 'id'> = {
      parent_id: parent ? parent.commit_id : null,
      second_parent_id: null,
      root_id: root,
      repo_id: repoId,
      creator: sha1(creator),
      creator_name: creator,
      ctime,
      desc,
      new_merge: false,
      conflict: false,
      version: 1,
      ...(kind ? { kind } : {}),
    };
    // Stored without its id: the id is the sha1 of the stored record, like every object.
    const id = this.store.putJson(body);
    return { commit_id: id, root_id: root, size: totalSize(await readDir(this.store, root)), mtime: ctime };
  }

  /** Moves the head, once every object written so far (folders, commits) is on disk. */
  private async persist(repoId: string, head: Head): Promise<void> {
    await this.store.flush();
    await writeFileAtomic(path.join(this.dir, `${repoId}.json`), JSON.stringify(head));
    this.cache.set(repoId, head);
    this.onMove?.(repoId, head.commit_id);
  }

  async create(repoId: string, creator: string): Promise<Head> {
    const head = await this.makeCommit(repoId, ZERO_ID, creator, 'Created library', undefined, null);
    await this.persist(repoId, head);
    return head;
  }

  async remove(repoId: string): Promise<void> {
    this.cache.delete(repoId);
    await fsp.rm(path.join(this.dir, `${repoId}.json`), { force: true });
  }

  /**
   * Runs read-head/modify/write-head under the library's lock. `fn` gets the
   * current root(s) and returns the new one(s); an unchanged root makes no
   * commit. Changes of one library that queue up while a head is being
   * written are applied together: one commit each, one flush and one head
   * write for the lot (group commit), each answered only once it is durable.
   */
  async change<T>(
    repoIds: string | string[],
    user: string,
    fn: (roots: Map<string, string>) => Promise<Map<string, Change<T>> | Change<T>>,
  ): Promise<T> {
    const ids = [...new Set(Array.isArray(repoIds) ? repoIds : [repoIds])];
    if (ids.length === 1) return this.enqueue(ids[0], user, fn);
    return this.mutex.run(ids, async () => {
      const heads = new Map<string, Head>();
      const roots = new Map<string, string>();
      for (const id of ids) {
        const h = await this.get(id);
        heads.set(id, h);
        roots.set(id, h.root_id);
      }
      const out = await fn(roots);
      const changes = out instanceof Map ? out : new Map([[ids[0], out]]);
      let result: T | undefined;
      const next: [string, Head][] = [];
      for (const [id, ch] of changes) {
        result = ch.result;
        const h = heads.get(id)!;
        if (ch.root !== h.root_id) next.push([id, await this.makeCommit(id, ch.root, user, ch.desc, ch.kind, h)]);
      }
      for (const [id, head] of next) await this.persist(id, head);
      return result as T;
    });
  }

  private queues = new Map<string, Pending[]>();

  private enqueue<T>(
    repoId: string,
    user: string,
    fn: (roots: Map<string, string>) => Promise<Map<string, Change<T>> | Change<T>>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let queue = this.queues.get(repoId);
      if (!queue) {
        queue = [];
        this.queues.set(repoId, queue);
        // arrivals until the lock is ours join this batch; later ones start the next
        void this.mutex.run(repoId, () => this.drain(repoId));
      }
      queue.push({ user, fn: fn as Pending['fn'], resolve: resolve as (v: unknown) => void, reject });
    });
  }

  private async drain(repoId: string): Promise<void> {
    const batch = this.queues.get(repoId) ?? [];
    this.queues.delete(repoId);
    let head: Head;
    try {
      head = await this.get(repoId);
    } catch (e) {
      for (const p of batch) p.reject(e);
      return;
    }
    const start = head;
    const done: { p: Pending; value: unknown }[] = [];
    for (const p of batch) {
      try {
        const out = await p.fn(new Map([[repoId, head.root_id]]));
        const ch = out instanceof Map ? out.get(repoId) : out;
        if (ch && ch.root !== head.root_id)
          head = await this.makeCommit(repoId, ch.root, p.user, ch.desc, ch.kind, head);
        done.push({ p, value: ch?.result });
      } catch (e) {
        p.reject(e);
      }
    }
    if (head !== start) {
      try {
        await this.persist(repoId, head);
      } catch (e) {
        for (const d of done) d.p.reject(e);
        return;
      }
    }
    for (const d of done) d.p.resolve(d.value);
  }

  async readCommit(id: string): Promise<Commit> {
    return { id, ...(await this.store.getJson<Omit<Commit, 'id'>>(id)) };
  }
}
