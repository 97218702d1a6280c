import { defineConfig } from 'vitest/config';

// Two projects, each one file at a time: the FUSE mounts (e2e: real mounts,
// timing-sensitive, several processes each) never overlap one another, and
// the light files (unit, integration against `seafs serve`, rclone compat).
// scripts/test runs the two side by side, in two vitest processes (vitest
// runs projects limited to one worker one after the other); every file uses
// its own temp folders and free ports, so the two never meet.
const shared = { testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks' as const, fileParallelism: false };

export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: 'light', include: ['test/{unit,integration,compat}/**/*.test.ts'] } },
      { test: { ...shared, name: 'mounts', include: ['test/e2e/**/*.test.ts'] } },
      // run by hand only (scripts/test names the two above): tests that build or start more than CI should
      { test: { ...shared, name: 'manual', include: ['test/manual/**/*.test.ts'] } },
    ],
  },
});
