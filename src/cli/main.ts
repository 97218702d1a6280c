#!/usr/bin/env node
// seafs command line. The mount process's memory settings are made first
// (mount-tuning.ts), before the rest of the CLI is even loaded: reading and
// compiling its modules already grew V8's young generation. The commands are
// wired in commands.ts.
import './mount-tuning.js';

await import('./commands.js');
