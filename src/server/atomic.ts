// Crash-safe file writes: data goes to a temp file in the same folder, is
// fsync'd, then renamed over the target, so a kill -9 leaves either the old
// or the new file, never half of one.
import { promises as fsp } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function writeFileAtomic(
  target: string,
  data: string | Buffer,
  opts: { syncDir?: boolean } = {},
): Promise<void> {
  const dir = path.dirname(target);
  const tmp = path.join(dir, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
  const fh = await fsp.open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fsp.rename(tmp, target);
  } catch (e) {
    await fsp.rm(tmp, { force: true });
    throw e;
  }
  if (opts.syncDir !== false) await fsyncDir(dir);
}
