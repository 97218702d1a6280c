// Whether a process still runs: the cache and the journal keep a folder per
// mount process and clear the folders of processes that are gone. EPERM means
// it runs under another user.
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
