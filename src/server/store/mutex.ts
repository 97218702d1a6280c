// Keyed async mutex: one queue per key (a library id), so read-head/modify/
// write-head sequences of concurrent requests never interleave.
export class KeyedMutex {
  private tails = new Map<string, Promise<void>>();

  async run<T>(keys: string | string[], fn: () => Promise<T>): Promise<T> {
    // Several keys are taken in sorted order so two cross-library moves cannot deadlock.
    const list = [...new Set(Array.isArray(keys) ? keys : [keys])].sort();
    const releases: (() => void)[] = [];
    try {
      for (const key of list) releases.push(await this.acquire(key));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
