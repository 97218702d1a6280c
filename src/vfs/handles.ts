// Open files by FUSE handle number. A handle reads a clean file from the
// server (`remote`, with its own read pattern for the reader's classifier) or
// works on local data in a temp file (`local`: written, being written, or
// read while it is dirty).
import { VfsError } from './errors.js';
import type { ReadPattern, RemoteFile } from './read/reader.js';
import type { FileState } from './write/write-back.js';

export type Handle =
  | { kind: 'remote'; repo: string; path: string; remote: RemoteFile; pattern: ReadPattern }
  | { kind: 'local'; repo: string; path: string; state: FileState; write: boolean };

/** handle numbers are 31-bit: the binding passes them as signed ints */
const MAX_FH = 0x7fffffff;

export class HandleTable {
  private readonly open = new Map<number, Handle>();
  private next = 1;

  add(h: Handle): number {
    let id = this.next;
    while (this.open.has(id)) id = id >= MAX_FH ? 1 : id + 1;
    this.next = id >= MAX_FH ? 1 : id + 1;
    this.open.set(id, h);
    return id;
  }

  /** the open handle `fh` (EBADF when there is none) */
  get(fh: number): Handle {
    const h = this.open.get(fh);
    if (!h) throw new VfsError('EBADF');
    return h;
  }

  /** the open handle `fh`, or undefined */
  peek(fh: number): Handle | undefined {
    return this.open.get(fh);
  }

  /** remove and return `fh` (undefined when it was not open) */
  take(fh: number): Handle | undefined {
    const h = this.open.get(fh);
    this.open.delete(fh);
    return h;
  }
}
