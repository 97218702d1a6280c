// git as the e2e tests run it: a fixed author, no user or system config (the
// machine's could sign commits or rewrite line ends), five minutes at most.
import { run } from './mount.js';

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'E2E',
  GIT_AUTHOR_EMAIL: 'e2e@seafs.test',
  GIT_COMMITTER_NAME: 'E2E',
  GIT_COMMITTER_EMAIL: 'e2e@seafs.test',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** `git ARGS` in `cwd`; rejects when it fails */
export const git = (cwd: string, ...args: string[]) => run('git', args, { cwd, env: gitEnv, timeoutMs: 300_000 });
