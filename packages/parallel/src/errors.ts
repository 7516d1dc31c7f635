/** Machine-readable reasons an @rl2/parallel call can fail. Later modules extend this union. */
export type ParallelErrorCode = 'INVALID_ARGUMENT';

/** Base error of @rl2/parallel: every message names the offending value and how to fix it. */
export class ParallelError extends Error {
  override readonly name = 'ParallelError';
  constructor(
    readonly code: ParallelErrorCode,
    message: string,
  ) {
    super(message);
  }
}
