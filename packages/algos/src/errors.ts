/** Machine-readable reasons an @rl2/algos call can fail. Later modules extend this union. */
export type AlgosErrorCode = 'INVALID_ARGUMENT';

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
