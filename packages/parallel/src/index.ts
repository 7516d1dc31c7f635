export { ParallelError } from './errors.js';
export type { ParallelErrorCode } from './errors.js';
