/** Machine-readable reasons an @rl2/packing call can fail. Later modules extend this union. */
export type PackingErrorCode = 'INVALID_ARGUMENT';

/** Base error of @rl2/packing: every message names the offending value and how to fix it. */
export class PackingError extends Error {
  override readonly name = 'PackingError';
  constructor(
    readonly code: PackingErrorCode,
    message: string,
  ) {
    super(message);
  }
}
