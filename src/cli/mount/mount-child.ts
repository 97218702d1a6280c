// The process a `seafs mount --daemon` leaves serving the mount. Its parent
// parsed and checked the command line and hands over the result (in the
// environment, beside the token), so this process never loads yargs and the
// other commands: measured, about 5 MiB less resident memory for as long as
// the mount lives. The memory settings come first, as in main.ts. Its file
// name is what `ps` shows of a background mount (`mount-child.js mount ...`).
import './v8-tuning.js';
import { guardStdio } from '../log.js';

// a closed terminal or a broken pipe must never become an uncaught exception
guardStdio();
const { mountChild } = await import('./commands.js');
await mountChild();
