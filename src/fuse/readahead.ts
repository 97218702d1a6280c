// The kernel's readahead for the mount. A FUSE mount starts at 128 KiB and libfuse 2 can only
// lower that, so a sequential read has at most one or two 128 KiB requests on their way: every
// request then wakes a libfuse thread and the JS thread on its own. With 512 KiB four are in
// flight and are answered in batches (cold 1 GiB read, local server, 10 runs each: median
// 652 -> ~790 MB/s, mount CPU about a quarter lower). Only root may set it, through sysfs.
import { readFile, writeFile } from 'node:fs/promises';

/** The mount's device number ("0:53") from /proc/self/mountinfo, or null when it is not mounted. */
export async function mountDevice(mountpoint: string): Promise<string | null> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  // mount points are written with \040-style octal escapes for space, tab, newline, backslash
  const esc = mountpoint.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  let found: string | null = null;
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f[4] === esc) found = f[2]; // the last one listed is the one on top
  }
  return found;
}

/**
 * Set the readahead of the mount at `mountpoint` to `kb` KiB. Returns the value in force afterwards,
 * or null when it could not be read; a refusal (not root) leaves the kernel's default.
 */
export async function setReadAhead(mountpoint: string, kb: number, log: (m: string) => void): Promise<number | null> {
  const dev = await mountDevice(mountpoint).catch(() => null);
  if (!dev) return null;
  const file = `/sys/class/bdi/${dev}/read_ahead_kb`;
  try {
    await writeFile(file, `${Math.round(kb)}\n`);
  } catch (e) {
    log(
      `kernel readahead left as it is (${(e as NodeJS.ErrnoException).code ?? (e as Error).message} on ${file}; setting it needs root)`,
    );
  }
  const now = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  return Number.isFinite(now) && now > 0 ? now : null;
}
