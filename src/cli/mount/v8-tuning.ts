// Memory settings of the mount process. V8's are set at run time
// (v8.setFlagsFromString) before anything else is loaded (main.ts imports this module, then the rest), and it
// acts only for `seafs mount`. No re-exec is needed, so a foreground mount,
// a --daemon one and one started by mount(8) all get them. Measured on the
// benchmark's 1 GiB read and write (peak RSS of the mount process, 2 cores):
// - --semi-space-growth-factor=1: the young generation stays at its first
//   size, 1 MiB per semi-space, instead of growing to Node's 16 MiB. Streaming
//   reads and writes allocate short-lived objects at a steady pace, so both
//   semi-spaces were soon resident in full (32 MiB); the extra scavenges cost
//   no measurable CPU. (The size itself, --max-semi-space-size, is fixed when
//   the heap is created and cannot be set here; the growth factor is read at
//   every growth, so it can.)
// - --liftoff-only: undici's HTTP parser (llhttp) is WebAssembly, and V8
//   recompiled it with TurboFan in the background about a second after the
//   mount: ~30 MiB of compiler memory for a moment, the process's peak
//   whatever it did later. Liftoff's code is ample for the few API answers
//   undici parses (downloads and uploads go through bare sockets).
// - --no-turbofan: V8's optimizing compiler otherwise compiles the functions
//   that start-up runs hot (module loading, argument parsing, the login), and
//   later the mount's own: its compile memory (6.8 MiB of malloc at its peak,
//   which malloc then keeps), its code and its threads' stacks (idle mount 70
//   -> 64 MiB). It used to be turned back on once mounted, for the hot paths;
//   since those do their work in native calls (socket, file and FUSE buffers)
//   baseline code (Sparkplug) serves them as well: kept off, interleaved runs
//   of the benchmark measured the same CPU and speed within the noise (cold
//   1 GiB read 0.955 vs 0.99 CPU-s/GiB, 4 pairs; write, untar, ls -lR, random
//   reads alike) and less memory at every peak (1 GiB write 64.2 vs 67.8 MiB,
//   read 85.9 vs 87.9, untar 85-92 vs 92-103). SEAFS_TURBOFAN=1 leaves it on
//   throughout, SEAFS_TURBOFAN=mounted turns it on once the mount is up (the
//   former default); both for measurements.
// SEAFS_SEMI_SPACE_MB=N keeps V8's growth instead (for measurements); a
// --daemon mount process then gets --max-semi-space-size=N on its node
// command line, the only place that size takes effect.
// glibc's malloc reads its settings from the environment when the process
// starts, so only a mount process this one starts (--daemon, and so mount(8)
// and fstab) gets MALLOC_ARENA_MAX=2 (unless the environment sets it): each
// thread that allocates (libuv's pool, libfuse's, V8's) otherwise gets an
// arena of its own, and their unused pages stay resident (measured, peak
// RSS: write 77 vs 79-83 MiB, read 99-102 vs 104-131).
import v8 from 'node:v8';

/** The flags above; without the young generation's when SEAFS_SEMI_SPACE_MB chooses a size, without
 * --no-turbofan when SEAFS_TURBOFAN=1. */
export function mountV8Flags(env: NodeJS.ProcessEnv = process.env): string[] {
  const flags = ['--liftoff-only'];
  if (!semiSpaceMb(env)) flags.push('--semi-space-growth-factor=1');
  if (env.SEAFS_TURBOFAN !== '1') flags.push('--no-turbofan');
  return flags;
}

/** SEAFS_SEMI_SPACE_MB as a number of MiB, or undefined when unset or not a positive number. */
export function semiSpaceMb(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const n = Number(env.SEAFS_SEMI_SPACE_MB);
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

/** The flags to set once the mount is up: the optimizing compiler on with SEAFS_TURBOFAN=mounted, else none. */
export function mountReadyV8Flags(env: NodeJS.ProcessEnv = process.env): string[] {
  return env.SEAFS_TURBOFAN === 'mounted' ? ['--turbofan'] : [];
}

/** the V8 flags this process has set, in order (`seafs status --json` shows them as v8Flags) */
const applied: string[] = [];

function setFlag(f: string): void {
  v8.setFlagsFromString(f);
  applied.push(f);
}

/** The V8 flags this process set at run time (V8 offers no way to read a flag back). */
export function appliedV8Flags(): string[] {
  return [...applied];
}

/** Sets mountReadyV8Flags (the mount calls it when its FUSE mount is up). */
export function mountIsUp(): void {
  for (const f of mountReadyV8Flags()) setFlag(f);
}

/** node command-line flags for a mount process started by this one (--daemon). */
export function mountNodeFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  const mb = semiSpaceMb(env);
  return mb ? [`--max-semi-space-size=${mb}`] : [];
}

/** The environment of a mount process started by this one, from `env` (a copy). */
export function mountProcessEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { MALLOC_ARENA_MAX: '2', ...env };
}

if (process.argv[2] === 'mount') for (const f of mountV8Flags()) setFlag(f);
