export { TrainersError } from './errors.js';
export type { TrainersErrorCode } from './errors.js';
