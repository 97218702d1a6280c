import { defineConfig } from 'vitest/config';

// Projects, each one file at a time: the FUSE mounts (e2e: real mounts,
// timing-sensitive, several processes each) never overlap one another, the
// light files (unit, integration against `seafs serve`, rclone compat), and
// `manual` (see below). scripts/test runs `mounts` beside `light` then
// `manual`, in separate vitest processes (vitest runs projects limited to one
// worker one after the other); every file uses its own temp folders and free
// ports, so they never meet.
const shared = { testTimeout: 120_000, hookTimeout: 120_000, pool: 'forks' as const, fileParallelism: false };

export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: 'light', include: ['test/{unit,integration,compat}/**/*.test.ts'] } },
      { test: { ...shared, name: 'mounts', include: ['test/e2e/**/*.test.ts'] } },
      // the real server with its Go fileserver and with its notification server (Go builds, MariaDB): each file
      // refuses to run without its variable; scripts/test sets them and runs this project after `light`
      { test: { ...shared, name: 'manual', include: ['test/manual/**/*.test.ts'] } },
    ],
  },
});
