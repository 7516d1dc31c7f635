#!/usr/bin/env node
import { readLaunchEnv } from '@rl2/parallel';
import { interruptNotice, interruptSignal } from './interrupt.js';
import { main } from './program.js';

const argv = process.argv.slice(2);
// a rank of a multi-process run may get a scheduler's SIGTERM twice (directly and from its launcher): one request
const repeatWindowMs = readLaunchEnv(process.env).worldSize > 1 ? 2000 : 0;
const signal = interruptSignal(process, process.stderr, (code) => process.exit(code), {
  notice: interruptNotice(argv),
  repeatWindowMs,
});
process.exitCode = await main(argv, { stdout: process.stdout, stderr: process.stderr, signal });
