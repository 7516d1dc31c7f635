export { createCli, main } from './program.js';
export { interruptSignal } from './interrupt.js';
export type { CliIo } from './cli-io.js';
