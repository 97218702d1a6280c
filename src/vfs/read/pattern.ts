// The sequential/random classifier of one handle's reads, as a pure function
// of where its last reads ended, its readahead window and the new read. The
// kernel's readahead sends several reads at once and they may arrive out of
// order; a host that pages out idle page cache makes a sequential reader skip
// ahead (the kernel asks only for what it lost). Both must still count as
// sequential, or a 1 GiB read turns into one ranged GET per read and a
// whole-file fill. A handle's first short read at the start opens no window:
// a file manager reading the head of each file fetches a chunk of each.

/** the reader's settings the classifier depends on */
export interface PatternParams {
  chunk: number;
  initialWindow: number;
  maxWindow: number;
  /** skipping this much of a stream costs about what a new request costs */
  jumpAhead: number;
}

/** what a handle remembers between reads (ReadPattern's part the classifier reads) */
export interface PatternState {
  next: number;
  window: number;
  started?: boolean;
}

export interface PatternStep {
  /** the new readahead window: 0 means random (fetch only what is read) */
  window: number;
  /** where the handle's reads have got to now */
  next: number;
  /** a random read that counts toward fetching the whole file */
  random: boolean;
}

/** Classifies a read of [offset, end) of a file of `size` bytes by a handle in state `pat`. */
export function classifyRead(
  pat: PatternState,
  offset: number,
  end: number,
  size: number,
  p: PatternParams,
): PatternStep {
  // forward: past where the last read ended, by a reader already sequential, or by a short
  // step from one that was not (a handle re-reading a file from somewhere in the middle: its
  // reads are the holes of the page cache, in order; random reads seldom step forward this little:
  // under 1/64 of the file)
  const forward =
    offset > pat.next &&
    (pat.window > 0 || (pat.started === true && offset - pat.next <= Math.min(p.jumpAhead, size / 64)));
  // (with the mount's 512 KiB kernel readahead, requests arrive up to about 1 MiB out of order)
  const near =
    Math.abs(offset - pat.next) <= Math.max(p.chunk * 8, pat.window) || (forward && offset - pat.next <= p.jumpAhead);
  let window = pat.window;
  // a handle's first read at the start, shorter than a chunk: most likely a sniff of the file's type (file
  // managers read the head of every file of a folder they show). Only its chunk is fetched; a next read
  // where this one ended opens the window then.
  const sniff = pat.started !== true && offset === 0 && end < p.chunk && end < size;
  if (sniff) {
    window = 0;
  } else if (offset === pat.next || (offset === 0 && pat.window === 0) || (near && pat.window > 0)) {
    window = pat.window ? Math.min(p.maxWindow, pat.window * 2) : p.initialWindow;
  } else if (forward) {
    // a long jump ahead by a sequential reader: the kernel asks only for what its page cache
    // lost (on some VMs idle page cache is paged out within seconds). Still sequential, so no
    // whole-file fill, but the window starts small again at the new place.
    window = p.initialWindow;
  } else if (!near) {
    window = 0;
  }
  // what counts toward fetching the whole file: a jump back by a handle that has read before.
  // Not a handle's first read (many handles each reading their own part of a file), not a
  // jump forward (a sequential reader skipping what the page cache still has)
  const jumpedBack = pat.started === true && offset < pat.next;
  return {
    window,
    next: window > 0 ? Math.max(pat.next, end) : end,
    random: window === 0 && jumpedBack && !near,
  };
}
