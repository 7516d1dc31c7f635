#!/usr/bin/env node
import { interruptNotice, interruptSignal } from './interrupt.js';
import { main } from './program.js';

const argv = process.argv.slice(2);
const signal = interruptSignal(process, process.stderr, (code) => process.exit(code), interruptNotice(argv));
process.exitCode = await main(argv, { stdout: process.stdout, stderr: process.stderr, signal });
