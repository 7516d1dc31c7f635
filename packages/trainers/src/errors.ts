/** Machine-readable reasons an @rl2/trainers call can fail. Later modules extend this union. */
export type TrainersErrorCode = 'INVALID_ARGUMENT';

/** Base error of @rl2/trainers: every message names the offending value and how to fix it. */
export class TrainersError extends Error {
  override readonly name = 'TrainersError';
  constructor(
    readonly code: TrainersErrorCode,
    message: string,
  ) {
    super(message);
  }
}
