export { DataError } from './errors.js';
export type { DataErrorCode } from './errors.js';
