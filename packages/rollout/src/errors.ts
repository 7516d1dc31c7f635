/** Machine-readable reasons an @rl2/rollout call can fail. Later modules extend this union. */
export type RolloutErrorCode = 'INVALID_ARGUMENT';

/** Base error of @rl2/rollout: every message names the offending value and how to fix it. */
export class RolloutError extends Error {
  override readonly name = 'RolloutError';
  constructor(
    readonly code: RolloutErrorCode,
    message: string,
  ) {
    super(message);
  }
}
