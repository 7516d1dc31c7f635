/** Machine-readable reasons an @rl2/data call can fail. Later modules extend this union. */
export type DataErrorCode = 'INVALID_ARGUMENT';

/** Base error of @rl2/data: every message names the offending value and how to fix it. */
export class DataError extends Error {
  override readonly name = 'DataError';
  constructor(
    readonly code: DataErrorCode,
    message: string,
  ) {
    super(message);
  }
}
