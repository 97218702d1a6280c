// How the pin modules write sizes and errors into the log.

/** a size as `seafs status` writes it */
export function fmtSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export const msgOf = (e: unknown) => (e instanceof Error ? e.message : String(e));
