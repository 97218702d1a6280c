// The pump: while a file is written in order, each block the writes have
// passed is hashed and sent at once, a request's worth at a time (two groups
// on their way while the next is hashed), so a fresh large file is on its way as
// it is written, as the streamed upload was. What it leaves (the last block,
// blocks written again) goes at the upload after the last close
// (block-uploads.ts), which stops the pump first.
import type { BlockPiece } from '../../../client/types.js';
import { parentOf } from '../../common/paths.js';
import type { FileState } from '../file-state.js';
import type { BlockMap } from './block-map.js';
import type { BlockSender } from './block-sender.js';
import type { Hasher } from '../../common/block-hasher.js';

interface Pump {
  running: Promise<void> | null;
  stop: boolean;
  failed: boolean;
  /** blocks below this were looked at already */
  cursor: number;
}

export class BlockPumps {
  private readonly pumps = new WeakMap<FileState, Pump>();

  constructor(
    private readonly sender: BlockSender,
    private readonly hasher: Hasher,
    private readonly blockSize: number,
    private readonly log: (msg: string) => void,
    private readonly folderReady: (repo: string, dir: string) => Promise<void>,
    /** `m` is still the file's block map (not replaced since) */
    private readonly current: (s: FileState, m: BlockMap) => boolean,
  ) {}

  /** The writes passed a block: the file's pump runs, unless it runs already, was stopped or failed. */
  kick(s: FileState, m: BlockMap): void {
    let p = this.pumps.get(s);
    if (!p) {
      p = { running: null, stop: false, failed: false, cursor: 0 };
      this.pumps.set(s, p);
    }
    if (p.running || p.stop || p.failed) return;
    const pump = p;
    pump.running = this.run(s, m, pump)
      .catch((e: unknown) => {
        pump.failed = true;
        this.log(`${s.path}: blocks could not be sent while written (${(e as Error).message}); they go after close`);
      })
      .finally(() => {
        pump.running = null;
        // the writes may have passed more blocks meanwhile
        if (!pump.stop && !pump.failed && this.current(s, m) && this.nextGroup(m, pump).length > 0) this.kick(s, m);
      });
  }

  /** Stops the file's pump (what it is sending still goes). */
  halt(s: FileState): void {
    const p = this.pumps.get(s);
    if (p) p.stop = true;
    this.pumps.delete(s);
  }

  /** Stops the file's pump and waits for what it is sending. */
  async stop(s: FileState): Promise<void> {
    const p = this.pumps.get(s);
    if (!p) return;
    this.halt(s);
    await p.running?.catch(() => {});
  }

  /** the next blocks the in-order writes have passed that have no id yet (at most a group) */
  private nextGroup(m: BlockMap, p: Pump): number[] {
    if (m.seqEnd === null) return [];
    // a block is done once the writes are past it by more than a write still in flight may lag
    const done = Math.floor((m.seqEnd - m.reorder) / this.blockSize);
    const out: number[] = [];
    for (let i = p.cursor; i < done && out.length < this.sender.group(); i++) if (m.ids[i] == null) out.push(i);
    return out;
  }

  private async run(s: FileState, m: BlockMap, p: Pump): Promise<void> {
    const repo = s.repo;
    const dir = parentOf(s.path);
    await this.folderReady(repo, dir);
    // up to `concurrency` groups on their way at once, each asking which of its blocks the server
    // lacks and sending those: one at a time left the line idle while the server stored a group
    // and answered, and while the next group's ask went to seahub
    const sending: Promise<void>[] = [];
    /** waits until at most `n` groups are on their way (a failed one fails the pump) */
    const settle = async (n: number) => {
      while (sending.length > n) await sending.shift();
    };
    try {
      for (;;) {
        // what the writes passed meanwhile, up to a request's worth: a group fills while the others are sent
        let idx = this.nextGroup(m, p);
        if (idx.length < this.sender.group()) {
          // not a full request yet: let it grow while the others are sent
          await settle(0);
          idx = this.nextGroup(m, p);
        }
        if (p.stop || idx.length === 0) break;
        p.cursor = idx[idx.length - 1] + 1;
        const gens = idx.map((i) => m.gen[i]);
        const hashed = await this.sender.hashKept(s.tmp, m, idx, s.size);
        const fresh: { i: number; id: string; data: Buffer }[] = [];
        idx.forEach((i, k) => {
          // written again while it was hashed: left for later
          if (m.gen[i] !== gens[k] || !this.current(s, m)) return this.hasher.release(hashed[k].data);
          m.ids[i] = hashed[k].id;
          fresh.push({ i, id: hashed[k].id, data: hashed[k].data! });
        });
        // the next group is hashed while these are sent (sent even when stopped)
        await settle(this.sender.concurrency - 1);
        const pieces: BlockPiece[] = [];
        for (const b of fresh)
          if (m.onServer.has(b.id)) this.hasher.release(b.data);
          else pieces.push({ id: b.id, offset: 0, length: b.data.length, data: b.data });
        if (pieces.length === 0) continue;
        const group = this.sender.askAndSend(repo, dir, pieces, m, null);
        group.catch(() => {}); // awaited by settle
        sending.push(group);
      }
      await settle(0);
    } finally {
      // a failure leaves the other groups to finish before the upload after close starts
      await Promise.allSettled(sending);
    }
  }
}
