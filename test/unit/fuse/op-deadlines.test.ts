import { afterEach, describe, expect, it, vi } from 'vitest';
import { constants as OS } from 'node:os';
import { OpDeadlines } from '../../../src/fuse/op-deadlines.js';

type Cb = (...args: any[]) => void; // eslint-disable-line @typescript-eslint/no-explicit-any
const ETIMEDOUT = -OS.errno.ETIMEDOUT;

describe('FUSE operation deadlines', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function setup() {
    vi.useFakeTimers();
    let clock = 0;
    const logged: string[] = [];
    const d = new OpDeadlines({
      limits: { default: 5_000, read: 20_000 },
      sweepMs: 1_000,
      log: (m) => logged.push(m),
      now: () => clock,
    });
    const advance = (ms: number) => {
      clock += ms;
      vi.advanceTimersByTime(ms);
    };
    return { d, logged, advance };
  }

  it('an operation answered at once is passed through and leaves nothing waiting, no timer armed', () => {
    const { d } = setup();
    const ops = d.wrapAll({ getattr: (p: string, cb: Cb) => cb(0, { path: p }) });
    const got: unknown[][] = [];
    ops.getattr('/a', (...r: unknown[]) => got.push(r));
    expect(got).toEqual([[0, { path: '/a' }]]);
    expect(d.pending).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an operation that never answers gets ETIMEDOUT after its own limit, within a sweep, and a late answer is dropped', () => {
    const { d, logged, advance } = setup();
    const held: Record<string, Cb> = {};
    const ops = d.wrapAll({
      open: (p: string, _flags: number, cb: Cb) => (held.open = cb),
      read: (p: string, _fd: number, _buf: Buffer, _len: number, _pos: number, cb: Cb) => (held.read = cb),
    });
    const opened: unknown[][] = [];
    const read: unknown[][] = [];
    ops.open('/slow', 0, (...r: unknown[]) => opened.push(r));
    ops.read('/slow', 3, Buffer.alloc(4), 4, 0, (...r: unknown[]) => read.push(r));
    expect(d.pending).toBe(2);
    advance(4_000);
    expect(opened).toEqual([]);
    advance(2_000); // open's 5 s (the default) have passed; read's 20 s have not
    expect(opened).toEqual([[ETIMEDOUT]]);
    expect(read).toEqual([]);
    expect(logged.join('\n')).toMatch(/open \/slow: no answer in time/);
    held.open(0, 7); // the vfs answers after all: the caller was already told
    expect(opened).toEqual([[ETIMEDOUT]]);
    advance(15_000);
    expect(read).toEqual([[ETIMEDOUT]]);
    expect(d.pending).toBe(0);
    expect(vi.getTimerCount()).toBe(0); // the sweep stops once nothing waits
  });

  it('an answer before the deadline stands and is the only one', () => {
    const { d, advance } = setup();
    let later: Cb = () => {};
    const ops = d.wrapAll({ flush: (_p: string, _fd: number, cb: Cb) => (later = cb) });
    const got: unknown[][] = [];
    ops.flush('/f', 1, (...r: unknown[]) => got.push(r));
    advance(3_000);
    later(0);
    expect(d.pending).toBe(0);
    advance(10_000);
    expect(got).toEqual([[0]]);
  });

  it('init and destroy are left as they are', () => {
    const { d } = setup();
    const init = (cb: Cb) => cb(0);
    const destroy = (cb: Cb) => cb(0);
    const ops = d.wrapAll({ init, destroy });
    expect(ops.init).toBe(init);
    expect(ops.destroy).toBe(destroy);
  });
});
