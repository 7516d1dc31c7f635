/** Machine-readable reasons an @rl2/packing call can fail. */
export type PackingErrorCode =
  /** A length, count or option is malformed (negative, non-finite, not an integer, wrong size). */
  | 'INVALID_ARGUMENT'
  /** One sequence (or one chosen/rejected pair) alone is longer than the per-rank token budget. */
  | 'SEQUENCE_TOO_LONG';

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
