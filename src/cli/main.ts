#!/usr/bin/env node
// seafs command line. The mount process's memory settings are made first
// (mount/v8-tuning.ts), before the rest of the CLI is even loaded: reading and
// compiling its modules already grew V8's young generation. The commands are
// wired in commands.ts.
import './mount/v8-tuning.js';

await import('./commands.js');
