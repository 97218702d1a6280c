import type { CommandModule } from 'yargs';

// Placeholder until the server lands (issue 2).
export const serveCommand: CommandModule = {
  command: 'serve',
  describe: 'Run a local server of the web API, storing data on disk',
  handler: () => {
    throw new Error('not implemented yet');
  },
};
