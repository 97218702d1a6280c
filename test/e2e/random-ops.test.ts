// An fsx-style random run through the mount (fsx itself is not buildable in CI: no network): seeded random
// writes, truncates (down and up), reads checked against an in-memory model, and close/reopen every few
// operations (each close is an upload here, the write-back's hardest path); at the end the file is compared
// through the mount and, after unmount, through the API.
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { remoteBytes } from '../helpers/api-check.js';
import { setupE2E } from '../helpers/e2e-fixture.js';
import { mountLibrary } from '../helpers/mount.js';
import { prng as rng } from '../helpers/tree.js';

const ctx = setupE2E(['Random']);

const OPS = Number(process.env.SEAFS_RANDOM_OPS) || 3000;
const MAX_SIZE = 1024 * 1024;

describe('random operations against a model (fsx-style)', () => {
  it(`${OPS} seeded writes, truncates, reads and close/reopens leave the file identical to the model`, async () => {
    const seed = Number(process.env.SEAFS_RANDOM_SEED) || 20261123;
    const rnd = rng(seed);
    const int = (n: number) => Math.floor(rnd() * n);
    const m = await mountLibrary(ctx.server, { library: 'Random' });
    const file = path.join(m.mnt, 'fsx.bin');
    let model = Buffer.alloc(0);
    let fh: FileHandle = await open(file, 'w+');
    const counts = { write: 0, truncate: 0, read: 0, reopen: 0 };
    for (let op = 0; op < OPS; op++) {
      const what = rnd();
      const where = `op ${op} (seed ${seed})`;
      if (what < 0.45) {
        const off = int(MAX_SIZE);
        const len = 1 + int(64 * 1024);
        const data = Buffer.alloc(len);
        for (let i = 0; i < len; i += 4096) data.fill((op + i) & 0xff, i, Math.min(len, i + 4096));
        await fh.write(data, 0, len, off);
        if (off + len > model.length) model = Buffer.concat([model, Buffer.alloc(off + len - model.length)]);
        data.copy(model, off);
        counts.write++;
      } else if (what < 0.55) {
        const size = int(MAX_SIZE);
        await fh.truncate(size);
        model =
          size <= model.length ? model.subarray(0, size) : Buffer.concat([model, Buffer.alloc(size - model.length)]);
        counts.truncate++;
      } else if (what < 0.9) {
        const off = int(model.length + 1);
        const len = int(128 * 1024);
        const got = Buffer.alloc(len);
        const { bytesRead } = await fh.read(got, 0, len, off);
        const want = model.subarray(off, off + len);
        expect(bytesRead, where).toBe(want.length);
        expect(got.subarray(0, bytesRead).equals(want), `${where}: read ${len} at ${off}`).toBe(true);
        counts.read++;
      } else {
        await fh.close();
        fh = await open(file, 'r+');
        expect((await fh.stat()).size, where).toBe(model.length);
        counts.reopen++;
      }
    }
    await fh.close();
    const back = await open(file, 'r');
    const whole = Buffer.alloc(model.length);
    await back.read(whole, 0, model.length, 0);
    await back.close();
    expect(whole.equals(model)).toBe(true);
    const un = await m.unmount();
    expect(un.code, un.out + un.err).toBe(0);
    expect((await remoteBytes(ctx.api, ctx.repos.Random, '/fsx.bin')).equals(model)).toBe(true);
    console.log(`random ops (seed ${seed}): ${JSON.stringify(counts)}, final size ${model.length}`);
  });
});
