// A min-heap of tasks by their place in a depth-first walk (number arrays
// compared element by element): the listing prefetch runs the folders a walk
// (ls -R, find) needs next first.
export class WalkOrderQueue {
  private readonly heap: { order: number[]; task: () => Promise<void> }[] = [];

  get size(): number {
    return this.heap.length;
  }

  private static before(a: number[], b: number[]): boolean {
    for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] < b[i];
    return a.length < b.length;
  }

  push(order: number[], task: () => Promise<void>): void {
    const h = this.heap;
    h.push({ order, task });
    for (let i = h.length - 1; i > 0;) {
      const up = (i - 1) >> 1;
      if (!WalkOrderQueue.before(h[i].order, h[up].order)) break;
      [h[i], h[up]] = [h[up], h[i]];
      i = up;
    }
  }

  pop(): (() => Promise<void>) | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && WalkOrderQueue.before(h[l].order, h[m].order)) m = l;
        if (r < h.length && WalkOrderQueue.before(h[r].order, h[m].order)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top?.task;
  }
}
