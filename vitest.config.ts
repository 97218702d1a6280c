import { defineConfig } from 'vitest/config';

// Two projects that run side by side, each one file at a time: the FUSE
// mounts (e2e: real mounts, timing-sensitive, several processes each) never
// overlap one another, while the light files (unit, integration against
// `seafs serve`, rclone compat) run beside them on the other core. On 2 cores
// this takes the suite from the sum of both parts to about the e2e part alone.
// Every file uses its own temp folders and free ports, so the two never meet.
const shared = { testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks' as const, fileParallelism: false };

export default defineConfig({
  test: {
    // two workers in all, one per project (vitest's default is one fewer than the cores: 1 here, which ran
    // the projects one after the other)
    maxWorkers: 2,
    projects: [
      { test: { ...shared, name: 'light', include: ['test/{unit,integration,compat}/**/*.test.ts'] } },
      { test: { ...shared, name: 'mounts', include: ['test/e2e/**/*.test.ts'] } },
    ],
  },
});
