export { ModelsError } from './errors.js';
export type { ModelsErrorCode } from './errors.js';
// The tensor engine keeps its own curated list in engine/index.ts.
export * from './engine/index.js';
