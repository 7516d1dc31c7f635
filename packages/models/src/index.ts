export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';
