export { PackingError } from './errors.js';
export type { PackingErrorCode } from './errors.js';
