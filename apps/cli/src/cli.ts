#!/usr/bin/env node
import { interruptSignal } from './interrupt.js';
import { main } from './program.js';

const signal = interruptSignal(process, process.stderr, (code) => process.exit(code));
process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, signal });
