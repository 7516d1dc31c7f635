/**
 * Machine-readable reasons an @rl2/algos call can fail.
 * - INVALID_ARGUMENT: an option is out of range (negative clip, unknown mode...).
 * - SHAPE_MISMATCH: two tensors that must line up do not (the message names both shapes).
 * - UNKNOWN_NAME: a registry lookup by name failed (the message lists the valid names).
 */
export type AlgosErrorCode = 'INVALID_ARGUMENT' | 'SHAPE_MISMATCH' | 'UNKNOWN_NAME';

/** Base error of @rl2/algos: every message names the offending value and how to fix it. */
export class AlgosError extends Error {
  override readonly name = 'AlgosError';
  constructor(
    readonly code: AlgosErrorCode,
    message: string,
  ) {
    super(message);
  }
}
