// Polling a condition in tests: how long it took to hold, or null when it did not within the time given.
export async function pollUntil(
  ok: () => boolean | Promise<boolean>,
  ms: number,
  stepMs = 100,
): Promise<number | null> {
  const t0 = Date.now();
  for (;;) {
    if (await ok()) return Date.now() - t0;
    if (Date.now() - t0 >= ms) return null;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
