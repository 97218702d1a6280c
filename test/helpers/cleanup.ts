// The cleanups a test registers (unmounts, temp folders, servers) run after
// it, last first, whether it passed or not.
import { afterEach } from 'vitest';

/** an array to push cleanups onto; call it in a describe block or at a file's top level */
export function cleanupAfterEach(): (() => Promise<void>)[] {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  return cleanups;
}
