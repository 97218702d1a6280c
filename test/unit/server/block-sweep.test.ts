// `seafs serve`'s block store (src/server/blocks.ts) and the blocks sent raw
// that no commit used: what a sweep removes, keeps, and when.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlockStore } from '../../../src/server/blocks.js';
import { ObjectStore } from '../../../src/server/objects.js';
import { sha1hex } from '../../helpers/seafile-ids.js';

let dir: string;
let store: BlockStore;
const HOUR = 3600_000;

// one store for all (its init makes 1,000 folders); each test has libraries of its own
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'seafs-sweep-'));
  const objects = new ObjectStore(dir);
  await objects.init();
  store = new BlockStore(dir, objects);
  await store.init();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** sends `data` raw to library `repo`, as upload-raw-blks-api does; returns its id */
function sendRaw(repo: string, data: Buffer): string {
  const id = sha1hex(data);
  const tmp = path.join(dir, `up-${randomBytes(4).toString('hex')}`);
  writeFileSync(tmp, data);
  store.adoptBlock(repo, tmp, id, data.length);
  return id;
}

describe('blocks sent raw', () => {
  it('count as waiting until a commit takes them; a failed commit puts them back', () => {
    const a = randomBytes(300);
    const id = sendRaw('t0a', a);
    expect(store.pendingBytes('t0a')).toBe(300);
    expect(store.usesBlock('t0a', id)).toBe(false);
    const failed = store.takeForCommit('t0a', [id, id])!;
    expect(failed.sizes).toEqual([300, 300]);
    expect(store.pendingBytes('t0a')).toBe(0); // not counted twice while the commit runs
    failed.done(false);
    expect(store.pendingBytes('t0a')).toBe(300);
    store.takeForCommit('t0a', [id])!.done(true);
    expect(store.pendingBytes('t0a')).toBe(0);
    expect(store.usesBlock('t0a', id)).toBe(true);
    // used now: sent again it does not wait, and a sweep leaves it
    sendRaw('t0a', a);
    expect(store.pendingBytes('t0a')).toBe(0);
    expect(store.sweep(0)).toBe(0);
    expect(store.heldSize('t0a', id)).toBe(300);
  });

  it('a commit that fails while another of the same block succeeds leaves the block used', () => {
    const id = sendRaw('t1a', randomBytes(100));
    const first = store.takeForCommit('t1a', [id])!;
    const second = store.takeForCommit('t1a', [id])!;
    second.done(true);
    first.done(false);
    expect(store.pendingBytes('t1a')).toBe(0);
    expect(store.sweep(0)).toBe(0);
    expect(store.heldSize('t1a', id)).toBe(100);
  });

  it('are removed once their grace period is over, not before; one another library holds stays stored', async () => {
    const lone = sendRaw('t2a', randomBytes(200));
    const shared = randomBytes(250);
    const sharedId = sendRaw('t2a', shared);
    sendRaw('t2b', shared);
    store.takeForCommit('t2b', [sharedId])!.done(true);
    expect(store.sweep(HOUR)).toBe(0);
    expect(store.missing('t2a', [lone, sharedId])).toEqual([]);
    expect(store.sweep(0)).toBe(1);
    expect(store.missing('t2a', [lone, sharedId])).toEqual([lone, sharedId]);
    expect(store.resolve(lone)).toBeNull();
    expect(existsSync(store.blockPath(lone))).toBe(false);
    expect(store.heldSize('t2b', sharedId)).toBe(250);
    expect(store.resolve(sharedId)?.size).toBe(250);
    expect(store.pendingBytes('t2a')).toBe(0);
  });

  it('keep waiting across a restart, with the time they came', async () => {
    const id = sendRaw('t3a', randomBytes(123));
    const again = new BlockStore(dir, new ObjectStore(dir));
    await again.init();
    expect(again.pendingBytes('t3a')).toBe(123);
    expect(again.sweep(HOUR)).toBe(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(again.sweep(10)).toBe(1);
    expect(again.heldSize('t3a', id)).toBeNull();
  });
});
