export { RolloutError } from './errors.js';
export type { RolloutErrorCode } from './errors.js';
