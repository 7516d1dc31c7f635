export { AlgosError } from './errors.js';
export type { AlgosErrorCode } from './errors.js';
