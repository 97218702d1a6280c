import type { CommandModule } from 'yargs';

// Placeholders until the mount lands (issue 3).
const todo = () => {
  throw new Error('not implemented yet');
};
export const mountCommand: CommandModule = { command: 'mount <url> <mountpoint>', describe: 'Mount a library', handler: todo };
export const unmountCommand: CommandModule = { command: 'unmount <mountpoint>', describe: 'Unmount, after pending uploads finish', handler: todo };
export const demoCommand: CommandModule = { command: 'demo [mountpoint]', describe: 'Start a local server with a sample library and mount it', handler: todo };
