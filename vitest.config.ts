import { defineConfig } from 'vitest/config';

// Integration, compat and e2e tests start servers and real FUSE mounts: they
// get long timeouts and run files one at a time so mounts and ports do not fight.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    pool: 'forks',
  },
});
